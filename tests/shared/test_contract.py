"""One contract for every door: paths, rejection reasons and problem codes are spelled in
ldp_telemetry.shared.contract alone, and every one raised is one the contract lists.

Read from the sources (ast), so a literal copy anywhere in the SDK, the shared layer, the
collector, the shuffler or protocol/ fails here, as does a code or reason constant that
was added to the contract but not to its tuple (the OpenAPI document enumerates those).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from ldp_telemetry.shared import contract

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ["client/ldp_telemetry", "shared/ldp_telemetry", "aggregator/ldp_telemetry", "protocol"]
CONTRACT = ROOT / "shared/ldp_telemetry/shared/contract.py"
# The values a literal elsewhere would copy: every string constant of the contract.
VALUES = {
    value: name
    for name, value in vars(contract).items()
    if name.isupper() and isinstance(value, str) and name != "REPLAYED_MESSAGE"
}
# Strings equal to a contract value that mean something else (file, string: why).
ELSEWHERE = {
    ("client/ldp_telemetry/client/client.py", "internal_error"): "the SDK's own drop reason",
    ("aggregator/ldp_telemetry/aggregator/dashboard/charts.py", "below_min_batch_size"): (
        "a table column's id"
    ),
}


def modules() -> Iterator[tuple[str, ast.Module]]:
    for folder in SOURCES:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path != CONTRACT:
                yield str(path.relative_to(ROOT)), ast.parse(path.read_text(encoding="utf-8"))


def docstrings(tree: ast.Module) -> set[int]:
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, kinds)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }


def test_no_module_spells_a_path_reason_or_problem_code() -> None:
    copies = []
    for name, tree in modules():
        skipped = docstrings(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
                continue
            text = node.value
            if id(node) in skipped or (name, text) in ELSEWHERE:
                continue
            if text in VALUES or "/v1/" in text:
                copies.append(f"{name}:{node.lineno}: {text[:50]!r} ({VALUES.get(text, 'a path')})")
    assert not copies, "use ldp_telemetry.shared.contract's constants:\n" + "\n".join(copies)


def named_codes() -> Iterator[tuple[str, int, str, str]]:
    """Yield (module, line, kind, constant) for each problem code or rejection reason a
    call names: ApiError(status, CODE, ...), problem(status, CODE, ...), Rejection(id,
    REASON, ...), DecodeError(message, REASON) or DecodeError(..., reason=REASON)."""
    positions = {"ApiError": 1, "problem": 1, "_problem": 1, "Rejection": 1, "DecodeError": 1}
    for name, tree in modules():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            called = getattr(node.func, "id", getattr(node.func, "attr", ""))
            if called not in positions:
                continue
            kind = "reason" if called in ("Rejection", "DecodeError") else "code"
            given = [*node.args[positions[called] : positions[called] + 1]]
            given += [k.value for k in node.keywords if k.arg == "reason"]
            for arg in given:
                if isinstance(arg, ast.Name) and arg.id.isupper():
                    yield name, node.lineno, kind, arg.id


def test_every_code_and_reason_raised_is_listed_by_the_contract() -> None:
    listed = {"code": contract.PROBLEM_CODES, "reason": contract.REJECTION_REASONS}
    found = list(named_codes())
    assert len(found) > 40  # the scan sees the calls (a renamed call would hide them)
    for module, line, kind, constant in found:
        value = getattr(contract, constant, None)
        assert value in listed[kind], f"{module}:{line}: {constant} is not a listed {kind}"


def test_codes_and_reasons_are_distinct_and_stable() -> None:
    for values in (contract.PROBLEM_CODES, contract.REJECTION_REASONS):
        assert len(set(values)) == len(values)
        assert all(value.isidentifier() and value.islower() for value in values)
