"""What the views need from storage: the :class:`Store` protocol and its value types.

The collector keeps tasks, exact integer sums per (task, time bucket, slice, sketch row) (a
slice: one combination of a task's public dimensions, 0 without them), the ids of
reports seen inside their acceptance window, and hashed tokens. Every method is atomic. Backends
(:mod:`ldp_telemetry.aggregator.store.sqlite.backend`, ...) implement it;
:mod:`ldp_telemetry.aggregator.store.backends` picks one from the database URL. This module imports
no backend.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

# The faults every method may raise (a leaf of the core: the shuffler's spool raises them too).
from ldp_telemetry.aggregator.core.faults import StoreFull, StoreUnavailable
from ldp_telemetry.shared import Envelope, TaskConfig

__all__ = [
    "ShuffledBatch",
    "ShuffledWindow",
    "SlicedSums",
    "Store",
    "StoreFull",
    "StoreUnavailable",
    "StoredTask",
    "StoredToken",
    "SumsSource",
    "SumsView",
    "TaskExists",
    "Upload",
]


class TaskExists(Exception):
    """A task with this id exists already (tasks are immutable)."""


@dataclass(frozen=True)
class StoredTask:
    """A task, the SHA-256 of its upload key (None: uploads are public), and whether the
    collector keeps the privatized reports it accepts (``archive``) besides the sums."""

    config: TaskConfig
    upload_key_hash: str | None = None
    archive: bool = False


@dataclass(frozen=True)
class Upload:
    """One upload's admitted reports (distinct ids) and when each id may be forgotten."""

    task: TaskConfig
    envelopes: Sequence[Envelope]
    expires: Sequence[int]
    # Reports refused as implausible, per time bucket (inside the acceptance window).
    refused: Mapping[int, int] = field(default_factory=dict)


@dataclass(frozen=True)
class StoredToken:
    """A stored token: its SHA-256 (the token itself is never stored), role and age."""

    token_hash: str
    role: str
    created_at: int


@dataclass(frozen=True)
class ShuffledBatch:
    """One batch a shuffler forwarded (``batch_id``: its 16 random bytes)."""

    task_id: str
    batch_id: bytes
    bucket: int
    size: int
    reports: int
    # Per slice index, the distinct uploads among the slice's reports (a task without
    # dimensions: {0: size}; {}: the shuffler did not count them, before protocol 1.1).
    slice_counts: Mapping[int, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ShuffledWindow:
    """The shuffled batches of a task over a time window: count, smallest, reports, and
    each batch's ``slice_counts`` (in bucket order), from which each slice's central
    epsilon follows (its smallest count among the batches that hold it); each batch's
    ``buckets`` and ``sizes`` in the same order, from which a device's composed central
    epsilon over the window follows (it reports in at most one batch per bucket)."""

    batches: int
    smallest: int | None
    reports: int
    slice_counts: tuple[Mapping[int, int], ...] = ()
    buckets: tuple[int, ...] = ()
    sizes: tuple[int, ...] = ()

    def slice_smallest(self) -> dict[int, int]:
        """Return, per slice index, its smallest count among the batches holding it."""
        smallest: dict[int, int] = {}
        for counts in self.slice_counts:
            for index, count in counts.items():
                smallest[index] = min(count, smallest.get(index, count))
        return dict(sorted(smallest.items()))


class SumsView(Protocol):
    """What an estimator reads: the shared accumulator, or a streamed stand-in."""

    @property
    def total(self) -> int:
        """Return the number of reports."""


class SlicedSums(Protocol):
    """Every slice's sums of a task over a window, read once (one snapshot): what a
    breakdown (its totals and each row) or a comparison's side is estimated from."""

    @property
    def counts(self) -> Mapping[int, int]:
        """Return the reports per slice index, only for slices that have some, in index
        order; their sum is the window's n."""

    def sums(self, slices: Collection[int] | None = None) -> SumsView:
        """Return the sums of the given slice indices (None: every slice, the task's
        totals): exactly the sum of those slices' reports. An index the task does not have
        raises ValueError."""


class SumsSource(Protocol):
    """Where estimators read sums from: the store, or a sums file
    (ldp_telemetry.aggregator.archive.parquet)."""

    def read_sums(
        self, task: TaskConfig, start: int | None, end: int | None
    ) -> AbstractContextManager[SumsView]:
        """Return a context yielding the task's totals over buckets starting in [start, end)."""

    def read_slices(
        self, task: TaskConfig, start: int | None, end: int | None
    ) -> AbstractContextManager[SlicedSums]:
        """Return a context yielding every slice's sums over buckets starting in [start, end)
        (a task without dimensions has one slice, 0)."""

    def slice_counts(self, task: TaskConfig, start: int | None, end: int | None) -> dict[int, int]:
        """Return the reports per slice index over buckets starting in [start, end), only
        for slices that have some."""

    def buckets(self, task: TaskConfig) -> list[int]:
        """Return the start times of the buckets holding reports of a task, in order."""

    def refusals(self, task: TaskConfig, start: int | None, end: int | None) -> int:
        """Return how many reports of buckets starting in [start, end) were implausible."""


class Store(Protocol):
    """What the views need from storage."""

    schema_change: tuple[int, int]  # (from, to) schema versions of the migrate at opening

    def initialize(self) -> None:
        """Create the schema if it is missing; safe to call from every process."""

    def migrate(self) -> tuple[int, int]:
        """Apply pending schema migrations; return the (from, to) schema versions."""

    def create_task(self, task: StoredTask) -> None:
        """Store a new task, or raise TaskExists."""

    def get_task(self, task_id: str) -> StoredTask | None:
        """Return a task, or None if there is none with this id."""

    def list_tasks(self) -> list[StoredTask]:
        """Return every task, ordered by id."""

    def add_uploads(self, uploads: Sequence[Upload]) -> list[set[bytes]]:
        """Add every upload's reports whose id was not seen before, all in one transaction.

        Group commit (ldp_telemetry.aggregator.store.group_commit) hands several uploads over at
        once. An id is counted once: seen before, or in an earlier upload of the same call, it is a
        replay. Return, per upload, its replayed ids. All or nothing: on an error no upload was
        stored.
        """

    def add_reports(
        self, task: TaskConfig, envelopes: Sequence[Envelope], expires: Sequence[int]
    ) -> set[bytes]:
        """Add one upload (``add_uploads`` of one); return its replayed ids.

        ``expires[i]`` is when report i's id may be forgotten (its window has closed).
        """

    def archived(self, task: TaskConfig) -> Iterator[tuple[int, int, bytes]]:
        """Yield (bucket, slice, packed batch) of every report an archiving task accepted, in
        order."""

    def fold_staged(self, task: TaskConfig) -> None:
        """Fold a task's staged reports into its sums now (reads need not: they add them)."""

    def collect_expired(self, now: int) -> int:
        """Forget report ids whose window closed before ``now``; return how many."""

    def read_sums(
        self, task: TaskConfig, start: int | None, end: int | None
    ) -> AbstractContextManager[SumsView]:
        """Return a context yielding the task's totals over buckets starting in [start, end)
        (every slice: the sum of its slices), ``read_slices(...).sums()``.

        The sums come from one consistent snapshot; a sketch's rows may be read only
        when the estimator asks for them, so use them inside the ``with`` block.
        """

    def read_slices(
        self, task: TaskConfig, start: int | None, end: int | None
    ) -> AbstractContextManager[SlicedSums]:
        """Return a context yielding every slice's sums over buckets starting in [start, end),
        read once from one consistent snapshot: the reports per slice, and the sums of any
        set of slices (a breakdown's totals and rows are estimated from one read, not one
        per row). Use them inside the ``with`` block, as ``read_sums``'.
        """

    def add_token(self, token_hash: str, role: str) -> None:
        """Store the hash of a new token with its role."""

    def token_role(self, token_hash: str) -> str | None:
        """Return the role of a stored token hash, or None."""

    def list_tokens(self) -> list[StoredToken]:
        """Return every stored token, oldest first."""

    def revoke_token(self, token_hash: str) -> bool:
        """Delete a stored token; return whether there was one."""

    def buckets(self, task: TaskConfig) -> list[int]:
        """Return the start times of the buckets holding reports of a task, in order."""

    def refusals(self, task: TaskConfig, start: int | None, end: int | None) -> int:
        """Return how many reports of buckets starting in [start, end) were implausible."""

    def slice_counts(self, task: TaskConfig, start: int | None, end: int | None) -> dict[int, int]:
        """Return the reports per slice index over buckets starting in [start, end): only
        the slices that have some, in index order; their sum is the range's n."""

    def sum_rows(self, task: TaskConfig) -> Iterator[tuple[int, int, int, int, np.ndarray]]:
        """Yield (bucket, slice, row, n, counters) of every stored sums row, ordered (export)."""

    def backup(self, target: str) -> None:
        """Write a consistent copy of the whole store to ``target`` while it serves."""

    def check_writable(self) -> None:
        """Raise if the store cannot commit a write right now."""

    def add_shuffled_batch(self, batch: ShuffledBatch) -> None:
        """Record a batch a shuffler forwarded; a batch id already recorded changes nothing."""

    def shuffled_window(
        self, task: TaskConfig, start: int | None, end: int | None
    ) -> ShuffledWindow:
        """Return the task's shuffled batches over buckets starting in [start, end)."""
