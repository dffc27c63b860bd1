"""docs/architecture.md's map, enforced: what may import what, for every module of every package.

The rules are the document's ``import rules`` block, read here; nothing else states them.
Imports are read from the source with ``ast``, including those inside functions, so a
dependency or a cycle hidden behind a late import is found too. Also checked: no import
cycles among the ``ldp_telemetry`` modules; importing every module of a rule that says
``never: flask`` loads neither Flask nor werkzeug; nothing outside
shared/ldp_telemetry/shared/mechanisms names a mechanism (it asks the registry).
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from ldp_telemetry.shared.mechanisms.registry import MECHANISMS

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
MARKER = "# import rules"
NAMESPACE_FOLDERS = ("client", "shared", "aggregator")  # each holds a part of ldp_telemetry
CHECKOUT_PACKAGES = ("protocol", "simulations", "benchmarks", "demo", "tests")
WEB = ("flask", "werkzeug")
COLLECTOR = "ldp_telemetry.aggregator"


@dataclass(frozen=True)
class Rule:
    """One rule of the block: who, what it may import besides itself, what never."""

    subject: str
    allowed: tuple[str, ...]
    never: tuple[str, ...]


@dataclass(frozen=True)
class Import:
    """One import statement's target: a module of ours (``module``) or a third party's
    top-level name (``module`` None)."""

    line: int
    name: str
    module: str | None


def parse_rules(text: str) -> dict[str, Rule]:
    """Return the rules of the block that starts with MARKER, by subject.

    ``subject: a, b`` starts a rule (``nothing``: none; ``*``: anything); an indented line
    continues its list, or gives its ``never:`` list of third-party packages.
    """
    fenced = re.findall(r"^```\w*\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
    block = next(b for b in fenced if b.startswith(MARKER))
    rules: dict[str, dict[str, list[str]]] = {}
    subject = ""
    for raw in block.splitlines():
        line = raw.split("#", 1)[0].rstrip()
        if not line:
            continue
        if not line[0].isspace():
            subject, _, rest = line.partition(":")
            assert subject not in rules, f"two rules for {subject}"
            rules[subject] = {"allowed": [], "never": []}
            key = "allowed"
        else:
            rest = line.strip()
            key = "allowed"
            if rest.startswith("never:"):
                key, rest = "never", rest.removeprefix("never:")
        names = [n.strip() for n in rest.split(",") if n.strip() and n.strip() != "nothing"]
        rules[subject][key] += names
    return {
        s: Rule(s, tuple(lists["allowed"]), tuple(lists["never"])) for s, lists in rules.items()
    }


@cache
def rules() -> dict[str, Rule]:
    return parse_rules(DOC.read_text(encoding="utf-8"))


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Path]:
    """Every Python module of the repository, by the name it is imported as."""
    found = {
        module_name(p, ROOT / folder): p
        for folder in NAMESPACE_FOLDERS
        for p in (ROOT / folder / "ldp_telemetry").rglob("*.py")
    }
    for package in CHECKOUT_PACKAGES:
        found.update({module_name(p, ROOT): p for p in (ROOT / package).rglob("*.py")})
    return found


def within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def rule_of(name: str) -> Rule | None:
    """Return the rule a module follows: the longest one naming it or a package holding it."""
    named = [rule for subject, rule in rules().items() if within(name, subject)]
    return max(named, key=lambda rule: len(rule.subject), default=None)


def imports(path: Path, name: str) -> list[Import]:
    """Return every import of a file (module-level or in functions), resolved."""
    known = modules()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
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
        for target in dict.fromkeys(targets):  # once per statement
            ours = target
            while ours and ours not in known:
                ours = ours.rpartition(".")[0]
            found.append(Import(node.lineno, target, ours or None))
    return found


def may_import(rule: Rule, target: str) -> bool:
    """Return True if a module following ``rule`` may import module ``target``: one within
    the rule's own subject (``cli`` registers ``cli.server_commands``, which has a rule of its
    own for what it imports), or within a name the rule allows."""
    if "*" in rule.allowed:
        return True
    return any(within(target, allowed) for allowed in (rule.subject, *rule.allowed))


def where(path: Path, item: Import) -> str:
    return f"{path.relative_to(ROOT)}:{item.line} imports {item.name}"


def test_the_block_names_what_exists() -> None:
    """Every rule's subject and every name it allows is a module or package of ours, and
    every package has a rule."""
    names = set(modules())
    prefixes = {".".join(n.split(".")[:i]) for n in names for i in range(1, n.count(".") + 2)}
    stale = [
        f"{rule.subject}: {name}"
        for rule in rules().values()
        for name in (rule.subject, *rule.allowed)
        if name != "*" and name not in prefixes
    ]
    assert not stale, "docs/architecture.md names what does not exist:\n" + "\n".join(stale)
    # every room of the collector has its own rule (the package's rule is for its __init__)
    rooms = {".".join(n.split(".")[:3]) for n in names if within(n, COLLECTOR) and n != COLLECTOR}
    unruled = sorted(name for name in names if rule_of(name) is None)
    unruled += sorted(room for room in rooms if room not in rules())
    assert not unruled, "modules without a rule in docs/architecture.md:\n" + "\n".join(unruled)
    assert {"ldp_telemetry.aggregator.core", "ldp_telemetry.shuffler", "tests"} <= set(rules())


@pytest.mark.parametrize("subject", sorted(rules()))
def test_every_import_follows_the_map(subject: str) -> None:
    """A module imports only what its rule allows: ours by the rule's list, third parties
    but those its ``never:`` names."""
    broken = []
    for name, path in sorted(modules().items()):
        rule = rule_of(name)
        if rule is None or rule.subject != subject:
            continue
        for item in imports(path, name):
            if item.module is not None and item.module != name:
                if not may_import(rule, item.module):
                    broken.append(f"{where(path, item)}: not in the rule of {subject}")
            elif item.module is None and item.name.split(".")[0] in rule.never:
                broken.append(f"{where(path, item)}: {subject} never imports it")
    assert not broken, "imports that break docs/architecture.md:\n" + "\n".join(broken)


def test_a_rule_is_enforced() -> None:
    """The checker refuses what the map forbids (the shuffler reaching into the store)."""
    shuffler = rules()["ldp_telemetry.shuffler"]
    assert not may_import(shuffler, "ldp_telemetry.aggregator.store.sqlite.faults")
    assert not may_import(shuffler, "ldp_telemetry.aggregator.api.errors")
    assert may_import(shuffler, "ldp_telemetry.aggregator.core.faults")
    assert rule_of("ldp_telemetry.aggregator.cli.server_commands") != rule_of(
        "ldp_telemetry.aggregator.cli.context"
    )
    parsed = parse_rules("```text\n# import rules\na: nothing\n    never: flask\nb: a,\n  c\n```\n")
    assert parsed == {"a": Rule("a", (), ("flask",)), "b": Rule("b", ("a", "c"), ())}


@pytest.mark.parametrize("room", ["serving", "cli"])
def test_the_servers_and_the_command_line_dig_nothing_out_of_an_app(room: str) -> None:
    """They are given what they need (ldp_telemetry.aggregator.compose); Flask's
    ``app.extensions`` is the API's and the dashboard's own business."""
    hits = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in (ROOT / "aggregator" / "ldp_telemetry" / "aggregator" / room).rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if (isinstance(node, ast.Attribute) and node.attr == "extensions")
        or (isinstance(node, ast.Constant) and node.value == "extensions")  # getattr(app, ...)
    ]
    assert not hits, "reads app.extensions: " + ", ".join(hits)


def test_no_import_cycles() -> None:
    edges = {
        name: {
            item.module
            for item in imports(path, name)
            if item.module is not None and item.module != name
        }
        for name, path in modules().items()
        if name.startswith("ldp_telemetry.")
    }
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    cycles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append([*path[path.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for start in sorted(edges):
        if start not in state:
            visit(start, [start])
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_what_never_imports_the_web_framework_loads_none() -> None:
    """Importing every module of each rule that says ``never: flask`` (the SDK, shared, the
    core, the store, the archive, the servers' kit, the command line) loads neither flask
    nor werkzeug: no module of theirs pulls it in through another."""
    plain = sorted(
        name
        for name in modules()
        if name.startswith("ldp_telemetry.")
        and not name.endswith("__main__")
        and set(WEB) <= set(getattr(rule_of(name), "never", ()))
    )
    assert {"ldp_telemetry.aggregator.core.intake", "ldp_telemetry.aggregator.cli"} <= set(plain)
    code = (
        "import importlib, sys\n"
        f"for name in {plain!r}:\n"
        "    importlib.import_module(name)\n"
        f"print(sorted(m for m in {WEB!r} if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


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
