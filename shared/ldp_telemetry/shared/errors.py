"""Errors raised by the shared layer.

All derive from :class:`LdpError` so callers can catch one root:

- :class:`ParameterError` — a mechanism or task was configured with an impossible value.
- :class:`ValueOutOfDomain` — a value cannot be privatized by this mechanism.
- :class:`DecodeError` — a wire message is malformed; ``reason`` is a stable code, one of
  :data:`ldp_telemetry.shared.contract.REJECTION_REASONS`.
"""

from __future__ import annotations

from ldp_telemetry.shared.contract import INVALID_MESSAGE


class LdpError(Exception):
    """Root of every error raised by ldp-telemetry."""


class ParameterError(LdpError, ValueError):
    """A parameter is invalid; the message says which and how to fix it."""


class ValueOutOfDomain(LdpError, ValueError):
    """A value cannot be privatized by this mechanism (wrong type or not in the domain)."""


class DecodeError(LdpError, ValueError):
    """A report or batch on the wire is malformed.

    ``reason`` is one of the stable rejection codes of the HTTP API
    (``invalid_message``, ``outdated_config``, ...); ``str(error)`` says what was wrong.
    """

    def __init__(self, message: str, reason: str = INVALID_MESSAGE) -> None:
        super().__init__(message)
        self.reason = reason
        self.time: int | None = None  # the report's time, when it was read before the error
