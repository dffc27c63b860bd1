"""Uploads: check a batch, count its new reports once, answer after the commit.

Framework-free, so both doors in run the same code: the Flask view (aggregator.ingest,
under gunicorn and in tests) and the RSGI bridge's fast path (aggregator.rsgi_bridge),
which skips Flask's per-request machinery (request context, routing, response objects:
most of a small upload's cost, measured) and awaits the commit on the event loop.
Reports are handed to the process's :class:`~aggregator.store.group_commit.GroupCommitter`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aggregator.admission import admit
from aggregator.auth import check_upload_key, parse_bearer
from aggregator.body import decode_json
from aggregator.metrics import REPORTS_ACCEPTED, REPORTS_REJECTED
from aggregator.problems import ApiError
from aggregator.quotas import Quotas, charge
from aggregator.sealing_keys import keyring_at
from aggregator.store import Store, Upload
from aggregator.store.group_commit import GroupCommitter
from aggregator.tasks import find_task
from shared import DecodeError, Rejection, decode_batch
from shared.contract import PROTOCOL_HEADER, replays, speaks, upload_answer
from shared.task import PROTOCOL_VERSION

EXTENSION = "ldp_intake"
ROUTE = "/v1/tasks/<task_id>/reports"  # the upload endpoint (metrics label, Flask route)


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
        self.keyring = keyring_at(str(config["SEAL_KEYS"]))  # opens sealed tasks' reports

    def check(
        self, task_id: str, headers: Headers, body: bytes, now: float, *, shuffled: bool = False
    ) -> Checked:
        """Validate an upload (``body``: at most MAX_BODY_BYTES + 1 bytes of it) or raise
        the ApiError that answers it. ``shuffled``: a batch from a shuffler, whose token the
        caller checked instead of the task's upload key (the shuffler strips headers)."""
        if headers.protocol is not None and not speaks(headers.protocol):
            raise ApiError(
                400,
                "unsupported_protocol",
                f"{PROTOCOL_HEADER} {headers.protocol[:20]!r} is not spoken here; this "
                f"collector speaks protocol {PROTOCOL_VERSION} (PROTOCOL.md)",
                supported=[PROTOCOL_VERSION],
            )
        stored = find_task(task_id, self.store)
        if not shuffled:
            check_upload_key(stored.upload_key_hash, parse_bearer(headers.authorization))
        batch = decode_json(headers.content_type, headers.content_encoding, body, self.max_body)
        reports = batch.get("reports") if isinstance(batch, dict) else None
        if isinstance(reports, list) and len(reports) > self.max_reports:
            raise ApiError(
                413,
                "too_many_reports",
                f"a batch holds at most {self.max_reports} reports, got {len(reports)}; split it",
                limit=self.max_reports,
            )
        charge(self.quotas, task_id, len(reports) if isinstance(reports, list) else 1)
        task = stored.config
        try:
            keys = self.keyring.private_keys() if task.sealed else None
            decoded, rejected = decode_batch(task, batch, keys)
        except DecodeError as error:
            raise ApiError(400, "invalid_batch", str(error)) from None
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

    def answer(self, checked: Checked, replayed: set[bytes]) -> dict[str, Any]:
        """Return the 200 body of a committed upload, and count it in the metrics."""
        sent = [] if checked.upload is None else checked.upload.envelopes
        # replays in the batch's order, so an answer does not depend on set ordering
        rejected = checked.rejected + replays(
            [e.report_id for e in sent if e.report_id in replayed] if replayed else []
        )
        stored = len(sent)
        accepted = stored - len(replayed)
        if accepted:
            REPORTS_ACCEPTED.labels(checked.task_id).inc(accepted)
        for reason, count in Counter(r.reason for r in rejected).items():
            REPORTS_REJECTED.labels(reason).inc(count)
        return upload_answer(accepted, rejected)

    def upload(self, task_id: str, headers: Headers, body: bytes, now: float) -> dict[str, Any]:
        """Check, commit (blocking this thread until the group commits) and answer."""
        checked = self.check(task_id, headers, body, now)
        replayed = set() if checked.upload is None else self.committer.add(checked.upload)
        return self.answer(checked, replayed)


def init_app(store: Store, quotas: Quotas | None, config: Mapping[str, Any]) -> Intake:
    """Return the app's intake, with this process's group committer."""
    committer = GroupCommitter(
        store,
        max_reports=int(config["GROUP_COMMIT_REPORTS"]),
        max_wait=float(config["GROUP_COMMIT_WAIT_MS"]) / 1000,
        collect_interval=float(config["COLLECT_INTERVAL"]),
    )
    return Intake(store, committer, quotas, config)
