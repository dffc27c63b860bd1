"""Clients that hold a server's connections: an upload's headers, and never its body."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from urllib.parse import urlsplit


def http_host(url: str) -> tuple[str, int]:
    """Return the (host, port) of an http URL."""
    address = urlsplit(url)
    return address.hostname or "127.0.0.1", address.port or 80


@contextmanager
def bodiless(url: str, head: bytes, count: int) -> Iterator[list[int]]:
    """Hold ``count`` connections that sent an upload's headers and never its body,
    reopening any the server closes (as an attacker would). Yields [connections opened]."""
    target = http_host(url)
    opened = [0]
    stop = threading.Event()
    sockets: list[socket.socket] = []

    def connect() -> socket.socket:
        connection = socket.create_connection(target, timeout=5)
        connection.sendall(head)
        connection.setblocking(False)
        opened[0] += 1
        return connection

    def hold() -> None:
        while not stop.wait(0.2):
            for index, connection in enumerate(sockets):
                try:
                    connection.recv(4096)  # an answer (408) or the end: this one is done
                except BlockingIOError:
                    continue  # still held open
                except OSError:
                    pass
                connection.close()
                with suppress(OSError):
                    sockets[index] = connect()

    for _ in range(count):
        sockets.append(connect())
    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    try:
        yield opened
    finally:
        stop.set()
        thread.join(timeout=10)
        for connection in sockets:
            connection.close()
