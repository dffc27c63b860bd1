"""Load generators for the serving benchmark: wrk when present, else Python threads.

Traffic as devices send it: the generator cycles through a pool of body templates whose
reports were each privatized by the SDK's mechanism from its own Zipf-drawn value (their
own rows, bits and values; bench.upload_templates), so successive uploads dirty
different sketch rows, as real devices' do. Every upload also carries fresh report ids, so
the collector does its full work (a replayed id would be rejected early and cheaply). A
template holds each report's id as a 13-character slot plus a suffix unique to its
position; per request the generator fills the slot with one random prefix (wrk: LuaJIT, 72
random bits after a thread tag; Python: ``os.urandom``), so every id is new and still
canonical base64url.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

SLOT = "~" * 13  # never occurs in a JSON body of base64url, hex and digits
ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
THREADS = 2  # wrk threads (one per core); connections are spread over them

LUA = r"""
local templates, path, prefix
local next_template = 0
local alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
local counter = 0
function setup(thread)
  counter = counter + 1
  thread:set("tag", counter)
end
function init(args)
  path = args[1]
  templates = {}
  for line in io.lines(args[2]) do  -- one JSON body per line
    templates[#templates + 1] = line
  end
  math.randomseed(os.time() * 1000 + (tag or 0) * 7919 + math.floor(os.clock() * 1e6))
  prefix = alphabet:sub((tag or 0) + 1, (tag or 0) + 1)
  next_template = math.random(0, #templates - 1)  -- threads start at different bodies
end
function request()
  local chars = {prefix}
  for i = 2, 13 do
    local n = math.random(1, 64)
    chars[i] = alphabet:sub(n, n)
  end
  next_template = next_template % #templates + 1
  local body = templates[next_template]:gsub("~~~~~~~~~~~~~", table.concat(chars))
  return wrk.format("POST", path, {["Content-Type"] = "application/json"}, body)
end
"""


@dataclass(frozen=True)
class Load:
    """What one load run measured."""

    tool: str  # "wrk" or "python"
    requests_per_s: float
    requests: int
    non_2xx: int
    errors: int
    p50_ms: float
    p99_ms: float


def template(body: bytes) -> bytes:
    """Return ``body`` (an upload) with every report id replaced by SLOT + a unique suffix."""
    document = json.loads(body)
    for index, report in enumerate(document["reports"]):
        suffix = "".join(
            ALPHABET[(index >> shift) & 63] for shift in (42, 36, 30, 24, 18, 12, 6, 0)
        )
        report["report_id"] = SLOT + suffix + "A"  # "A": canonical last char of 16 bytes
    return json.dumps(document, separators=(",", ":")).encode()


def have_wrk() -> bool:
    return shutil.which("wrk") is not None


def run(
    url: str, path: str, templates: list[bytes], connections: int, seconds: float, folder: Path
) -> Load:
    """Post fresh uploads for ``seconds`` over ``connections`` keep-alive connections."""
    if have_wrk():
        return _wrk(url, path, templates, connections, seconds, folder)
    return python_load(url, path, templates, connections, seconds)


def _wrk(
    url: str, path: str, templates: list[bytes], connections: int, seconds: float, folder: Path
) -> Load:
    script, body_file = folder / "upload.lua", folder / "templates.jsonl"
    script.write_text(LUA, encoding="utf-8")
    body_file.write_bytes(b"\n".join(templates) + b"\n")
    command = [
        "wrk",
        "-t",
        str(min(THREADS, connections)),
        "-c",
        str(connections),
        "-d",
        f"{seconds:.0f}s",
        "--timeout",
        "10s",
        "--latency",
        "-s",
        str(script),
        url,
        "--",
        path,
        str(body_file),
    ]
    out = subprocess.run(
        command, capture_output=True, text=True, timeout=seconds + 60, check=True
    ).stdout
    requests = int(_find(r"(\d+) requests in", out))
    errors = sum(int(n) for n in re.findall(r"(?:connect|read|write|timeout) (\d+)", out))
    return Load(
        "wrk",
        float(_find(r"Requests/sec:\s+([\d.]+)", out)),
        requests,
        int(_find(r"Non-2xx or 3xx responses: (\d+)", out, "0")),
        errors,
        _ms(_find(r"50%\s+([\d.]+\w+)", out)),
        _ms(_find(r"99%\s+([\d.]+\w+)", out)),
    )


def python_load(
    url: str,
    path: str,
    templates: list[bytes],
    connections: int,
    seconds: float,
    fresh_connections: bool = False,
) -> Load:
    """Threads posting uploads; ``fresh_connections``: one new connection per request.

    One Python process: on a 2-core machine it is itself the bottleneck of small
    uploads, so its rates are lower bounds (the table says which generator ran).
    """
    address = urlsplit(url)
    latencies: list[float] = []
    counts = {"non_2xx": 0, "errors": 0}
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def worker(first: int) -> None:
        connection = None
        mine: list[float] = []
        turn = first
        while time.monotonic() < deadline:
            turn += 1
            body = templates[turn % len(templates)].replace(SLOT.encode(), _prefix())
            started = time.monotonic()
            try:
                if connection is None:
                    connection = http.client.HTTPConnection(
                        address.hostname or "127.0.0.1", address.port, timeout=10
                    )
                connection.request("POST", path, body, {"Content-Type": "application/json"})
                response = connection.getresponse()
                response.read()
                status = response.status
            except (OSError, http.client.HTTPException):
                status = 0
                connection = None
            mine.append(time.monotonic() - started)
            with lock:
                if status == 0:
                    counts["errors"] += 1
                elif not 200 <= status < 300:
                    counts["non_2xx"] += 1
            if fresh_connections and connection is not None:
                connection.close()
                connection = None
        with lock:
            latencies.extend(mine)

    started = time.monotonic()
    threads = [
        threading.Thread(target=worker, args=(i * len(templates) // connections,))
        for i in range(connections)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    latencies.sort()
    return Load(
        "python",
        len(latencies) / elapsed,
        len(latencies),
        counts["non_2xx"],
        counts["errors"],
        _percentile(latencies, 0.5) * 1e3,
        _percentile(latencies, 0.99) * 1e3,
    )


def _prefix() -> bytes:
    return "".join(ALPHABET[b & 63] for b in os.urandom(13)).encode()


def _percentile(ordered: list[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def _find(pattern: str, text: str, default: str | None = None) -> str:
    match = re.search(pattern, text)
    if match is None:
        if default is None:
            raise RuntimeError(f"wrk output without {pattern!r}: {text[-500:]}")
        return default
    return match.group(1)


def _ms(value: str) -> float:
    found = re.fullmatch(r"([\d.]+)(\w+)", value)
    if found is None:
        raise RuntimeError(f"wrk printed a duration it did not write before: {value!r}")
    number, unit = found.groups()
    return float(number) * {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 6e4}[unit]
