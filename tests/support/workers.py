"""The suite on parallel workers: which tests share one, and the builds they share.

``make test`` runs the suite on two workers (pytest-xdist, ``-n 2``). Each worker is its own
pytest session with its own session fixtures: its own PostgreSQL server (a fresh folder,
tests/support/postgres.py), collectors, temp folders and free ports.

Module-scoped fixtures are made once per worker that runs a test of the module: the modules
of :data:`ONE_WORKER_MODULES` make costly ones, so :func:`make_scheduler` hands each out
whole to one worker (before the single tests, largest first; pytest-xdist's ``loadgroup``
would do it from marks, but on pytest 9.2 it silently stops grouping: pytest-xdist issue
1386). Every other test is handed out alone, in the collection's order (tests/conftest.py).

The checkout is not per worker: the TypeScript SDK is compiled into sdk-js/build and
sdk-js/dist and the Java SDK into sdk-java/target, in place. :func:`build_once` makes such a
build once per run, under a lock, so two workers never write it at the same time and no
worker reads it while another rewrites it. Without workers (``-p no:xdist``) it builds once
per process, as the session fixtures did.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

# Modules whose module-scoped fixtures cost seconds of CPU or build into shared folders: a
# simulation's rows, both wheels and a clean venv (test_wheels: python -m build writes its
# egg-info into the checkout), 30,000 honest reports, the uploads cached across backends,
# two servers. None may hold a browser test (tests/conftest.py checks).
ONE_WORKER_MODULES = frozenset(
    {
        "tests/test_wheels.py",
        "tests/aggregator/api/test_poisoning.py",
        "tests/aggregator/breakdowns/test_compare.py",
        "tests/aggregator/store/test_group_commit_http.py",
        "tests/simulations/breakdowns/test_sim_dimensions.py",
        "tests/simulations/frequency/test_sim_choose_mechanism.py",
        "tests/simulations/frequency/test_sim_rr_seed.py",
        "tests/simulations/frequency/test_sim_rr_vs_laplace.py",
        "tests/simulations/frequency/test_sim_sketch_accuracy.py",
        "tests/simulations/poisoning/test_sim_poisoning.py",
        "tests/simulations/privacy/test_sim_posterior.py",
        "tests/simulations/privacy/test_sim_shuffle.py",
    }
)
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


# The pytest-xdist versions make_scheduler was verified on (tests/test_workers.py runs it):
# pyproject.toml's dev extra and make test-min-versions install exactly this range.
XDIST_RANGE = ((3, 8), (3, 9))  # from, up to (not included)
XDIST = "pytest-xdist>={}.{},<{}.{}".format(*XDIST_RANGE[0], *XDIST_RANGE[1])


def make_scheduler(config: Any, log: Any, modules: frozenset[str] = ONE_WORKER_MODULES) -> Any:
    """Return pytest-xdist's scope scheduler with ``modules`` as the only scopes of more than
    one test; None (pytest-xdist's choice) for a --dist other than its default.

    It overrides ``LoadScopeScheduling._split_scope``, an internal of pytest-xdist (its
    ``loadgroup``, the public way, is broken on pytest 9.2, see above): a pytest-xdist outside
    XDIST stops the run at once, saying so, rather than schedule silently otherwise.
    """
    if config.option.dist != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    check_xdist()

    class OneWorkerModules(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return module if module in modules else nodeid

    return OneWorkerModules(config, log)


def check_xdist() -> None:
    """Stop the run (pytest.UsageError) unless the installed pytest-xdist is in XDIST."""
    import pytest
    import xdist
    from xdist.scheduler import LoadScopeScheduling

    version = tuple(int(part) for part in xdist.__version__.split(".")[:2])
    if not XDIST_RANGE[0] <= version < XDIST_RANGE[1] or not callable(
        vars(LoadScopeScheduling).get("_split_scope")
    ):
        raise pytest.UsageError(
            f"tests/support/workers.py schedules with pytest-xdist's internals, verified for "
            f"{XDIST}: {xdist.__version__} is installed (pip install '{XDIST}', or verify "
            "it with tests/test_workers.py and widen XDIST, pyproject.toml and the Makefile)"
        )
