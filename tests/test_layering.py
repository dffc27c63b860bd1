"""The layer picture holds: client -> shared <- aggregator, no import cycles, and nothing
outside shared/ldp_telemetry/shared/mechanisms names a mechanism (it asks the registry).

Imports are read from the source with ``ast``, including those inside functions, so a
cycle hidden behind a late import is found too.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from ldp_telemetry.shared.mechanisms.registry import MECHANISMS

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("shared", "client", "aggregator")


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    """Every module of the three package roots (client/, shared/, aggregator/), by name."""
    return {
        module_name(p, ROOT / folder): p
        for folder in PACKAGES
        for p in (ROOT / folder / "ldp_telemetry").rglob("*.py")
    }


def imported(path: Path, name: str, known: set[str]) -> set[str]:
    """Return the project modules a file imports anywhere (module-level or in functions)."""
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # "from a import b" may import the module a.b or the name b of a
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                for alias in node.names
            ]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {name: imported(path, name, known) for name, path in mods.items()}


def test_no_import_cycles() -> None:
    edges = graph()
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    cycles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                cycles.append([*path[path.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for start in sorted(edges):
        if start not in state:
            visit(start, [start])
    # A package's __init__ re-exporting its modules is not a cycle of concern when the
    # module does not import its package back; report every other cycle.
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


@pytest.mark.parametrize(
    ("importer", "forbidden"),
    [
        ("shared", ("client", "aggregator", "flask", "requests", "werkzeug")),
        ("client", ("aggregator", "flask", "werkzeug")),
        ("aggregator", ("client",)),
        (
            "aggregator/ldp_telemetry/aggregator/core",
            ("flask", "werkzeug", "click", "granian", "gunicorn"),
        ),
        (
            "aggregator/ldp_telemetry/aggregator/store",
            ("flask", "werkzeug", "click", "granian", "gunicorn"),
        ),
        (
            "aggregator/ldp_telemetry/aggregator/archive",
            ("flask", "werkzeug", "click", "granian", "gunicorn"),
        ),
    ],
)
def test_layers(importer: str, forbidden: tuple[str, ...]) -> None:
    for path in (ROOT / importer).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            for name in names:
                top = name.removeprefix("ldp_telemetry.").split(".")[0]
                assert top not in forbidden, f"{path} imports {name}"


@pytest.mark.parametrize("package", ["client", "aggregator"])
def test_no_mechanism_is_named_outside_the_registry(package: str) -> None:
    """No identifier or string constant in client/ or aggregator/ is a mechanism's name."""
    names = set(MECHANISMS)
    hits = []
    for path in (ROOT / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            word = (
                node.value
                if isinstance(node, ast.Constant)
                else node.id
                if isinstance(node, ast.Name)
                else node.attr
                if isinstance(node, ast.Attribute)
                else None
            )
            if isinstance(word, str) and word in names:
                hits.append(f"{path}:{node.lineno}: {word}")
    assert not hits, (
        "mechanisms named outside shared/ldp_telemetry/shared/mechanisms:\n" + "\n".join(hits)
    )


# The collector's lower rooms (aggregator/__init__.py says which is which).
LOWER = (
    "ldp_telemetry.aggregator.core",
    "ldp_telemetry.aggregator.store",
    "ldp_telemetry.aggregator.archive",
)
UPPER = (
    "ldp_telemetry.aggregator.api",
    "ldp_telemetry.aggregator.serving",
    "ldp_telemetry.aggregator.dashboard",
    "ldp_telemetry.aggregator.cli",
)


def _within(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def test_the_core_never_imports_the_rooms_above_it() -> None:
    """core, store and batch import no module of api, serving, dashboard, cli or shuffler."""
    above = (*UPPER, "ldp_telemetry.shuffler")
    hits = [
        f"{name} imports {target}"
        for name, targets in graph().items()
        if _within(name, LOWER)
        for target in targets
        if _within(target, above)
    ]
    assert not hits, "\n".join(hits)


def test_the_lower_rooms_load_no_web_framework() -> None:
    """Importing every module of core, store and batch loads neither flask nor werkzeug."""
    lower = sorted(
        name for name in modules() if _within(name, LOWER) and not name.endswith("__main__")
    )
    assert (
        "ldp_telemetry.aggregator.core.intake" in lower
        and "ldp_telemetry.aggregator.store.sqlite.backend" in lower
    )
    code = (
        "import importlib, sys\n"
        f"for name in {lower!r}:\n"
        "    importlib.import_module(name)\n"
        "print(sorted(m for m in ('flask', 'werkzeug') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
