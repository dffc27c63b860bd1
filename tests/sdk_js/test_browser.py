"""The TypeScript SDK in a web page, in Debian's Chromium driven by Playwright.

A static page (tests/sdk_js/page/index.html) whose script is sdk-js/README.md's "From a web
page" block, served from the collector's origin (Playwright fulfils its paths; the uploads go to
the real collector), records values; the network is cut, the
page is hidden (uploads fail and back off) and shown again once back online; a value
recorded offline survives a reload in IndexedDB; repeats resend the same report. The
collector counts every report exactly once.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import requests
from playwright.sync_api import BrowserContext, Page, Route

from tests.sdk_js.helpers import SDK
from tests.support.reports import create_task_json, estimates_json

pytestmark = [pytest.mark.timeout(180), pytest.mark.usefixtures("sdk")]
PAGE = Path(__file__).resolve().parent / "page"
README = Path(__file__).resolve().parents[2] / "sdk-js" / "README.md"
WAIT = 30_000  # ms
WORDS = [f"w{i}" for i in range(30)]


def readme_page_script() -> bytes:
    """Return the script of sdk-js/README.md's "From a web page" section (its first js block)."""
    section = README.read_text(encoding="utf-8").split("## From a web page", 1)[1]
    found = re.search(r"^```js\n(.*?)^```", section, re.MULTILINE | re.DOTALL)
    assert found, "sdk-js/README.md's 'From a web page' section has no js block"
    return found[1].encode()


def serve_page(page: Page, url: str) -> None:
    """Serve the static page, its script and the SDK's bundle (same origin as the uploads)."""
    files = {
        "index.html": (PAGE / "index.html").read_bytes(),
        "page.js": readme_page_script(),
        "ldp-telemetry.js": (SDK / "dist" / "ldp-telemetry.js").read_bytes(),
    }

    def fulfil(route: Route) -> None:
        name = route.request.url.rsplit("/", 1)[1]
        kind = "text/html" if name.endswith(".html") else "text/javascript"
        route.fulfill(body=files[name], content_type=kind)

    page.route(f"{url}/sdkjs/*", fulfil)
    page.route(f"{url}/assets/ldp-telemetry.js", fulfil)


def set_visibility(page: Page, state: str) -> None:
    """Make the page report `state` (hidden, visible) and fire visibilitychange, as a tab switch."""
    page.evaluate(
        """state => {
            const visibility = {configurable: true, get: () => state};
            Object.defineProperty(document, "visibilityState", visibility);
            document.dispatchEvent(new Event("visibilitychange"));
        }""",
        state,
    )


def counted(url: str, task_id: str) -> int:
    return int(
        estimates_json(url, task_id, **({} if task_id == "web-rr" else {"candidates": ["w0"]}))["n"]
    )


def open_page(page: Page, url: str) -> None:
    page.goto(f"{url}/sdkjs/index.html")
    page.wait_for_function("window.ldp !== undefined", timeout=WAIT)
    assert page.evaluate("ldp.waitForTasks(['web-cms', 'web-rr'], 20000)") is True


def test_offline_hidden_shown_counted_once(
    page: Page, context: BrowserContext, collector_url: str
) -> None:
    create_task_json(
        collector_url, task_id="web-cms", mechanism="cms", epsilon=4.0, k=16, m=64, min_batch_size=1
    )
    create_task_json(collector_url, task_id="web-rr", mechanism="rr", epsilon=2.0, min_batch_size=1)
    serve_page(page, collector_url)
    open_page(page, collector_url)

    context.set_offline(True)
    queued = page.evaluate(
        "words => [...words.map(w => ldp.record('web-cms', w)), ldp.record('web-rr', true), "
        "ldp.record('web-cms', 'w0')]",
        WORDS,
    )
    assert all(queued) and len(queued) == len(WORDS) + 2
    set_visibility(page, "hidden")  # the upload it starts fails: offline
    page.wait_for_function("ldp.stats().retries >= 1", timeout=WAIT)
    assert page.evaluate("ldp.stats().queued") == len(WORDS) + 1  # 'w0' twice is one report

    context.set_offline(False)
    set_visibility(page, "visible")
    page.wait_for_function("ldp.stats().queued === 0", timeout=WAIT)
    assert counted(collector_url, "web-cms") == len(WORDS)
    assert counted(collector_url, "web-rr") == 1

    # Offline again: a new value waits in IndexedDB through a reload; repeats of values
    # already sent (before and after the reload) resend their report, counted once.
    context.set_offline(True)
    assert page.evaluate("[ldp.record('web-cms', 'late'), ldp.record('web-cms', 'w1')]") == [
        True,
        True,
    ]
    page.wait_for_timeout(200)  # IndexedDB writes land behind record()
    page.reload()  # still offline: the page itself is fulfilled by Playwright
    page.wait_for_function("window.ldp !== undefined", timeout=WAIT)
    page.evaluate("ldp.ready")
    assert page.evaluate("ldp.stats().queued") == 2  # from IndexedDB
    context.set_offline(False)
    assert page.evaluate("ldp.record('web-cms', 'w2')") is True  # the ledger came back too
    assert page.evaluate("ldp.flush(20000)") is True
    assert counted(collector_url, "web-cms") == len(WORDS) + 1
    stats = page.evaluate("ldp.stats()")
    assert stats["rejected"] == {} and stats["dropped"] == {}
    assert requests.get(f"{collector_url}/readyz", timeout=10).status_code == 200
