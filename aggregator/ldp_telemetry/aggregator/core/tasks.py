"""Tasks: build one from creation parameters, find one, and serve its public JSON.

The HTTP views are ldp_telemetry.aggregator.api.tasks; the command line calls these directly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ldp_telemetry.aggregator.core.auth import hash_token, new_token
from ldp_telemetry.aggregator.core.problems import ApiError
from ldp_telemetry.aggregator.core.sealing_keys import (
    Keyring,
    check_sealable,
    keyring_of,
    seal_fields,
)
from ldp_telemetry.aggregator.store import Store, StoredTask
from ldp_telemetry.shared import LdpError, TaskConfig
from ldp_telemetry.shared.contract import INVALID_TASK, TASKS_PATH, UNKNOWN_TASK
from ldp_telemetry.shared.mechanisms.auto import AUTO, AUTO_FIELDS
from ldp_telemetry.shared.task import TASK_FIELDS

# hash_seed is normally left out (the server draws it); giving it recreates a sketch task's
# hash family exactly, e.g. on a second collector whose sums will be merged with this one's.
CREATE_FIELDS = (
    (TASK_FIELDS - {"fingerprint"}) | {"upload_key_required", "archive"} | set(AUTO_FIELDS)
)

# What a task created as "auto" may give: auto chooses the kind and its parameters, so a
# sketch's k or m, a longitudinal layer or a kind's own fields would be overridden or
# misread; they are refused instead (name the mechanism to set them).
AUTO_GIVEN = frozenset(
    {"task_id", "mechanism", "epsilon", "domain", "hash_seed", "time_precision"}
    | {"min_batch_size", "sealed", "upload_key_required", "archive", *AUTO_FIELDS}
    | {"dimensions", "min_slice_size"}
)


def served(stored: StoredTask, keyring: Keyring) -> dict[str, Any]:
    """Return a task's public JSON: its configuration and this collector's policy for it.

    ``upload_key_required`` and ``archive`` (the collector keeps the privatized reports it
    accepts) are served so that a device knows them before its first upload; they are not
    part of the fingerprint (PROTOCOL.md §1).
    """
    return {
        **stored.config.to_dict(),
        "upload_key_required": stored.upload_key_hash is not None,
        "archive": stored.archive,
        **seal_fields(keyring, stored.config),  # a sealed task's current public key
    }


def created_body(stored: StoredTask, upload_key: str | None, keyring: Keyring) -> dict[str, Any]:
    """Return what creating a task answers: its public JSON, and the upload key once."""
    body = served(stored, keyring)
    if upload_key is not None:
        body["upload_key"] = upload_key  # shown once: only its hash is stored
    return body


def build_task(params: Any, config: Mapping[str, Any]) -> tuple[StoredTask, str | None]:
    """Return a new task from creation parameters, with its upload key if it needs one.

    ``config``: the collector's settings (ACCEPTANCE_WINDOW, MAX_BUCKETS_PER_TASK,
    MAX_ESTIMATE_CELLS and MAX_SLICES bound what a task may be).
    """
    if not isinstance(params, dict):
        raise ApiError(400, INVALID_TASK, "the body must be a JSON object of task parameters")
    unknown = set(params) - CREATE_FIELDS
    if unknown:
        raise ApiError(
            400,
            INVALID_TASK,
            f"unknown task fields {sorted(unknown)}; allowed: {sorted(CREATE_FIELDS)}",
        )
    chosen_by_auto = set(params) - AUTO_GIVEN if params.get("mechanism") == AUTO else set()
    if chosen_by_auto:
        raise ApiError(
            400,
            INVALID_TASK,
            f"auto chooses the mechanism and its parameters: {sorted(chosen_by_auto)} cannot "
            "be given with it; name the mechanism to set them (tasks plan compares them)",
        )
    params = dict(params)
    needs_key = params.pop("upload_key_required", False)
    if not isinstance(needs_key, bool):
        raise ApiError(400, INVALID_TASK, "upload_key_required must be true or false")
    archive = params.pop("archive", False)
    if not isinstance(archive, bool):
        raise ApiError(400, INVALID_TASK, "archive must be true or false")
    try:
        task = TaskConfig.create(**params)
    except (LdpError, TypeError, ValueError, OverflowError) as error:
        raise ApiError(400, INVALID_TASK, str(error)) from None
    _check_open_buckets(task, config)
    unsealable = check_sealable(keyring_of(config), task)
    if unsealable:
        raise ApiError(400, INVALID_TASK, unsealable)
    _check_table_size(task, config)
    _check_slices(task, config)
    upload_key = new_token() if needs_key else None
    key_hash = hash_token(upload_key) if upload_key else None
    return StoredTask(task, key_hash, archive), upload_key


def _check_open_buckets(task: TaskConfig, config: Mapping[str, Any]) -> None:
    """Refuse a bucket width that lets uploads open more than MAX_BUCKETS_PER_TASK buckets.

    Reports are accepted for every bucket of the acceptance window, and each bucket holds
    up to k sums rows: the width bounds what crafted reports with many distinct times can
    make a task store.
    """
    window = int(config["ACCEPTANCE_WINDOW"])
    limit = int(config["MAX_BUCKETS_PER_TASK"])
    shortest = math.ceil(window / limit)
    if task.time_precision < shortest:
        raise ApiError(
            400,
            INVALID_TASK,
            f"time_precision must be at least {shortest} s: reports are accepted for "
            f"{window} s, and a task may have at most {limit} buckets open "
            "(MAX_BUCKETS_PER_TASK)",
        )


def _check_table_size(task: TaskConfig, config: Mapping[str, Any]) -> None:
    """Refuse a task whose one bucket's table is more than an estimate may read."""
    rows, width = task.mechanism_object.sums_shape
    limit = int(config["MAX_ESTIMATE_CELLS"])
    if rows * width > limit:
        raise ApiError(
            400,
            INVALID_TASK,
            f"a table of {rows:,} × {width:,} = {rows * width:,} counters is more than one "
            f"estimate may read ({limit:,}, MAX_ESTIMATE_CELLS): choose a smaller k or m",
        )


def _check_slices(task: TaskConfig, config: Mapping[str, Any]) -> None:
    """Refuse a task whose dimensions make more slices than MAX_SLICES."""
    if task.dimensions is not None:
        try:
            task.dimensions.check_slice_count(int(config["MAX_SLICES"]))
        except LdpError as error:
            raise ApiError(400, INVALID_TASK, str(error)) from None


def find_task(task_id: str, store: Store) -> StoredTask:
    """Return a stored task, or raise the 404 problem ``unknown_task``."""
    stored = store.get_task(task_id)
    if stored is None:
        raise unknown_task(task_id)
    return stored


def unknown_task(task_id: str) -> ApiError:
    """Return the 404 problem ``unknown_task`` (the collector's, and a shuffler's)."""
    return ApiError(
        404,
        UNKNOWN_TASK,
        f"there is no task {task_id!r}; list the tasks with GET {TASKS_PATH}",
        task_id=task_id[:64],
    )
