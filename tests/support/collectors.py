"""The collector in this process: its Flask app with the tests' tokens, and served from a thread."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from flask import Flask
from werkzeug.serving import make_server

from ldp_telemetry.aggregator import create_app
from tests.support.servers import ADMIN, ANALYST


def make_app(database: str, **settings: Any) -> Flask:
    """Return a collector app on ``database`` with known admin and analyst tokens.

    ``settings``: more of the app's settings (e.g. ``STAGED_BYTES``), over the defaults.
    """
    config = {"TESTING": True, "DATABASE": database, "ADMIN_TOKEN": ADMIN, "ANALYST_TOKEN": ANALYST}
    return create_app({**config, **settings})


@contextmanager
def served_in_thread(wsgi_app: Callable[..., Any]) -> Iterator[str]:
    """Serve a WSGI app (werkzeug, threaded) on a free loopback port from a thread of this
    process; yield its URL, stop it after."""
    server = make_server("127.0.0.1", 0, wsgi_app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(10)
