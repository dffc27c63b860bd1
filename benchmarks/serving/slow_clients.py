"""Slow-client attack: connections that dribble request headers, and idle connections.

``python -m benchmarks.serving.slow_clients --port P --dribble 200 --idle 200 --seconds 30`` keeps
that many connections open to 127.0.0.1:P for the given time: a dribbler sends one byte of
an endless request header per second, an idle connection sends nothing. Either reopens as
soon as the server closes it (an attacker keeps the pressure on). Run in its own process
so it never competes with the measuring client for a GIL.
"""

from __future__ import annotations

import argparse
import asyncio
import time

HEADER = b"POST /v1/tasks/slow/reports HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: "


async def _dribbler(port: int, deadline: float, stats: dict[str, int]) -> None:
    while time.monotonic() < deadline:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            stats["refused"] += 1
            await asyncio.sleep(1)
            continue
        stats["opened"] += 1
        data, sent = HEADER, 0
        try:
            while time.monotonic() < deadline and not reader.at_eof():
                writer.write(data[sent : sent + 1] if sent < len(data) else b"a")
                sent += 1
                await writer.drain()
                try:  # one second between bytes, noticing at once when the server hangs up
                    if await asyncio.wait_for(reader.read(4096), 1.0) == b"":
                        break
                except asyncio.TimeoutError:
                    pass
        except OSError:
            pass
        finally:
            writer.close()


async def _idle(port: int, deadline: float, stats: dict[str, int]) -> None:
    while time.monotonic() < deadline:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            stats["refused"] += 1
            await asyncio.sleep(1)
            continue
        stats["opened"] += 1
        try:
            await asyncio.wait_for(reader.read(4096), max(0.0, deadline - time.monotonic()))
        except (asyncio.TimeoutError, OSError):
            pass
        finally:
            writer.close()


async def attack(port: int, dribble: int, idle: int, seconds: float) -> dict[str, int]:
    """Hold the connections for ``seconds``; return how many were opened and refused."""
    stats = {"opened": 0, "refused": 0}
    deadline = time.monotonic() + seconds
    await asyncio.gather(
        *[_dribbler(port, deadline, stats) for _ in range(dribble)],
        *[_idle(port, deadline, stats) for _ in range(idle)],
    )
    return stats


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.serving.slow_clients")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--dribble", type=int, default=200)
    parser.add_argument("--idle", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=30.0)
    args = parser.parse_args()
    stats = asyncio.run(attack(args.port, args.dribble, args.idle, args.seconds))
    print(f"opened {stats['opened']} refused {stats['refused']}", flush=True)


if __name__ == "__main__":
    main()
