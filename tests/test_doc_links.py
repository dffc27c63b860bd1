"""The documents hold together: every page listed and existing, every relative link and
anchor resolving, the README a front door, nothing cited from outside the repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.test_docs import DOCS, LINKED_ONLY, ROOT, existing_docs

README_MAX_LINES = 250  # a front door, read in five minutes; the reference lives in docs/
FIRST_SCREEN = 40  # lines in which README.md gives both commands
CODE_FOLDERS = ["shared", "client", "aggregator", "simulations", "benchmarks", "demo"]
LINK = re.compile(r"\]\(([^)#\s]*)(?:#([^)\s]*))?\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*$")


def test_nothing_cites_a_document_outside_the_repository() -> None:
    citing = [
        str(path.relative_to(ROOT))
        for folder in [*CODE_FOLDERS, "tests", "docs"]
        for path in (ROOT / folder).rglob("*")
        if path.suffix in (".py", ".md")
        and path != Path(__file__).resolve()  # this test names what it looks for
        and "DESIGN" in path.read_text(encoding="utf-8")
    ]
    assert citing == [], "cite docs/design.md or PROTOCOL.md instead"


def anchors(path: Path) -> set[str]:
    """Return the ids GitHub gives a Markdown file's headings (fenced blocks skipped)."""
    found: set[str] = set()
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        heading = HEADING.match(line)
        if fenced or heading is None:
            continue
        # GitHub: lower case, drop what is neither a letter, digit, space, - nor _, spaces
        # become hyphens; a repeated id gets -1, -2, ...
        slug = re.sub(r"[^\w\- ]", "", heading.group(1).lower()).replace(" ", "-")
        repeat = 0
        while (f"{slug}-{repeat}" if repeat else slug) in found:
            repeat += 1
        found.add(f"{slug}-{repeat}" if repeat else slug)
    return found


def test_every_listed_document_exists() -> None:
    assert [doc for doc in [*DOCS, *LINKED_ONLY] if not (ROOT / doc).exists()] == []


def test_every_page_in_docs_and_every_readme_is_listed() -> None:
    pages = {str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")}
    readmes = {
        str(p.relative_to(ROOT))
        for p in ROOT.glob("*/README.md")
        if not p.parent.name.startswith(".")  # .pytest_cache, .venv: not ours
    }
    assert (pages | readmes | {"README.md"}) - {*DOCS, *LINKED_ONLY} == set()


def test_the_readme_is_a_front_door() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines: move some to docs/"
    first_screen = "\n".join(lines[:FIRST_SCREEN])
    assert "make demo" in first_screen and "make test" in first_screen


@pytest.mark.parametrize("doc", [*existing_docs(), *LINKED_ONLY])
def test_relative_links_resolve(doc: str) -> None:
    """Every relative link names a file or folder that exists, and a heading it has."""
    path = ROOT / doc
    broken = []
    for target, anchor in LINK.findall(path.read_text(encoding="utf-8")):
        if "://" in target or target.startswith("mailto:"):
            continue
        linked = (path.parent / target) if target else path
        if not linked.exists():
            broken.append(target)
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target}#{anchor}")
    assert broken == []


def test_the_anchor_reader_follows_github() -> None:
    page = ROOT / "PROTOCOL.md"
    assert "4-repeated-reports-device-rules" in anchors(page)
    assert "37-hh--heavy-hitters-prefix-levels-over-cms" in anchors(page)
