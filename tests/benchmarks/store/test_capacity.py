"""The capacity measurement runs end to end against a real PostgreSQL (small, no timing claims)."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from benchmarks.serving import http_ingest
from benchmarks.store.capacity import measure, print_table
from tests.support.postgres import PostgresServer


@pytest.mark.timeout(180)
def test_costs_per_report_are_measured_from_counted_reports(
    postgres: PostgresServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    database = postgres.new_database()
    tokens = (secrets.token_urlsafe(24), secrets.token_urlsafe(24))
    # This worker's server's CPU only, as python -m benchmarks.store.capacity measures it:
    # without the postmaster (0) it summed every live process on the machine, and went
    # negative when the other worker's (or anyone's) processes ended meanwhile.
    postmaster = int((postgres.folder / "data" / "postmaster.pid").read_text().split()[0])
    with http_ingest.running_server(1, database=database, tokens=tokens) as node:
        row = measure([node], database, 10, 2.0, tmp_path, postmaster)
    assert row.reports > 0 and row.reports % 10 == 0
    # every counted report put an id into seen and wrote WAL; PostgreSQL and the node worked
    assert row.postgres_cpu_us > 0 and row.nodes_cpu_us > 0
    assert row.wal_bytes > 0 and row.seen_heap_bytes + row.seen_index_bytes > 0
    print_table([row], 1, {})
    assert "| 10 |" in capsys.readouterr().out
