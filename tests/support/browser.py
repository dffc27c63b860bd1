"""Debian's Chromium, the one browser the suite drives (through pytest-playwright).

Playwright's own browser downloads are never used: the tests launch /usr/bin/chromium,
which ``make test`` installs with apt-get when it runs as root. Without it the browser
tests fail and say so (they are part of what CI must run, so they never skip).
"""

from __future__ import annotations

CHROMIUM = "/usr/bin/chromium"
# As root Chromium needs --no-sandbox; the pages it opens are the suite's own.
LAUNCH_ARGS = ["--no-sandbox"]
