"""Read and decode a JSON request body within size limits, gzip included.

The compressed body is bounded by ``MAX_BODY_BYTES``: :func:`read_capped` reads at most one
byte past it, however the body is framed; a gzip body is inflated in one ``decompress`` call
capped with ``max_length``, so a gzip bomb is refused with 413 after at most
``MAX_BODY_BYTES`` + 1 bytes of output, never fully expanded in memory. Framework-free: the
collector's Flask views (ldp_telemetry.aggregator.api.body) and the shuffler read a body with
:func:`read_capped`; they and the RSGI fast path decode it with :func:`decode_json`.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable
from typing import Any

from ldp_telemetry.aggregator.core.problems import ApiError, too_large
from ldp_telemetry.shared.contract import INVALID_GZIP, INVALID_JSON, UNSUPPORTED_MEDIA_TYPE

GZIP_WINDOW = 16 + zlib.MAX_WBITS  # zlib's gzip-container mode


def declared_too_large(declared: int | None, limit: int) -> bool:
    """Return True if a request's Content-Length alone is over ``limit``."""
    return declared is not None and declared > limit


def read_capped(read: Callable[[int], bytes], declared: int | None, limit: int) -> bytes:
    """Return a request body, at most ``limit`` + 1 bytes of it, however it is framed;
    raise the 413 of a declared length over ``limit`` without reading the body.

    ``read`` is the raw input stream's ``read``, which may return fewer bytes than asked:
    it is read to the end or just past the limit, so :func:`decode_json` decides, with
    the core's one 413 (ldp_telemetry.aggregator.core.problems.too_large).
    """
    if declared_too_large(declared, limit):
        raise too_large(limit)
    parts, size = [], 0
    while size <= limit:
        part = read(limit + 1 - size)
        if not part:
            break
        parts.append(part)
        size += len(part)
    return b"".join(parts)


def decode_json(
    content_type: str | None, content_encoding: str | None, raw: bytes, limit: int
) -> Any:
    """Return the JSON a body holds (``raw``: at most ``limit`` + 1 bytes of it, as sent).

    Framework-free, so the collector's fast upload path
    (ldp_telemetry.aggregator.serving.rsgi_bridge) and the Flask views check a body the same way.
    """
    if (content_type or "").partition(";")[0].strip().lower() != "application/json":
        raise ApiError(
            415,
            UNSUPPORTED_MEDIA_TYPE,
            "send the body as JSON with 'Content-Type: application/json'",
        )
    encoding = (content_encoding or "identity").strip().lower()
    if encoding not in ("gzip", "identity"):
        raise ApiError(
            415,
            UNSUPPORTED_MEDIA_TYPE,
            f"Content-Encoding {encoding!r} is not supported; use gzip or none",
        )
    if len(raw) > limit:
        raise too_large(limit)
    if encoding == "gzip":
        raw = _inflate(raw, limit)
    try:
        # UTF-8 only (RFC 8259 §8.1): decoded here, since json.loads(bytes) would also take
        # UTF-16/32 and skip a BOM; a BOM is then refused as not JSON. Duplicate keys: the
        # last wins, as in ECMAScript's JSON.parse (PROTOCOL.md §2).
        return json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as error:  # UnicodeDecodeError is a ValueError
        raise ApiError(
            400, INVALID_JSON, f"the body is not valid UTF-8 JSON: {str(error)[:200]}"
        ) from None


def _inflate(raw: bytes, limit: int) -> bytes:
    inflater = zlib.decompressobj(GZIP_WINDOW)
    try:
        out = inflater.decompress(raw, limit + 1)
    except zlib.error:
        raise ApiError(400, INVALID_GZIP, "the body is not valid gzip data") from None
    if len(out) > limit or inflater.unconsumed_tail:  # output was cut at the cap
        raise too_large(limit)
    if not inflater.eof or inflater.unused_data:
        raise ApiError(400, INVALID_GZIP, "the body must be exactly one complete gzip member")
    return out
