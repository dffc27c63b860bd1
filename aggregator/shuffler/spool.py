"""The shuffler's durable spool: reports kept in SQLite until their batch is forwarded.

One row per report id: the task, the report's time (its bucket), a random number naming
the upload it came in (to count distinct uploads; never sent on), the report's JSON as the
device sent it, and the batch it was given to. A report is acknowledged only after the
transaction holding it commits (WAL, synchronous=FULL), so ``kill -9`` loses nothing
acknowledged. A batch is first written (its members and a random batch id), then sent,
then marked forwarded — only after the collector's 2xx — so a crash between any two steps
resends the same batch id with the same reports, which the collector counts once.
Forwarded reports keep only their id (to refuse a device's resend) until ``expires``.
"""

from __future__ import annotations

import secrets
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

SCHEMA = """
CREATE TABLE IF NOT EXISTS reports (
    report_id BLOB PRIMARY KEY, task_id TEXT NOT NULL, time INTEGER NOT NULL,
    upload INTEGER NOT NULL, body BLOB, batch INTEGER, expires INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS pending ON reports (task_id, time, upload) WHERE batch IS NULL;
CREATE INDEX IF NOT EXISTS by_batch ON reports (batch) WHERE batch IS NOT NULL;
CREATE TABLE IF NOT EXISTS batches (
    id INTEGER PRIMARY KEY, batch_id BLOB NOT NULL, task_id TEXT NOT NULL,
    time INTEGER NOT NULL, uploads INTEGER NOT NULL, state TEXT NOT NULL DEFAULT 'open');
"""


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


class Spool:
    """Reports waiting for their batch, in one SQLite file (a connection per thread)."""

    def __init__(self, path: str, *, capacity: int) -> None:
        self.path, self.capacity = path, capacity
        self._local = threading.local()
        self._count_lock = threading.Lock()
        with self._write() as tx:
            for statement in _statements():
                tx.execute(statement)
        self._pending = self._count_pending()

    def _connection(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")  # an acknowledged report survives power loss
            self._local.conn = conn
        return conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        conn = self._connection()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def _count_pending(self) -> int:
        (count,) = (
            self._connection()
            .execute("SELECT COUNT(*) FROM reports WHERE batch IS NULL")
            .fetchone()
        )
        return int(count)

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
        known: set[bytes] = set()
        with self._write() as tx:
            ids = [r.report_id for r in reports]
            for start in range(0, len(ids), 500):
                part = ids[start : start + 500]
                marks = ",".join("?" * len(part))
                known.update(
                    bytes(row[0])
                    for row in tx.execute(
                        f"SELECT report_id FROM reports WHERE report_id IN ({marks})", part
                    )
                )
            fresh, stored = [], []
            for r in reports:
                stored.append(r.report_id not in known)
                if stored[-1]:
                    known.add(r.report_id)
                    fresh.append((r.report_id, r.task_id, r.time, upload, r.body, r.expires))
            tx.executemany(
                "INSERT INTO reports (report_id, task_id, time, upload, body, expires) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                fresh,
            )
        with self._count_lock:
            self._pending += len(fresh)
        return stored

    def ready(self, batch_min: int) -> list[tuple[str, int]]:
        """Return the (task, time) groups whose waiting reports span ≥ batch_min uploads."""
        rows = self._connection().execute(
            "SELECT task_id, time FROM reports WHERE batch IS NULL GROUP BY task_id, time "
            "HAVING COUNT(DISTINCT upload) >= ?",
            (batch_min,),
        )
        return [(str(task_id), int(time)) for task_id, time in rows]

    def claim(self, task_id: str, time: int, batch_max: int) -> Batch:
        """Write a batch of up to ``batch_max`` waiting reports of a group, as many
        distinct uploads as possible (one report of each upload before a second), drawn
        with the OS CSPRNG; return it."""
        chooser = secrets.SystemRandom()
        with self._write() as tx:
            rows = list(
                tx.execute(
                    "SELECT report_id, upload FROM reports "
                    "WHERE task_id = ? AND time = ? AND batch IS NULL",
                    (task_id, time),
                )
            )
            chooser.shuffle(rows)
            rank: dict[int, int] = {}
            ordered = sorted(rows, key=lambda row: _next_rank(rank, row[1]))[:batch_max]
            uploads = len({upload for _, upload in ordered})
            batch_id = secrets.token_bytes(16)
            cursor = tx.execute(
                "INSERT INTO batches (batch_id, task_id, time, uploads) VALUES (?, ?, ?, ?)",
                (batch_id, task_id, time, uploads),
            )
            number = int(cursor.lastrowid or 0)
            tx.executemany(
                "UPDATE reports SET batch = ? WHERE report_id = ?",
                [(number, report_id) for report_id, _ in ordered],
            )
        with self._count_lock:
            self._pending -= len(ordered)
        return Batch(number, batch_id, task_id, time, uploads)

    def open_batches(self) -> list[Batch]:
        """Return the batches written but not yet acknowledged (after a crash, say)."""
        rows = self._connection().execute(
            "SELECT id, batch_id, task_id, time, uploads FROM batches WHERE state = 'open' "
            "ORDER BY id"
        )
        return [Batch(int(i), bytes(b), str(t), int(tm), int(u)) for i, b, t, tm, u in rows]

    def bodies(self, batch: Batch) -> list[bytes]:
        """Return the JSON of a batch's reports (in storage order: the caller shuffles)."""
        rows = self._connection().execute(
            "SELECT body FROM reports WHERE batch = ? AND body IS NOT NULL", (batch.id,)
        )
        return [bytes(body) for (body,) in rows]

    def settle(self, batch: Batch, state: str) -> None:
        """Mark a batch ``forwarded`` (or ``failed``) and drop its reports' bodies."""
        with self._write() as tx:
            tx.execute("UPDATE batches SET state = ? WHERE id = ?", (state, batch.id))
            tx.execute("UPDATE reports SET body = NULL WHERE batch = ?", (batch.id,))

    def prune(self, now: int) -> int:
        """Forget forwarded ids past their expiry, and drop waiting reports that expired
        before enough others arrived to hide them (never sent with a weaker shuffle)."""
        with self._write() as tx:
            dropped = tx.execute(
                "DELETE FROM reports WHERE expires < ? AND batch IS NULL", (now,)
            ).rowcount
            tx.execute("DELETE FROM reports WHERE expires < ?", (now,))
            tx.execute(
                "DELETE FROM batches WHERE state != 'open' AND id NOT IN "
                "(SELECT DISTINCT batch FROM reports WHERE batch IS NOT NULL)"
            )
        with self._count_lock:
            self._pending -= dropped
        return int(dropped)


def _next_rank(rank: dict[int, int], upload: int) -> int:
    """Return how many reports of ``upload`` came before this one in the shuffled order."""
    seen = rank.get(upload, 0)
    rank[upload] = seen + 1
    return seen


def _statements() -> list[str]:
    return [s for s in SCHEMA.split(";") if s.strip()]
