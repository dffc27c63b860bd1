"""The collector's settings: their defaults, and the one way every part reads them.

:data:`DEFAULTS`, then ``config.py`` in the instance folder, then ``LDP_<KEY>`` environment
variables (values parsed as JSON when they parse, e.g. ``LDP_MAX_REPORTS_PER_BATCH=1000``),
then a mapping given in code (``create_app(test_config)``). :func:`load` reads them as
Flask's ``Config`` would (``from_pyfile``, ``from_prefixed_env``, ``from_mapping``) without
Flask: the app (ldp_telemetry.aggregator.compose) and the command line, which opens a store
and never builds the app, read the same settings.
"""

from __future__ import annotations

import errno
import json
import os
import sys
import sysconfig
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ldp_telemetry.aggregator.core.sealing_keys import default_path
from ldp_telemetry.shared.task import DAY

ENV_PREFIX = "LDP_"
# The collector's package folder (the instance folder is found from it).
PACKAGE_FOLDER = Path(__file__).resolve().parent.parent

DEFAULTS: dict[str, object] = {
    # A SQLite file path (or sqlite:///path), or a postgresql:// URL for the shared store;
    # None means the SQLite file "ldp-aggregator.sqlite3" in the instance folder.
    "DATABASE": None,
    # WAL + NORMAL: a commit is in the OS page cache before the 200 is sent, so `kill -9`
    # loses nothing; only a power cut can lose the last commits. FULL survives that too.
    "SQLITE_SYNCHRONOUS": "NORMAL",
    # How long a writer waits for another worker's transaction before giving up (s).
    "SQLITE_BUSY_TIMEOUT": 30.0,
    # PostgreSQL store: connections per worker process (a request holds one while it
    # runs), and how long a request waits for one before 503 unavailable (s).
    "POSTGRES_POOL_SIZE": 8,
    "POSTGRES_POOL_TIMEOUT": 10.0,
    # PostgreSQL's synchronous_commit for the collector's connections: "on" (an upload is
    # answered once its commit is on PostgreSQL's disk) or "off" (once in its memory: a
    # node's kill -9 loses nothing, a PostgreSQL crash may lose the last ~0.6 s).
    "POSTGRES_SYNCHRONOUS_COMMIT": "on",
    # Bearer tokens given in the environment (tests, demos); `ldp-aggregator tokens create`
    # stores hashed tokens in the database instead. Both are accepted.
    "ADMIN_TOKEN": None,
    "ANALYST_TOKEN": None,
    # Upper bound of a request body, compressed and (for gzip) after decompression.
    "MAX_BODY_BYTES": 4 * 1024 * 1024,
    "MAX_REPORTS_PER_BATCH": 5000,
    "MAX_CANDIDATES": 100_000,
    # Largest estimate: candidates × sketch rows (hash lookups). 10,000 candidates on a
    # k = 65,536 sketch (6.6e8) took 1.5 s (CMS) / 2.7 s (HCMS) on 2 cores.
    "MAX_ESTIMATE_WORK": 10_000 * 65_536,
    # Largest table read by one estimate: k · m counters × the window's stored buckets
    # (docs/operations.md: the worst case it admits). Tasks larger than this are refused.
    "MAX_ESTIMATE_CELLS": 1 << 27,
    # Reports whose time bucket ended longer ago than this are refused (report_expired);
    # their ids are forgotten after it, so a replay can never count twice.
    "ACCEPTANCE_WINDOW": 7 * DAY,
    # Buckets a task may have open at once (ACCEPTANCE_WINDOW / time_precision): each holds
    # up to k sums rows, so tasks are refused a time_precision that allows more (1 minute
    # at the defaults).
    "MAX_BUCKETS_PER_TASK": 10_080,
    # Slices a task's dimensions may make (the product of its lists' sizes, other included;
    # PROTOCOL.md §1.1): tasks declaring more are refused. Each slice used keeps its own sums.
    "MAX_SLICES": 64,
    # Tolerated client clock lead before a report counts as report_too_early (s).
    "CLOCK_SKEW": 600,
    # Accepted reports are staged packed and folded into the sums once a task's staged
    # bytes pass this (or before an estimate): larger means fewer row rewrites.
    "STAGED_BYTES": 8 * 1024 * 1024,
    # Upload quota per task, in reports: a token bucket refilled at QUOTA_RATE per second holding up
    # to QUOTA_BURST (ldp_telemetry.aggregator.core.quotas; split among the workers). 0: off.
    "QUOTA_RATE": 100_000,
    "QUOTA_BURST": 1_000_000,
    # Group commit: each worker's writer commits the uploads waiting for it in one
    # transaction, at most this many reports, after waiting at most this long (ms) for more
    # once the first arrived. 0 ms adds no latency: uploads that arrive while a transaction
    # runs share the next one (ldp_telemetry.aggregator.store.group_commit). None: the
    # store's own, 0 on SQLite, 2 on PostgreSQL (each commit there costs a round trip and
    # a WAL flush whatever its size: fewer, larger groups save both CPUs).
    "GROUP_COMMIT_REPORTS": 10_000,
    "GROUP_COMMIT_WAIT_MS": None,
    # The HPKE private keys that open sealed tasks' reports
    # (ldp_telemetry.aggregator.core.sealing_keys, `ldp-aggregator keys`); None: beside a SQLite
    # database, named after it (x.sqlite3 → x.seal-keys.json), else "seal-keys.json" in the instance
    # folder.
    "SEAL_KEYS": None,
    # Seconds between two collections of expired report ids (per process).
    "COLLECT_INTERVAL": 60,
    # The dashboard's session cookie (/dashboard) is signed with SECRET_KEY. Unset,
    # `ldp-aggregator serve` draws one per run and hands it to all its workers (sessions
    # end when it restarts); any other app draws its own. Set LDP_SECRET_KEY (a long random
    # string) to keep sessions across restarts and share them between collector nodes.
    "SECRET_KEY": None,
    # The cookie is sent over HTTPS only; set LDP_SESSION_COOKIE_SECURE=false to log in over
    # plain HTTP (a loopback address in tests; browsers treat 127.0.0.1 as secure anyway).
    "SESSION_COOKIE_SECURE": True,
    "SESSION_COOKIE_HTTPONLY": True,
    "SESSION_COOKIE_SAMESITE": "Lax",
    "SESSION_COOKIE_PATH": "/dashboard",
    "SESSION_COOKIE_NAME": "ldp_dashboard",
    # A dashboard login lasts this long (s), however active.
    "PERMANENT_SESSION_LIFETIME": 8 * 3600,
}


def instance_folder() -> str:
    """Return the collector's instance folder (Flask's rule, ``Flask.auto_find_instance_path``).

    Installed: ``<prefix>/var/aggregator-instance``. In a checkout: ``instance/`` at the
    repository's root (aggregator/ldp_telemetry/aggregator is three folders below it).
    """
    installed = Path(sysconfig.get_paths()["purelib"]).resolve()
    if PACKAGE_FOLDER.is_relative_to(installed):
        return os.path.join(sys.prefix, "var", "aggregator-instance")
    return str(PACKAGE_FOLDER.parents[2] / "instance")


def load(instance_path: str, given: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Return the settings: defaults, instance file, environment, then ``given``.

    Only upper-case names are settings (in the file and in ``given``), as in Flask.
    """
    settings: dict[str, Any] = dict(DEFAULTS)
    settings.update(_instance_file(os.path.join(instance_path, "config.py")))
    _apply_environment(settings)
    settings.update({k: v for k, v in (given or {}).items() if k.isupper()})
    # Environment values are parsed as JSON, so a numeric-looking token arrives as an int.
    for key in ("ADMIN_TOKEN", "ANALYST_TOKEN"):
        if settings.get(key) is not None:
            settings[key] = str(settings[key])
    settings["DATABASE"] = settings["DATABASE"] or os.path.join(
        instance_path, "ldp-aggregator.sqlite3"
    )
    # the sealed tasks' key file: beside a SQLite database unless set (core.sealing_keys)
    settings["SEAL_KEYS"] = settings["SEAL_KEYS"] or default_path(
        str(settings["DATABASE"]), instance_path
    )
    return settings


def _instance_file(path: str) -> dict[str, Any]:
    """Return the upper-case names a settings file defines (none if there is no file)."""
    module = types.ModuleType("config")
    module.__file__ = path
    try:
        with open(path, mode="rb") as file:
            exec(compile(file.read(), path, "exec"), module.__dict__)
    except OSError as error:
        if error.errno in (errno.ENOENT, errno.EISDIR, errno.ENOTDIR):
            return {}
        error.strerror = f"Unable to load configuration file ({error.strerror})"
        raise
    return {key: getattr(module, key) for key in dir(module) if key.isupper()}


def _apply_environment(settings: dict[str, Any]) -> None:
    """Set the ``LDP_*`` variables, without their prefix, JSON-parsed when they parse;
    ``LDP_A__B`` sets key ``B`` of the dictionary setting ``A`` (made if missing)."""
    for name in sorted(os.environ):
        if not name.startswith(ENV_PREFIX):
            continue
        text = os.environ[name]
        try:
            value: Any = json.loads(text)
        except (ValueError, RecursionError):
            value = text  # not JSON: kept as the string it is
        *parents, key = name.removeprefix(ENV_PREFIX).split("__")
        place = settings
        for parent in parents:
            place = place.setdefault(parent, {})
        place[key] = value
