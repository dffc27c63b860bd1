"""Which decoded reports of a batch may be counted: the time window and duplicate ids.

A report's time is the start of its bucket. It is ``report_too_early`` if that bucket starts
after the bucket holding now + clock skew, and ``report_expired`` if the bucket ended more
than the acceptance window ago. Its id is remembered until that same moment (``expires``),
after which a replay would be refused as expired anyway: an id is counted once, ever.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ldp_telemetry.shared import Envelope, Rejection, TaskConfig
from ldp_telemetry.shared.codec import b64encode, replays
from ldp_telemetry.shared.contract import IMPLAUSIBLE_REPORT, REPORT_EXPIRED, REPORT_TOO_EARLY


@dataclass
class Admission:
    """Reports to store, when each id may be forgotten, and the ones refused."""

    envelopes: list[Envelope] = field(default_factory=list)
    expires: list[int] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)
    refused: dict[int, int] = field(default_factory=dict)  # implausible reports per bucket


def admit(
    task: TaskConfig,
    envelopes: Sequence[Envelope],
    now: float,
    *,
    acceptance_window: int,
    clock_skew: int,
    refused: Sequence[Rejection] = (),
) -> Admission:
    """Split decoded reports into those to store and those refused for time or repetition.

    ``refused``: the batch's reports the decoder rejected; those rejected as implausible
    whose bucket is open are counted per bucket (an estimate's ``anomaly`` reports them).
    """
    latest = task.floor_time(now + clock_skew)
    out, ids = Admission(), set()
    for rejection in refused:
        bucket = rejection.bucket
        if (
            rejection.reason == IMPLAUSIBLE_REPORT
            and bucket is not None
            and now - task.time_precision - acceptance_window <= bucket <= latest
        ):
            out.refused[bucket] = out.refused.get(bucket, 0) + 1
    for envelope in envelopes:
        closes = envelope.time + task.time_precision + acceptance_window
        if envelope.time > latest:
            out.rejected.append(
                _reject(
                    envelope.report_id,
                    REPORT_TOO_EARLY,
                    f"time {envelope.time} is in a future bucket; check the device clock",
                )
            )
        elif closes < now:
            out.rejected.append(
                _reject(
                    envelope.report_id,
                    REPORT_EXPIRED,
                    f"time {envelope.time} is older than the "
                    f"{acceptance_window} s acceptance window",
                )
            )
        elif envelope.report_id in ids:
            out.rejected += replays([envelope.report_id])
        else:
            ids.add(envelope.report_id)
            out.envelopes.append(envelope)
            out.expires.append(closes)
    return out


def _reject(report_id: bytes, reason: str, message: str) -> Rejection:
    return Rejection(b64encode(report_id), reason, message)
