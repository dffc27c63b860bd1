"""The TypeScript SDK follows the one contract: sdk-js/src/contract.ts is exactly what
``python -m protocol.contract_ts`` generates from ldp_telemetry.shared.contract (so no
path, reason or code is missing or different on either side), and no other TypeScript
source spells a path, a reason or a code itself (comments aside)."""

from __future__ import annotations

import re
from pathlib import Path

from protocol.contract_ts import FILE, constants, text

SOURCES = Path(FILE).parent
# Comments: block comments, and line comments that do not sit inside a URL ("https://").
COMMENTS = re.compile(r"/\*.*?\*/|(?<![:\"'`])//[^\n]*", re.DOTALL)
# Strings equal to a contract value that mean something else (file, string: why).
ELSEWHERE = {("client.ts", '"internal_error"'): "the SDK's own drop reason, as the Python SDK's"}


def test_contract_ts_is_the_generated_one() -> None:
    assert FILE.read_text(encoding="utf-8") == text(), (
        "sdk-js/src/contract.ts differs from ldp_telemetry.shared.contract: "
        "run python -m protocol.contract_ts --write"
    )


def test_contract_ts_holds_every_reason_code_and_path() -> None:
    written = FILE.read_text(encoding="utf-8")
    found = constants()
    for name in ("REJECTION_REASONS", "PROBLEM_CODES"):
        for value in found[name]:
            assert f'= "{value}",' in written, value
    assert {"PROTOCOL_VERSION", "PROTOCOL_HEADER", "TASK_PATH", "UPLOAD_PATH"} <= set(found)


def test_no_typescript_source_spells_a_contract_value() -> None:
    values = [v for n, v in constants().items() if isinstance(v, str) and n != "REPLAYED_MESSAGE"]
    copies = []
    for path in sorted(SOURCES.rglob("*.ts")):
        if path == FILE:
            continue
        code = COMMENTS.sub("", path.read_text(encoding="utf-8"))
        if "/v1/" in code:
            copies.append(f"{path.name}: a /v1/ path")
        copies += [
            f"{path.name}: {quote}{value}{quote}"
            for value in values
            for quote in "\"'`"
            if f"{quote}{value}{quote}" in code
            and (path.name, f"{quote}{value}{quote}") not in ELSEWHERE
        ]
    assert not copies, "import them from contract.ts instead:\n" + "\n".join(copies)
