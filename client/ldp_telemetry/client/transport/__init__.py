"""The transport protocol: how the client sends one HTTP-shaped request.

The client builds every request of the aggregator's API itself (paths, headers, bodies)
and hands it to a :class:`Transport`. :class:`client.HTTPTransport` sends it over the
network with retries; :class:`client.InMemoryTransport` answers it from memory for tests.
A custom transport returns a :class:`Response` for any HTTP answer (including 4xx/5xx)
and raises :class:`client.TransportError` when there is none.
"""

from __future__ import annotations

import email.utils
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class Request:
    """One request: method, path below the endpoint (``/v1/...``), headers, body."""

    method: str
    path: str
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes | None = None

    def header(self, name: str) -> str | None:
        """Return a header's value (name matched without case), or None."""
        return _header(self.headers, name)


@dataclass(frozen=True)
class Response:
    """One answer to a request; ``retries`` is how many the transport made for it."""

    status: int
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    retries: int = 0

    def header(self, name: str) -> str | None:
        """Return a header's value (name matched without case), or None."""
        return _header(self.headers, name)


def retry_after(value: str | None) -> float | None:
    """Return the seconds a Retry-After value asks for (delay-seconds or an HTTP date)."""
    if value is None:
        return None
    if re.fullmatch(r"\s*[0-9]+\s*", value):
        return float(int(value))
    try:
        when = email.utils.parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError):
        return None  # unparsable: the caller's own backoff applies
    if when.tzinfo is None:  # RFC 9110 dates are GMT
        return None
    return max(0.0, when.timestamp() - time.time())


def _header(headers: Mapping[str, str], name: str) -> str | None:
    wanted = name.lower()
    for key, value in headers.items():
        if key.lower() == wanted:
            return value
    return None


@runtime_checkable
class Transport(Protocol):
    """Sends requests; one instance may be used from several threads at once."""

    def handle(self, request: Request, *, timeout: float) -> Response:
        """Return the answer to ``request``, retrying as the transport sees fit.

        ``timeout`` bounds the whole call, retries included, in seconds.
        Raises :class:`client.TransportError` if no answer could be obtained.
        """
        ...

    def close(self) -> None:
        """Release connections and interrupt retry waits; idempotent."""
        ...
