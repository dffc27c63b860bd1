"""Errors of the client SDK.

One tree with one root, :class:`ClientError` (itself a :class:`shared.LdpError`)::

    ClientError
    ├── ConfigurationError   bad constructor argument or LDP_* variable (raised at construction)
    ├── TransportError       a request got no usable answer (connection, timeout, retries spent)
    └── TaskUnavailableError a task's public configuration could not be obtained or is invalid

After construction nothing is raised into the host application: ``record``, ``flush``
and ``close`` log a problem once, count it in :meth:`client.Client.stats` and go on.
:class:`TransportError` is what a custom :class:`client.Transport` raises when a request
fails without a response. No message ever contains a recorded value.
"""

from __future__ import annotations

from ldp_telemetry.shared.errors import LdpError


class ClientError(LdpError):
    """Root of every error the client SDK defines."""


class ConfigurationError(ClientError, ValueError):
    """A setting is invalid; the message names it and says how to fix it."""


class TransportError(ClientError):
    """A request failed without an HTTP answer.

    ``retries`` is how many times the transport retried before giving up;
    ``retry_after`` the seconds the last answer's Retry-After asked for, when the
    transport gave up because that wait would pass its deadline (else None).
    """

    def __init__(self, message: str, *, retries: int = 0, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retries = retries
        self.retry_after = retry_after


class TaskUnavailableError(ClientError):
    """A task's configuration could not be fetched, or the server's answer was invalid."""
