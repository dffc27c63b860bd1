"""Reading the dashboard's pages: the CSRF token a form carries."""

from __future__ import annotations

import re


def csrf_of(html: str) -> str:
    """Return the CSRF token a page's form carries."""
    found = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert found, "the page has no CSRF field"
    return found.group(1)
