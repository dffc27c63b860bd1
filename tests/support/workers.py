"""What the suite's parallel workers share: the checkout's builds, made once per run.

``make test`` runs the suite on two workers (pytest-xdist, ``-n 2``). Each worker is its own
pytest session with its own session fixtures: its own PostgreSQL server (a fresh folder,
tests/support/postgres.py), collectors, temp folders and free ports. The checkout is not
per worker: the TypeScript SDK is compiled into sdk-js/build and sdk-js/dist and the Java
SDK into sdk-java/target, in place. :func:`build_once` makes such a build once per run,
under a lock, so two workers never write it at the same time and no worker reads it while
another rewrites it. Without workers (``-p no:xdist``) it builds once per process, as the
session fixtures did.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_BUILT: set[str] = set()  # what this process built, in a run without workers


def lock_path(name: str) -> Path:
    """Return the lock file of ``name`` for this checkout (outside it: nothing to ignore)."""
    checkout = hashlib.sha256(str(ROOT).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"ldp-tests-{checkout}-{name}.lock"


@contextmanager
def exclusive(name: str) -> Iterator[None]:
    """Hold the lock of ``name``: one process of any run on this checkout at a time."""
    with open(lock_path(name), "a") as file:
        fcntl.flock(file, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(file, fcntl.LOCK_UN)


def build_once(name: str, build: Callable[[], None]) -> None:
    """Run ``build`` unless this run has already made ``name``: once for all the workers of
    one run (pytest-xdist's run id, in every worker's environment), once per process
    without them. A build that fails is not marked made: the next asker tries again."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    stamp = lock_path(name).with_suffix(".built")
    with exclusive(name):
        if name in _BUILT or (run and stamp.exists() and stamp.read_text() == run):
            return
        build()
        _BUILT.add(name)
        if run:
            stamp.write_text(run)
