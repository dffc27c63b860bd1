"""Uploads: check a batch, count its new reports once, answer after the commit.

Framework-free, so both doors in run the same sequence — check, commit, answer — and send the same
bytes: the Flask view (ldp_telemetry.aggregator.api.ingest, under gunicorn and in tests) calls
:meth:`Intake.upload`, which blocks its thread on the commit; the RSGI bridge's fast path
(ldp_telemetry.aggregator.serving.rsgi_bridge), which skips Flask's per-request machinery (request
context, routing, response objects: most of a small upload's cost, measured), awaits
:meth:`Intake.upload_async` on the event loop. Reports are handed to the process's
:class:`~ldp_telemetry.aggregator.store.group_commit.GroupCommitter`; every exception on the way is
answered by :func:`ldp_telemetry.aggregator.core.problems.answer_of`.

A body over ``MAX_BODY_BYTES`` is refused first, before the task is looked up, whether
its Content-Length said so (the body is then not read at all) or it came chunked
(``body``: at most ``MAX_BODY_BYTES`` + 1 bytes of it); a gzip body expanding past the
limit is refused when it is inflated. Each is the one 413 of
:func:`~ldp_telemetry.aggregator.core.problems.too_large`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ldp_telemetry.aggregator.core.admission import admit
from ldp_telemetry.aggregator.core.auth import check_upload_key, parse_bearer
from ldp_telemetry.aggregator.core.body import decode_json
from ldp_telemetry.aggregator.core.metrics import count_accepted, count_rejected
from ldp_telemetry.aggregator.core.problems import (
    ApiError,
    Parts,
    answer_of,
    check_protocol,
    too_large,
    too_many_reports,
)
from ldp_telemetry.aggregator.core.quotas import Quotas, charge
from ldp_telemetry.aggregator.core.sealing_keys import keyring_of
from ldp_telemetry.aggregator.core.tasks import find_task
from ldp_telemetry.aggregator.store import Store, Upload
from ldp_telemetry.aggregator.store.group_commit import GroupCommitter
from ldp_telemetry.shared import DecodeError, Rejection, decode_batch
from ldp_telemetry.shared.codec import replays
from ldp_telemetry.shared.contract import (
    INVALID_BATCH,
    UPLOAD_PATH,
    UploadAnswer,
    rule,
    upload_answer,
)

ROUTE = rule(UPLOAD_PATH)  # the Flask rule, and the metrics label
JSON_HEADERS = [("Content-Type", "application/json")]


@dataclass
class Checked:
    """An upload that passed its checks: what to commit and what was refused already."""

    task_id: str
    upload: Upload | None  # None: no report left to store
    rejected: list[Rejection] = field(default_factory=list)


@dataclass
class Headers:
    """The request headers an upload reads."""

    content_type: str | None = None
    content_encoding: str | None = None
    authorization: str | None = None
    protocol: str | None = None  # LDP-Protocol (None: a client from before protocol 1.0)
    content_length: int | None = None  # as declared (None: chunked, or no body)


class Intake:
    """The upload endpoint's work, given the app's configuration and store."""

    def __init__(
        self,
        store: Store,
        committer: GroupCommitter,
        quotas: Quotas | None,
        config: Mapping[str, Any],
    ) -> None:
        self.store, self.committer, self.quotas = store, committer, quotas
        self.max_body = int(config["MAX_BODY_BYTES"])
        self.max_reports = int(config["MAX_REPORTS_PER_BATCH"])
        self.acceptance_window = int(config["ACCEPTANCE_WINDOW"])
        self.clock_skew = int(config["CLOCK_SKEW"])
        self.keyring = keyring_of(config)  # opens sealed tasks' reports

    def check(
        self, task_id: str, headers: Headers, body: bytes, now: float, *, shuffled: bool = False
    ) -> Checked:
        """Validate an upload (``body``: at most MAX_BODY_BYTES + 1 bytes of it; none when
        the declared length is over the limit) or raise the ApiError that answers it.
        ``shuffled``: a batch from a shuffler, whose token the caller checked instead of
        the task's upload key (the shuffler strips headers)."""
        declared = headers.content_length
        if len(body) > self.max_body or (declared is not None and declared > self.max_body):
            raise too_large(self.max_body)
        check_protocol(headers.protocol)
        stored = find_task(task_id, self.store)
        if not shuffled:
            check_upload_key(stored.upload_key_hash, parse_bearer(headers.authorization))
        batch = decode_json(headers.content_type, headers.content_encoding, body, self.max_body)
        reports = batch.get("reports") if isinstance(batch, dict) else None
        if isinstance(reports, list) and len(reports) > self.max_reports:
            raise too_many_reports(len(reports), self.max_reports)
        charge(self.quotas, task_id, len(reports) if isinstance(reports, list) else 1)
        task = stored.config
        try:
            keys = self.keyring.private_keys() if task.sealed else None
            decoded, rejected = decode_batch(task, batch, keys)
        except DecodeError as error:
            raise ApiError(400, INVALID_BATCH, str(error)) from None
        admitted = admit(
            task,
            decoded,
            now,
            acceptance_window=self.acceptance_window,
            clock_skew=self.clock_skew,
            refused=rejected,
        )
        upload = (
            Upload(task, admitted.envelopes, admitted.expires, admitted.refused)
            if admitted.envelopes or admitted.refused
            else None
        )
        return Checked(task_id, upload, rejected + admitted.rejected)

    def answer(self, checked: Checked, replayed: set[bytes]) -> UploadAnswer:
        """Return the 200 body of a committed upload, and count it in the metrics."""
        sent = [] if checked.upload is None else checked.upload.envelopes
        # replays in the batch's order, so an answer does not depend on set ordering
        rejected = checked.rejected + replays(
            [e.report_id for e in sent if e.report_id in replayed] if replayed else []
        )
        stored = len(sent)
        accepted = stored - len(replayed)
        if accepted:
            count_accepted(checked.task_id, accepted)
        if rejected:
            count_rejected(r.reason for r in rejected)
        return upload_answer(accepted, rejected)

    def respond(self, checked: Checked, replayed: set[bytes]) -> Parts:
        """Return the 200 answer of a committed upload as (status, headers, body)."""
        if not replayed and not checked.rejected:  # the usual answer: every report counted
            accepted = 0 if checked.upload is None else len(checked.upload.envelopes)
            if accepted:
                count_accepted(checked.task_id, accepted)
            return 200, JSON_HEADERS, _all_accepted(accepted)
        return 200, JSON_HEADERS, _encoded(self.answer(checked, replayed))

    def upload(self, task_id: str, headers: Headers, body: bytes, now: float) -> Parts:
        """Check, commit (blocking this thread until the group commits) and answer."""
        try:
            checked = self.check(task_id, headers, body, now)
            replayed = set() if checked.upload is None else self.committer.add(checked.upload)
            return self.respond(checked, replayed)
        except Exception as error:
            return answer_of(error)

    async def upload_async(self, task_id: str, headers: Headers, body: bytes, now: float) -> Parts:
        """Check, commit (awaiting the group commit on the running loop) and answer."""
        try:
            checked = self.check(task_id, headers, body, now)
            replayed = set()
            if checked.upload is not None:
                replayed = await self.committer.submit_async(checked.upload)
            return self.respond(checked, replayed)
        except Exception as error:
            return answer_of(error)


def _encoded(answer: UploadAnswer) -> bytes:
    return json.dumps(answer, separators=(",", ":")).encode() + b"\n"  # as Flask's jsonify


@functools.lru_cache(maxsize=1024)
def _all_accepted(accepted: int) -> bytes:
    """Return the answer counting every report of an upload (encoded once per size)."""
    return _encoded(upload_answer(accepted, []))


def _group_commit_wait(store: Store, setting: Any) -> float:
    """Return GROUP_COMMIT_WAIT_MS in seconds, or when unset the store's own (0 unless the
    store says otherwise: PostgreSQL's ``group_commit_wait``)."""
    if setting is None:
        return float(getattr(store, "group_commit_wait", 0.0))
    return float(setting) / 1000


def init_app(store: Store, quotas: Quotas | None, config: Mapping[str, Any]) -> Intake:
    """Return the app's intake, with this process's group committer."""
    committer = GroupCommitter(
        store,
        max_reports=int(config["GROUP_COMMIT_REPORTS"]),
        max_wait=_group_commit_wait(store, config["GROUP_COMMIT_WAIT_MS"]),
        collect_interval=float(config["COLLECT_INTERVAL"]),
    )
    return Intake(store, committer, quotas, config)
