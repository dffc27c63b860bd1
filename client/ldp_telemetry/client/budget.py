"""On-device privacy limits: reports per task per period, and reuse of a period's report.

Each report a task's mechanism produces is ε-locally differentially private, with ε the
task's *effective* epsilon (``TaskConfig.effective_epsilon``). The client adds two limits,
per task id and per period (the task's ``time_precision`` bucket, one day by default):

1. **At most N reports** (``reports_per_period``, default 1; None lifts the limit to
   100,000, which bounds the memo). A further record is dropped and counted as
   ``budget_exhausted``.
2. **Memoization.** Recording a value already recorded in the same period does not draw
   fresh noise: the report privatized the first time (same report id, same bits) is
   queued again, and the server counts it once. Without this, an observer could average
   many noisy copies of one value and remove the noise.

**The budget is kept per task id, whatever the task's configuration.** The collector is
not trusted: it may re-publish a task under the same id with new parameters (a new
``fingerprint``: another hash seed, epsilon, time precision...). Such a change gives no
fresh budget: a record is allowed only while fewer than N reports of that task id were
made in periods *overlapping* the current one, whichever configuration they were made
under (with an unchanged ``time_precision`` that is simply the same period; overlap
also covers a changed ``time_precision``, which would otherwise start new periods at
once). With the default N = 1, a value reported under the old configuration cannot be
reported, re-noised, under the new one until the period ends. Memoization applies only
under the configuration a report was made with: its lookup key binds the fingerprint
(an old report would be refused as ``outdated_config`` anyway), so with N > 1 a repeat
under a new configuration is a new report and spends one more of the N.

Cumulative epsilon. By sequential composition, what a device discloses about its values
in one period of one task is at most ``N · ε`` (ε the largest of the configurations it
reported under); repeats of a value cost nothing more. Over ``T`` periods it is at most
``T · N · ε`` — this SDK does not bound it across periods (each period draws fresh
noise, as in Apple's deployment), so choose ε, N and ``time_precision`` with the
lifetime of the app in mind. Example: ε = 4, N = 1, daily: 4 per day, 120 after 30
days in the worst case (a value that changes every day). Tasks compose too: a device
answering two tasks about related facts spends the ε of both.

Longitudinal tasks bound it for ever: each report re-randomizes the device's permanent response for
the value (derived from the device key by the mechanism, never stored), so all reports about one
value reveal at most the task's ``effective_epsilon_inf`` however many periods pass; a value that
changes spends ε∞ per distinct value. A re-published configuration (or the same question under a
new task id) would draw new permanent responses: the privacy ledger
(:mod:`ldp_telemetry.client.privacy_ledger`) refuses them beyond the app's caps. A new device
secret (deleting ``device.key``) draws new permanent responses: a fresh lifetime ε∞.

The memo is looked up by ``HMAC-SHA256(device secret, fingerprint ‖ period ‖ value)``,
never by the value itself. The secret is 32 random bytes kept in ``<data_dir>/device.key``
(mode 0600), or in memory without a data_dir — then the limits hold only for the life of
the process, and every process of an app keeps its own. Whoever can read the data_dir
can test candidate values against the memo, so it must be protected like the app's own
data (which holds the raw values anyway).
"""

from __future__ import annotations

import hashlib
import hmac
import os
from pathlib import Path

from ldp_telemetry.client.errors import ConfigurationError
from ldp_telemetry.shared.task import TaskConfig

SECRET_FILE = "device.key"
SECRET_BYTES = 32


def load_secret(data_dir: Path | None) -> bytes:
    """Return the device secret, creating it in ``data_dir`` the first time."""
    if data_dir is None:
        return os.urandom(SECRET_BYTES)
    path = data_dir / SECRET_FILE
    if not path.exists():
        _publish(path, os.urandom(SECRET_BYTES))
    secret = path.read_bytes()
    if len(secret) != SECRET_BYTES:
        raise ConfigurationError(
            f"{path} is not a {SECRET_BYTES}-byte device secret; delete it to start a new one"
        )
    return secret


def _publish(path: Path, secret: bytes) -> None:
    # Written to a private temporary file, then linked into place: a process starting at
    # the same moment sees either no secret or a whole one, and only one secret wins.
    temporary = path.with_name(f".{SECRET_FILE}.{os.getpid()}.{os.urandom(4).hex()}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(secret)
            file.flush()
            os.fsync(file.fileno())
        os.link(temporary, path)
    except FileExistsError:
        pass  # another process published its secret first: use that one
    finally:
        temporary.unlink(missing_ok=True)


def canonical_value(task: TaskConfig, value: object) -> bytes:
    """Return the bytes that identify a value for ``task``; raise ValueOutOfDomain if invalid.

    This is also the validation ``record`` does before anything else: the mechanism's own
    rule, so record() refuses exactly what privatize would. Its messages never contain the
    value.
    """
    return task.mechanism_object.canonical(value)


def device_key(secret: bytes, task: TaskConfig) -> bytes:
    """Return this device's key for a task id: what device-dependent mechanisms derive from.

    Bound to the task id (not the fingerprint), so a re-published task does not give a
    device a fresh choice (e.g. another heavy-hitter level).
    """
    message = b"ldp-telemetry device key\x00" + task.task_id.encode("ascii")
    return hmac.new(secret, message, hashlib.sha256).digest()


def lookup_key(
    secret: bytes, task: TaskConfig, period: int, value: bytes, slice_index: int = 0
) -> bytes:
    """Return the memo key of a canonical value in a period (and slice) of a task.

    It binds the task's fingerprint (hence its id and parameters), the period and the
    value: a memoized report is reused only under the configuration it was made for. For a
    task with public dimensions it binds the slice too (4 bytes big-endian after the value,
    PROTOCOL.md §3.10): a record under other dimensions is a new report, never the earlier
    one with the earlier dims.
    """
    message = task.fingerprint.encode("ascii") + period.to_bytes(8, "big", signed=True) + value
    if task.dimensions is not None:
        message += slice_index.to_bytes(4, "big")
    return hmac.new(secret, message, hashlib.sha256).digest()
