"""The budget, the privacy ledger and the upload queue in one SQLite file: they survive a restart.

``<data_dir>/queue.sqlite3`` in WAL mode holds the budget, table ``ledger`` (the reports of the
periods not yet ended, per task id, looked up by HMAC key, see :mod:`ldp_telemetry.client.budget`;
``budget`` counts them per period; the table keeps its first name so that every existing data_dir
opens unchanged), the privacy ledger of :mod:`ldp_telemetry.client.privacy_ledger`
(``configurations`` per task id, ``permanent``: one row per PRR drawn, keyed by an HMAC of the
value, summed in ``lifetime``; ``spending``: ε per device period) and ``outbox`` (encoded reports
not yet delivered, oldest first). :meth:`SqliteStorage.admit` runs the budget rule
(:func:`ldp_telemetry.client.storage.admit_to`) in one ``BEGIN IMMEDIATE`` transaction, so several
threads or processes sharing a data_dir respect one budget; at ``max_queue`` reports or
``max_bytes`` bytes a new report is refused (``queue_full``), as in memory. An upload claims its
batch (:meth:`SqliteStorage.claim`), then removes or releases it: while the claim holds no other
process sends those reports; a process killed mid-upload leaves a claim that lapses after its
lease, then any process on the data_dir (or a restart) sends them. Commits are not fsynced
(``synchronous=NORMAL``): a power loss may forget the last reports, never corrupt the file.
Checkpoints (which do fsync) run in :meth:`SqliteStorage.maintain` on the uploader thread; only a
burst that grows the log past ``WAL_PAGES`` makes ``record`` checkpoint. Only privatized, encoded
reports are written.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from sqlite3 import Connection

from ldp_telemetry.client.fork_gate import GATE
from ldp_telemetry.client.privacy_ledger import Charge, Limits, Permanent
from ldp_telemetry.client.storage import Admission, Pending, Slot, admit_to, take

FILE_NAME = "queue.sqlite3"
BUSY_TIMEOUT_MS = 250  # how long a record may wait for another process's transaction
UPLOADER_BUSY_TIMEOUT_MS = 5000  # the uploader thread's connection: off the caller's thread
CLOCK_SLACK = 5.0  # seconds a claim may seem to start in the future before it is void
SCHEMA_VERSION = 1  # PRAGMA user_version once _SCHEMA (and _migrate) ran: 1 = with claims
WAL_PAGES = 2048  # ~8 MB of write-ahead log at most before record() checkpoints itself
_TABLES = """
CREATE TABLE IF NOT EXISTS ledger (
    task_id TEXT NOT NULL, period INTEGER NOT NULL, period_end INTEGER NOT NULL,
    lookup BLOB NOT NULL, report_id TEXT NOT NULL, report TEXT NOT NULL,
    PRIMARY KEY (task_id, period, lookup)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS budget (
    task_id TEXT NOT NULL, period INTEGER NOT NULL, period_end INTEGER NOT NULL,
    count INTEGER NOT NULL, PRIMARY KEY (task_id, period, period_end)) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS ledger_added AFTER INSERT ON ledger BEGIN
    INSERT INTO budget VALUES (NEW.task_id, NEW.period, NEW.period_end, 1)
    ON CONFLICT DO UPDATE SET count = count + 1; END;
CREATE TRIGGER IF NOT EXISTS ledger_removed AFTER DELETE ON ledger BEGIN
    UPDATE budget SET count = count - 1 WHERE task_id = OLD.task_id
    AND period = OLD.period AND period_end = OLD.period_end; END;
CREATE TABLE IF NOT EXISTS outbox (
    seq INTEGER PRIMARY KEY, report_id TEXT NOT NULL UNIQUE,
    task_id TEXT NOT NULL, report TEXT NOT NULL, size INTEGER NOT NULL, {claims});
CREATE TABLE IF NOT EXISTS totals (
    id INTEGER PRIMARY KEY CHECK (id = 1), count INTEGER NOT NULL, bytes INTEGER NOT NULL);
INSERT OR IGNORE INTO totals VALUES (1, 0, 0);
CREATE TRIGGER IF NOT EXISTS outbox_added AFTER INSERT ON outbox BEGIN
    UPDATE totals SET count = count + 1, bytes = bytes + NEW.size; END;
CREATE TRIGGER IF NOT EXISTS outbox_removed AFTER DELETE ON outbox BEGIN
    UPDATE totals SET count = count - 1, bytes = bytes - OLD.size; END;
CREATE TABLE IF NOT EXISTS configurations (
    task_id TEXT NOT NULL, seq INTEGER NOT NULL, configuration TEXT NOT NULL,
    epsilon_inf REAL NOT NULL, PRIMARY KEY (task_id, seq)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS permanent (
    task_id TEXT NOT NULL, configuration TEXT NOT NULL, value_key BLOB NOT NULL,
    epsilon_inf REAL NOT NULL, PRIMARY KEY (task_id, configuration, value_key)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS lifetime (
    id INTEGER PRIMARY KEY CHECK (id = 1), epsilon_inf REAL NOT NULL);
INSERT OR IGNORE INTO lifetime VALUES (1, 0.0);
CREATE TRIGGER IF NOT EXISTS permanent_added AFTER INSERT ON permanent BEGIN
    UPDATE lifetime SET epsilon_inf = epsilon_inf + NEW.epsilon_inf; END;
CREATE TABLE IF NOT EXISTS spending (period INTEGER PRIMARY KEY, epsilon REAL NOT NULL);
"""
# Before the budget was keyed by task id, ``memo`` and ``spent`` were keyed by fingerprint.
# Their rows move to ``ledger`` (period_end unknown: period + 1, so each still counts
# against any period that contains its start).
_MIGRATE = """
INSERT OR IGNORE INTO ledger
    SELECT task_id, period, period + 1, lookup, report_id, report FROM memo;
DROP TABLE memo;
DROP TABLE IF EXISTS spent;
"""
# An upload's claim on its reports (see SqliteStorage.claim); a queue made before has them added.
_CLAIMS = (
    "claimed_by TEXT",
    "claimed_at REAL NOT NULL DEFAULT 0",
    "claimed_until REAL NOT NULL DEFAULT 0",
)
# Free: never claimed, released, past its lease, or claimed "later" than now (the clock was set
# back: a lease measured on that clock would last too long).
_FREE = "(claimed_until <= :now OR claimed_at > :now + :slack)"
_SCHEMA = _TABLES.format(claims=", ".join(_CLAIMS))
_abandoned: list[sqlite3.Connection] = []  # a forked child's inherited connections


class SqliteStorage:
    """The budget, the privacy ledger and a quota-bounded queue in ``<data_dir>/queue.sqlite3``."""

    def __init__(self, data_dir: Path, *, max_queue: int, max_bytes: int) -> None:
        self.path = data_dir / FILE_NAME
        self._max_queue, self._max_bytes = max_queue, max_bytes
        self._lock = threading.Lock()
        self._db = self._connect()

    def _connect(self) -> sqlite3.Connection:
        self._pid = os.getpid()
        # Who holds a claim: this storage in this process (a forked child is someone else).
        self._claimant = secrets.token_hex(8)
        self._local = threading.local()  # the uploader thread's own: claims, removals, checkpoints
        self._extra: list[sqlite3.Connection] = []
        with GATE.inside():
            db = _open(self.path, BUSY_TIMEOUT_MS)
            db.execute("PRAGMA journal_mode=WAL")
            # The schema script writes (a row or two): a process that opens the file only runs it
            # if the file's schema is older, so it never waits for another process's writes.
            if db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                db.executescript(_SCHEMA)
                _migrate(db)
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        os.chmod(self.path, 0o600)
        return db

    def admit(
        self, slot: Slot, charge: Charge, limits: Limits, make: Callable[[], Pending]
    ) -> Admission:
        """Queue the slot's memoized report, or a new one from ``make()`` if allowed."""
        with self._transaction() as db:
            state = _DiskState(db, self._max_queue, self._max_bytes)
            return admit_to(state, slot, charge, limits, make)

    def claim(self, limit: int, max_bytes: int, lease: float) -> list[Pending]:
        """Claim the oldest free reports of one task for ``lease`` seconds, see :func:`take`.

        One ``BEGIN IMMEDIATE`` transaction picks the batch and marks it, so two processes
        never claim the same report while its claim holds; a killed process's claims lapse.
        """
        now = time.time()
        free = {"now": now, "slack": CLOCK_SLACK}
        with self._uploader_transaction() as db:
            first = db.execute(
                f"SELECT task_id FROM outbox WHERE {_FREE} ORDER BY seq LIMIT 1", free
            ).fetchone()
            if first is None:
                return []
            rows = db.execute(
                "SELECT task_id, report_id, report FROM outbox "
                f"WHERE task_id = :task_id AND {_FREE} ORDER BY seq LIMIT :limit",
                {**free, "task_id": first[0], "limit": limit},
            ).fetchall()
            batch = take((Pending(*row) for row in rows), limit, max_bytes)
            db.executemany(
                "UPDATE outbox SET claimed_by = ?, claimed_at = ?, claimed_until = ? "
                "WHERE report_id = ?",
                [(self._claimant, now, now + lease, p.report_id) for p in batch],
            )
        return batch

    def release(self, report_ids: Iterable[str]) -> None:
        """Give back this storage's claims on reports not delivered."""
        with self._uploader_transaction() as db:
            db.executemany(
                "UPDATE outbox SET claimed_until = 0 WHERE report_id = ? AND claimed_by = ?",
                [(report_id, self._claimant) for report_id in report_ids],
            )

    def remove(self, report_ids: Iterable[str]) -> None:
        """Forget delivered (or definitively refused) reports."""
        with self._uploader_transaction() as db:
            db.executemany(
                "DELETE FROM outbox WHERE report_id = ?", [(report_id,) for report_id in report_ids]
            )

    def count(self) -> int:
        """Return how many reports are queued."""
        self._check_fork()
        with GATE.inside(), self._lock:  # one statement needs no transaction
            return int(self._db.execute("SELECT count FROM totals").fetchone()[0])

    def ledger(self) -> dict[str, tuple[int, float]]:
        """Return per task id the permanent responses drawn and their ε∞ summed."""
        self._check_fork()
        with GATE.inside(), self._lock:
            rows = self._db.execute(
                "SELECT task_id, COUNT(*), SUM(epsilon_inf) FROM permanent GROUP BY task_id"
            ).fetchall()
        return {task_id: (int(count), float(spent)) for task_id, count, spent in rows}

    def clear(self) -> int:
        """Drop every queued report (the budget and privacy ledger stay); return how many."""
        with self._transaction() as db:
            return db.execute("DELETE FROM outbox").rowcount

    def maintain(self) -> None:
        """Copy the WAL into the database file, on a connection of the calling thread.

        PASSIVE: it never waits for, nor blocks, a record writing at the same time.
        """
        db = self._own_connection()
        with GATE.inside():
            db.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def after_fork(self) -> None:
        """Open a fresh connection: SQLite connections must not cross a fork.

        The fork happened with no SQLite call in flight (:mod:`ldp_telemetry.client.fork_gate`),
        so the abandoned connections hold no lock the new one could wait for.
        """
        self._lock = threading.Lock()
        _abandoned.append(self._db)  # closing it here could disturb the parent's locks
        _abandoned.extend(self._extra)
        self._db = self._connect()

    def close(self) -> None:
        """Close the connections; idempotent."""
        with GATE.inside(), self._lock:
            for db in [self._db, *self._extra]:
                db.close()

    def _transaction(self, write: bool = True) -> contextlib.AbstractContextManager[Connection]:
        self._check_fork()
        return _transaction(self._db, self._lock, write)

    def _uploader_transaction(self) -> contextlib.AbstractContextManager[Connection]:
        """A write transaction on the calling thread's own connection (the uploader's).

        It may wait longer for the file than a record does; no one else uses the connection.
        """
        return _transaction(self._own_connection(), contextlib.nullcontext(), write=True)

    def _own_connection(self) -> sqlite3.Connection:
        self._check_fork()
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            with GATE.inside():
                db = self._local.db = _open(self.path, UPLOADER_BUSY_TIMEOUT_MS)
            self._extra.append(db)
        return db

    def _check_fork(self) -> None:
        if os.getpid() != self._pid:
            self.after_fork()


class _DiskState:
    """The admission rule's view of the database (a ``DeviceState``), in one transaction."""

    def __init__(self, db: sqlite3.Connection, max_queue: int, max_bytes: int) -> None:
        self._db, self._max_queue, self._max_bytes = db, max_queue, max_bytes

    def memo(self, slot: Slot) -> Pending | None:
        row = self._db.execute(
            "SELECT report_id, report FROM ledger WHERE task_id = ? AND period = ? AND lookup = ?",
            (slot.task_id, slot.start, slot.lookup),
        ).fetchone()
        return None if row is None else Pending(slot.task_id, *row)

    def spent(self, slot: Slot) -> int:
        # One budget row per period (and length) the task reported in: a handful at most.
        return int(
            self._db.execute(
                "SELECT COALESCE(SUM(count), 0) FROM budget WHERE task_id = ? AND period < ? "
                "AND period_end > ?",
                (slot.task_id, slot.end, slot.start),
            ).fetchone()[0]
        )

    def has_room(self, size: int) -> bool:
        count, total = self._db.execute("SELECT count, bytes FROM totals").fetchone()
        return bool(count < self._max_queue and total + size <= self._max_bytes)

    def enqueue(self, pending: Pending) -> bool:
        if self._db.execute(
            "SELECT 1 FROM outbox WHERE report_id = ?", (pending.report_id,)
        ).fetchone():
            return True  # already waiting: the server would count it once anyway
        if not self.has_room(pending.size):
            return False
        self._db.execute(
            "INSERT INTO outbox (report_id, task_id, report, size) VALUES (?, ?, ?, ?)",
            (pending.report_id, pending.task_id, pending.report, pending.size),
        )
        return True

    def remember(self, slot: Slot, pending: Pending) -> None:
        # Periods that have ended no longer count against any record: forget them.
        self._db.execute(
            "DELETE FROM ledger WHERE task_id = ? AND period_end <= ?", (slot.task_id, slot.start)
        )
        self._db.execute(
            "DELETE FROM budget WHERE task_id = ? AND period_end <= ?", (slot.task_id, slot.start)
        )
        self._db.execute(
            "INSERT INTO ledger VALUES (?, ?, ?, ?, ?, ?)",
            (slot.task_id, slot.start, slot.end, slot.lookup, pending.report_id, pending.report),
        )

    def configurations(self, task_id: str) -> list[tuple[str, float]]:
        rows = self._db.execute(
            "SELECT configuration, epsilon_inf FROM configurations WHERE task_id = ? ORDER BY seq",
            (task_id,),
        )
        return [(str(configuration), float(epsilon_inf)) for configuration, epsilon_inf in rows]

    def drawn(self, task_id: str, permanent: Permanent) -> bool:
        row = self._db.execute(
            "SELECT 1 FROM permanent WHERE task_id = ? AND configuration = ? AND value_key = ?",
            (task_id, permanent.configuration, permanent.value_key),
        ).fetchone()
        return row is not None

    def lifetime_epsilon_inf(self) -> float:
        return float(self._db.execute("SELECT epsilon_inf FROM lifetime").fetchone()[0])

    def period_epsilon(self, period: int) -> float:
        row = self._db.execute("SELECT epsilon FROM spending WHERE period = ?", (period,))
        found = row.fetchone()
        return 0.0 if found is None else float(found[0])

    def adopt(self, task_id: str, permanent: Permanent) -> None:
        self._db.execute(
            "INSERT INTO configurations SELECT ?, COALESCE(MAX(seq), 0) + 1, ?, ? "
            "FROM configurations WHERE task_id = ?",
            (task_id, permanent.configuration, permanent.epsilon_inf, task_id),
        )

    def draw(self, task_id: str, permanent: Permanent) -> None:
        self._db.execute(
            "INSERT INTO permanent VALUES (?, ?, ?, ?)",
            (task_id, permanent.configuration, permanent.value_key, permanent.epsilon_inf),
        )

    def spend(self, period: int, epsilon: float) -> None:
        self._db.execute("DELETE FROM spending WHERE period < ?", (period,))
        self._db.execute(
            "INSERT INTO spending VALUES (?, ?) "
            "ON CONFLICT (period) DO UPDATE SET epsilon = epsilon + excluded.epsilon",
            (period, epsilon),
        )


def _migrate(db: sqlite3.Connection) -> None:
    """Move a budget of the fingerprint-keyed schema into ``ledger``; add claims to a queue made
    without them. Once: the check is repeated inside the transaction (another process may have
    done it)."""
    memo = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'memo'"
    if db.execute(memo).fetchone() is not None:
        _once(db, lambda: db.execute(memo).fetchone() is not None, _MIGRATE.split(";"))
    claims = "SELECT 1 FROM pragma_table_info('outbox') WHERE name = 'claimed_until'"
    if db.execute(claims).fetchone() is None:
        adds = [f"ALTER TABLE outbox ADD COLUMN {column}" for column in _CLAIMS]
        _once(db, lambda: db.execute(claims).fetchone() is None, adds)


def _once(db: sqlite3.Connection, due: Callable[[], bool], statements: Iterable[str]) -> None:
    db.execute("BEGIN IMMEDIATE")
    try:
        if due():
            for statement in statements:
                if statement.strip():
                    db.execute(statement)
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def _open(path: Path, busy_timeout_ms: int) -> sqlite3.Connection:
    """Open the queue with the settings SQLite keeps per connection, the uploader's too (it
    committed with SQLite's default ``synchronous=FULL``: an fsync under the write lock, which
    a record waiting its BUSY_TIMEOUT_MS behind it outlasted under disk pressure)."""
    db = sqlite3.connect(
        path, timeout=busy_timeout_ms / 1000, isolation_level=None, check_same_thread=False
    )
    db.execute("PRAGMA synchronous=NORMAL")
    # Checkpoints (fsyncs) run in maintain(); past WAL_PAGES a writer's, after its COMMIT, too.
    db.execute(f"PRAGMA wal_autocheckpoint={WAL_PAGES}")
    db.execute(f"PRAGMA journal_size_limit={WAL_PAGES * 4096}")
    return db


@contextlib.contextmanager
def _transaction(
    db: sqlite3.Connection, lock: contextlib.AbstractContextManager[object], write: bool
) -> Iterator[sqlite3.Connection]:
    """Enter the fork gate, hold the lock, BEGIN (IMMEDIATE for writes), COMMIT or ROLLBACK."""
    with GATE.inside(), lock:
        db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
