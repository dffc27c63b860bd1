"""The shuffler's durable spool: reports kept in SQLite until their batch is forwarded.

Three tables, so that no step rewrites a report: ``reports`` (each id once, with its
expiry: a device's resend is refused until then), ``bodies`` (the report's JSON as the
device sent it, until its batch is forwarded) and ``waiting`` (task, time bucket and a
random number naming the upload it came in — to count distinct uploads; never sent on).
A batch row holds its random batch id, its members and, for a task with public dimensions,
the distinct uploads per clear ``dims`` object among them. A report is acknowledged only after
the transaction holding it commits (WAL), so ``kill -9`` loses nothing acknowledged. A
batch is first written, then sent, then marked forwarded — only after the collector's
2xx — so a crash between any two steps resends the same batch id with the same reports,
which the collector counts once.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ldp_telemetry.aggregator.core.faults import classify_sqlite

SAMPLE = 2  # a batch is chosen among this many times batch_max of the oldest reports
BATCH_OPEN, BATCH_CLOSE = b'{"reports":[', b"]}"  # a forwarded batch's body around its reports
SCHEMA = """
CREATE TABLE IF NOT EXISTS reports (
    id INTEGER PRIMARY KEY, report_id BLOB NOT NULL UNIQUE, expires INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS reports_by_expiry ON reports (expires);
CREATE TABLE IF NOT EXISTS bodies (id INTEGER PRIMARY KEY, body BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS waiting (
    id INTEGER PRIMARY KEY, task_id TEXT NOT NULL, time INTEGER NOT NULL,
    upload INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS waiting_by_group ON waiting (task_id, time, upload);
CREATE INDEX IF NOT EXISTS waiting_in_order ON waiting (task_id, time);
CREATE TABLE IF NOT EXISTS batches (
    id INTEGER PRIMARY KEY, batch_id BLOB NOT NULL, task_id TEXT NOT NULL,
    time INTEGER NOT NULL, uploads INTEGER NOT NULL, members TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'open');
"""
# A spool made before slices (issue 38) gets the column: distinct uploads per clear dims.
SLICE_UPLOADS = "slice_uploads TEXT NOT NULL DEFAULT '{}'"


@dataclass(frozen=True)
class Report:
    """A report as spooled: its id, task, time, expiry and JSON bytes."""

    report_id: bytes
    task_id: str
    time: int
    expires: int
    body: bytes


@dataclass(frozen=True)
class Batch:
    """A batch written to the spool, not yet acknowledged by the collector."""

    id: int
    batch_id: bytes
    task_id: str
    time: int
    uploads: int
    # Distinct uploads per clear ``dims`` object (its compact JSON, keys sorted) among the
    # batch's reports: each slice's n for the collector's per-slice central epsilon. Empty
    # for a task without dimensions.
    slice_uploads: dict[str, int] = field(default_factory=dict)


class Spool:
    """Reports waiting for their batch, in one SQLite file (a connection per thread)."""

    def __init__(self, path: str, *, capacity: int) -> None:
        self.path, self.capacity = path, capacity
        self._local = threading.local()
        self._count_lock = threading.Lock()
        with self._write() as tx:
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    tx.execute(statement)
            columns = {row[1] for row in tx.execute("PRAGMA table_info(batches)")}
            if "slice_uploads" not in columns:
                tx.execute(f"ALTER TABLE batches ADD COLUMN {SLICE_UPLOADS}")
        (count,) = self._connection().execute("SELECT COUNT(*) FROM waiting").fetchone()
        self._pending = int(count)

    def _connection(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            # As the collector's store: in WAL mode NORMAL has every commit in the WAL file
            # before COMMIT returns, so kill -9 loses nothing acknowledged (a power cut may
            # lose the last commits; FULL would fsync each one, at ~5 ms an upload here).
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
        return conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; a full disk or an unwritable file becomes the collector's
        retryable StoreFull / StoreUnavailable (507 / 503 with Retry-After), not a 500."""
        conn = self._connection()
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:  # a failed COMMIT may have rolled back already
                    with contextlib.suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as error:
            fault = classify_sqlite(error)
            if fault is None:
                raise
            raise fault from error

    @property
    def pending(self) -> int:
        """Return how many reports wait for a batch."""
        return self._pending

    def has_room(self, reports: int) -> bool:
        """Return whether ``reports`` more fit below the spool's capacity."""
        return self._pending + reports <= self.capacity

    def add(self, reports: Sequence[Report]) -> list[bool]:
        """Store one upload's reports in one transaction; return, per report, whether it
        was stored (False: its id was spooled or forwarded before, or came earlier in
        this upload — a replay)."""
        upload = secrets.randbits(62)  # names the upload in this spool only
        with self._write() as tx:
            known = _known(tx, [r.report_id for r in reports])
            stored = []
            for r in reports:
                stored.append(r.report_id not in known)
                if stored[-1]:
                    known.add(r.report_id)
                    cursor = tx.execute(
                        "INSERT INTO reports (report_id, expires) VALUES (?, ?)",
                        (r.report_id, r.expires),
                    )
                    row = cursor.lastrowid
                    tx.execute("INSERT INTO bodies VALUES (?, ?)", (row, r.body))
                    tx.execute(
                        "INSERT INTO waiting VALUES (?, ?, ?, ?)", (row, r.task_id, r.time, upload)
                    )
        with self._count_lock:
            self._pending += sum(stored)
        return stored

    def ready(self, batch_min: int) -> list[tuple[str, int]]:
        """Return the (task, time) groups whose waiting reports span ≥ batch_min uploads."""
        rows = self._connection().execute(
            "SELECT task_id, time FROM waiting GROUP BY task_id, time "
            "HAVING COUNT(DISTINCT upload) >= ?",
            (batch_min,),
        )
        return [(str(task_id), int(time)) for task_id, time in rows]

    def claim(
        self, task_id: str, time: int, batch_min: int, batch_max: int, max_bytes: int | None = None
    ) -> Batch:
        """Write a batch of up to ``batch_max`` waiting reports of a group and return it.

        The oldest ``SAMPLE`` × batch_max waiting reports (all of them if those span fewer
        than ``batch_min`` uploads) are ranked in an order drawn from the OS CSPRNG, one
        report of each upload before a second of any: as many distinct uploads as the
        batch can hold. ``max_bytes``: the collector's body limit, which the batch's upload
        body stays within (a larger one would be refused 413, and its reports lost).
        """
        with self._write() as tx:
            rows = _waiting(tx, task_id, time, SAMPLE * batch_max, batch_min)
            ordered = _fitting(tx, _one_per_upload_first(rows)[:batch_max], max_bytes)
            uploads = len({upload for _, upload in ordered})
            members = json.dumps([row for row, _ in ordered])
            sliced = _slice_uploads(tx, ordered)
            batch_id = secrets.token_bytes(16)
            cursor = tx.execute(
                "INSERT INTO batches (batch_id, task_id, time, uploads, members, slice_uploads) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (batch_id, task_id, time, uploads, members, json.dumps(sliced)),
            )
            tx.execute(
                "DELETE FROM waiting WHERE id IN (SELECT value FROM json_each(?))", (members,)
            )
        with self._count_lock:
            self._pending -= len(ordered)
        return Batch(int(cursor.lastrowid or 0), batch_id, task_id, time, uploads, sliced)

    def open_batches(self) -> list[Batch]:
        """Return the batches written but not yet acknowledged (after a crash, say)."""
        rows = self._connection().execute(
            "SELECT id, batch_id, task_id, time, uploads, slice_uploads FROM batches "
            "WHERE state = 'open' ORDER BY id"
        )
        return [
            Batch(int(i), bytes(b), str(t), int(tm), int(u), json.loads(s))
            for i, b, t, tm, u, s in rows
        ]

    def bodies(self, batch: Batch) -> list[bytes]:
        """Return the JSON of a batch's reports (in storage order: the caller shuffles)."""
        rows = self._connection().execute(
            "SELECT body FROM bodies WHERE id IN (SELECT value FROM json_each("
            "(SELECT members FROM batches WHERE id = ?)))",
            (batch.id,),
        )
        return [bytes(body) for (body,) in rows]

    def settle(self, batch: Batch, state: str) -> None:
        """Mark a batch ``forwarded`` (or ``failed``) and drop its reports' bodies."""
        with self._write() as tx:
            tx.execute(
                "DELETE FROM bodies WHERE id IN (SELECT value FROM json_each("
                "(SELECT members FROM batches WHERE id = ?)))",
                (batch.id,),
            )
            tx.execute(
                "UPDATE batches SET state = ?, members = '[]' WHERE id = ?", (state, batch.id)
            )

    def prune(self, now: int) -> int:
        """Forget ids past their expiry, dropping waiting reports that expired before
        enough others arrived to hide them (never sent with a weaker shuffle); return
        how many waiting reports were dropped."""
        expired = "SELECT id FROM reports WHERE expires < ?"
        with self._write() as tx:
            dropped = tx.execute(f"DELETE FROM waiting WHERE id IN ({expired})", (now,)).rowcount
            tx.execute(
                f"DELETE FROM bodies WHERE id IN ({expired}) AND id NOT IN "
                "(SELECT value FROM batches, json_each(batches.members) WHERE state = 'open')",
                (now,),
            )
            tx.execute("DELETE FROM reports WHERE expires < ?", (now,))
            tx.execute("DELETE FROM batches WHERE state != 'open'")
        with self._count_lock:
            self._pending -= dropped
        return int(dropped)


def _known(tx: sqlite3.Connection, ids: list[bytes]) -> set[bytes]:
    """Return which of ``ids`` the spool holds already."""
    known: set[bytes] = set()
    for start in range(0, len(ids), 500):
        part = ids[start : start + 500]
        marks = ",".join("?" * len(part))
        query = f"SELECT report_id FROM reports WHERE report_id IN ({marks})"
        known.update(bytes(row[0]) for row in tx.execute(query, part))
    return known


def _waiting(
    tx: sqlite3.Connection, task_id: str, time: int, limit: int, uploads: int
) -> list[Any]:
    """Return (id, upload) of the oldest ``limit`` waiting reports of a group, or of all
    of them when those come from fewer than ``uploads`` uploads."""
    query = "SELECT id, upload FROM waiting WHERE task_id = ? AND time = ? ORDER BY id"
    rows = list(tx.execute(query + " LIMIT ?", (task_id, time, limit)))
    if len(rows) == limit and len({upload for _, upload in rows}) < uploads:
        rows = list(tx.execute(query, (task_id, time)))
    return rows


def _fitting(tx: sqlite3.Connection, ordered: list[Any], max_bytes: int | None) -> list[Any]:
    """Return the longest prefix (at least one report) of ``ordered`` (id, upload) rows
    whose upload body, ``{"reports":[…]}`` with its commas, is at most ``max_bytes``."""
    if max_bytes is None or not ordered:
        return ordered
    ids = json.dumps([row for row, _ in ordered])
    sizes = dict(
        tx.execute(
            "SELECT id, length(body) FROM bodies WHERE id IN (SELECT value FROM json_each(?))",
            (ids,),
        )
    )
    total, kept = len(BATCH_OPEN) + len(BATCH_CLOSE) - 1, 0  # - 1: n reports, n - 1 commas
    for row, _ in ordered:
        total += sizes[row] + 1
        if total > max_bytes and kept:
            break
        kept += 1
    return ordered[:kept]


def _slice_uploads(tx: sqlite3.Connection, ordered: list[Any]) -> dict[str, int]:
    """Return the distinct uploads per clear ``dims`` object among ``ordered`` (id, upload)
    rows (their compact JSON, keys sorted). The shuffler reads a report's ``dims`` (public,
    PROTOCOL.md §10) and nothing else of its payload; reports without them count nowhere."""
    if not ordered:
        return {}
    uploads = dict(ordered)
    found: dict[str, set[int]] = {}
    for row, body in tx.execute(
        "SELECT id, body FROM bodies WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps(list(uploads)),),
    ):
        if b'"dims"' not in body:  # a task without dimensions: no parse
            continue
        dims = json.loads(body).get("dims")
        if isinstance(dims, dict):
            key = json.dumps(dims, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            found.setdefault(key, set()).add(uploads[row])
    return {key: len(members) for key, members in sorted(found.items())}


def _one_per_upload_first(rows: list[Any]) -> list[Any]:
    """Return (id, upload) rows in a CSPRNG order in which every upload's first report
    comes before any upload's second (random 64-bit keys from os.urandom, then sorted)."""
    count = len(rows)
    if count == 0:
        return []
    uploads = np.fromiter((upload for _, upload in rows), dtype=np.int64, count=count)
    keys = np.frombuffer(secrets.token_bytes(8 * count), dtype=np.uint64)
    by_upload = np.lexsort((keys, uploads))  # each upload's reports together, in key order
    grouped = uploads[by_upload]
    first = np.r_[True, grouped[1:] != grouped[:-1]]
    starts = np.maximum.accumulate(np.where(first, np.arange(count), 0))
    rank = np.empty(count, dtype=np.int64)
    rank[by_upload] = np.arange(count) - starts  # how many of its upload's reports precede it
    return [rows[i] for i in np.lexsort((keys, rank))]
