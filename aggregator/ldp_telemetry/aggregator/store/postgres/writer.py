"""A group commit to PostgreSQL in one statement on the writer's own connection.

The general path (:meth:`ldp_telemetry.aggregator.store.base.SqlStore.add_uploads`) takes a pooled
connection (checked with a round trip), opens a transaction, claims the ids with ``INSERT ...
ON CONFLICT DO NOTHING RETURNING``, stages, records refusals and commits: five round trips
to the server per group, and a speculative insertion per id. Replays are rare, so the fast
path assumes there are none beyond the ones inside the group itself (found in memory):

- every new id goes into ``seen`` with a plain ``INSERT``, so an id stored before (or by a
  concurrent transaction that commits first) is a unique violation that rolls the whole
  statement back, and the group is then committed by the general path, which sorts the
  replays out. Nothing of the failed attempt remains, so exactly-once is the general
  path's.
- the ids, the packed staged rows (and their archived copies) and the refusals go in one
  statement of data-modifying CTEs over arrays, run on an autocommit connection: the
  statement is its own transaction (one round trip, one commit that waits for the WAL flush
  as ``synchronous_commit`` says) and psycopg prepares it once per connection.

Measured with ``python -m benchmarks.store.writer`` (see benchmarks/README.md).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import errors

from ldp_telemetry.aggregator.store.interface import Upload
from ldp_telemetry.aggregator.store.postgres import arrays
from ldp_telemetry.aggregator.store.postgres.faults import faults
from ldp_telemetry.aggregator.store.sql import first_sightings, staged_rows
from ldp_telemetry.shared.contract import IMPLAUSIBLE_REPORT

# Every array is sent in binary (%b), built by arrays.py: no hex-escaping of ids and packed
# batches, no per-element adaptation by psycopg.
INGEST = """
WITH batches AS (
    SELECT t, b, s, d, a
    FROM unnest(%b::text[], %b::int8[], %b::int4[], %b::bytea[], %b::bool[]) AS u(t, b, s, d, a)
), ids AS (
    INSERT INTO seen (task_id, report_id, expires)
    SELECT t, r, x FROM unnest(%b::text[], %b::bytea[], %b::int8[]) AS u(t, r, x)
), staging AS (
    INSERT INTO staged (task_id, bucket, slice, data) SELECT t, b, s, d FROM batches
), archiving AS (
    INSERT INTO archived (task_id, bucket, slice, data) SELECT t, b, s, d FROM batches WHERE a
)
INSERT INTO refusals (task_id, bucket, reason, count)
SELECT t, b, %b, c FROM unnest(%b::text[], %b::int8[], %b::int8[]) AS u(t, b, c)
ON CONFLICT (task_id, bucket, reason) DO UPDATE SET count = refusals.count + excluded.count
"""
IDLE_CHECK = 2.0  # s: a connection idle this long is checked before use (a restarted server)


@dataclass
class Group:
    """One group's statement parameters, its answers and the bytes it stages per task."""

    parameters: tuple[Any, ...]
    replayed: list[set[bytes]]  # per upload: ids sent earlier in the same group
    added: dict[str, int]  # staged bytes per task id


def prepare(uploads: Sequence[Upload], archives: Callable[[str], bool]) -> Group:
    """Pack a group's reports as if no id were stored yet; ``archives``: does a task archive."""
    tasks = {upload.task.task_id: upload.task for upload in uploads}
    replayed, fresh = first_sightings(uploads, {task_id: set() for task_id in tasks})
    ids = sorted(  # one order for every writer: two statements cannot deadlock on ids
        (task_id, envelope.report_id, int(expires))
        for task_id, counted in fresh.items()
        for envelope, expires in counted
    )
    batches, added = [], {}
    for task_id, counted in fresh.items():
        archive = archives(task_id)
        rows = staged_rows(tasks[task_id], [envelope for envelope, _ in counted])
        batches += [(*row, archive) for row in rows]
        added[task_id] = sum(len(row[3]) for row in rows)
    refused: dict[tuple[str, int], int] = {}
    for upload in uploads:
        for bucket, count in upload.refused.items():
            key = (upload.task.task_id, int(bucket))
            refused[key] = refused.get(key, 0) + count
    counts = sorted(refused.items())  # key order, as record_refusals: no deadlock on rows
    parameters = (
        arrays.text_array([row[0] for row in batches]),
        arrays.int8_array([row[1] for row in batches]),
        arrays.int4_array([row[2] for row in batches]),
        arrays.bytea_array([row[3] for row in batches]),
        arrays.bool_array([row[4] for row in batches]),
        arrays.text_array([task_id for task_id, _, _ in ids]),
        arrays.bytea_array([report_id for _, report_id, _ in ids]),
        arrays.int8_array([expires for _, _, expires in ids]),
        IMPLAUSIBLE_REPORT,
        arrays.text_array([t for (t, _), _ in counts]),
        arrays.int8_array([b for (_, b), _ in counts]),
        arrays.int8_array([c for _, c in counts]),
    )
    return Group(parameters, replayed, {t: n for t, n in added.items() if n})


class WriterConnection:
    """A process's own autocommit connection for group commits (no pool checkout per group).

    Used by one thread at a time: :meth:`commit` returns False at once when another thread
    holds it (the caller takes the pooled path). A connection is never used across a fork.
    """

    def __init__(self, url: str, *, connect_timeout: float, synchronous_commit: str) -> None:
        self.url, self.connect_timeout = url, connect_timeout
        self.synchronous_commit = synchronous_commit
        self._lock = threading.Lock()
        self._conn: psycopg.Connection[Any] | None = None
        self._pid = 0
        self._used = 0.0
        self._inherited: list[psycopg.Connection[Any]] = []

    def commit(self, group: Group) -> bool:
        """Run the group's statement; return False if it must take the general path.

        That is: a unique violation (an id stored before) or a deadlock, or the connection
        busy in another thread. A lost connection is a store fault (nothing is retried
        here: whether it committed is unknown) and the next group connects again.
        """
        if not self._lock.acquire(blocking=False):
            return False
        try:
            with faults():
                conn = self._connection()
                try:
                    conn.execute(INGEST, group.parameters, prepare=True)
                except (errors.UniqueViolation, errors.DeadlockDetected):
                    return False
                except psycopg.Error:
                    if conn.broken or conn.closed:
                        self._conn = None
                    raise
                finally:
                    self._used = time.monotonic()
            return True
        finally:
            self._lock.release()

    def _connection(self) -> psycopg.Connection[Any]:
        conn = self._conn
        if conn is not None and self._pid != os.getpid():
            # the parent's socket: closing it here would end the parent's session too
            self._inherited.append(conn)
            conn = self._conn = None
        if conn is not None and (conn.closed or time.monotonic() - self._used > IDLE_CHECK):
            try:
                conn.execute("")  # one round trip, only after a pause: a restart shows here
            except psycopg.Error:
                with contextlib.suppress(psycopg.Error):
                    conn.close()
                conn = self._conn = None
        if conn is None:
            conn = psycopg.connect(
                self.url, autocommit=True, connect_timeout=max(1, round(self.connect_timeout))
            )
            # SET, not a startup option: connection poolers (PgBouncer) may refuse those
            conn.execute(f"SET synchronous_commit = {self.synchronous_commit}")
            arrays.register(conn.adapters)  # the group's columns go as built (arrays.py)
            self._conn, self._pid = conn, os.getpid()
        return conn

    def close(self) -> None:
        """Close this process's connection (the next commit opens another)."""
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None and self._pid == os.getpid():
            with contextlib.suppress(psycopg.Error):
                conn.close()
