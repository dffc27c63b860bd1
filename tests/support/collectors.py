"""The collector in this process: its Flask app on a database, with the tests' tokens."""

from __future__ import annotations

from typing import Any

from flask import Flask

from ldp_telemetry.aggregator import create_app
from tests.support.servers import ADMIN, ANALYST


def make_app(database: str, **settings: Any) -> Flask:
    """Return a collector app on ``database`` with known admin and analyst tokens.

    ``settings``: more of the app's settings (e.g. ``STAGED_BYTES``), over the defaults.
    """
    config = {"TESTING": True, "DATABASE": database, "ADMIN_TOKEN": ADMIN, "ANALYST_TOKEN": ANALYST}
    return create_app({**config, **settings})
