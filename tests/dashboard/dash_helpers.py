"""Helpers of the dashboard tests: the aggregator tests' server helper, and page parsing.

A module of its own (not conftest.py), named so no other test folder shadows it.
"""

from __future__ import annotations

import re
from pathlib import Path

HERE = Path(__file__).resolve().parent

from tests.support.servers import ADMIN, ANALYST, bearer, start_server  # noqa: E402

__all__ = ["ADMIN", "ANALYST", "bearer", "csrf_of", "start_server"]


def csrf_of(html: str) -> str:
    """Return the CSRF token a page's form carries."""
    found = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert found, "the page has no CSRF field"
    return found.group(1)
