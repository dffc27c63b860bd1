"""The benchmark script still runs end to end (tiny sizes, no baseline venv, no timing claims)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.__main__ import main


@pytest.mark.timeout(120)
def test_smoke_run_writes_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--smoke", "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    written = (tmp_path / "latest-smoke.md").read_text(encoding="utf-8")
    assert written in printed
    for label in (
        "CMS privatize, 1 value/call",
        "CMS aggregation k=2048",
        "CMS estimates, 100 candidates, k=2048",
        "HTTP ingest, durable",
        "HTTP ingest with 2 dimensions",
        "Server peak RSS",
        "CMS accuracy",
        "HCMS accuracy",
        "Uploads of 1 report(s)/request",
        "Uploads of 500 report(s)/request",
        "Slow clients",
        "OUE privatize, 1 value/call",
        "SS privatize_many",
        "OUE aggregation d=256",
        "SS aggregation d=256",
        "on one PostgreSQL (synchronous_commit on) vs one SQLite node (2 workers, FULL), 1 report",
        "on one PostgreSQL (synchronous_commit on) vs one SQLite node (2 workers, FULL), 10 report",
    ):
        assert label in written, label
    assert "not available" not in written and "stopped after" not in written
    assert list(tmp_path.glob("bench-smoke-*.json"))
