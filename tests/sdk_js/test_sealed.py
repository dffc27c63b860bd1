"""The TypeScript SDK seals against a real collector (PROTOCOL.md §10): reports counted exactly.

The collector's key is made with ``ldp-aggregator keys new``. In Node each simulated device
is a client of its own that fetches (or is handed) the sealed tasks with their ``seal`` key,
records one value per task, and uploads only sealed reports
(sdk-js/test/python/devices.ts); the collector opens them: n is exact, and the estimates
are within 4 standard errors of the truth. In Chromium a page loads the HPKE chunk lazily
and keeps only sealed reports in IndexedDB.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from playwright.sync_api import BrowserContext, Page, Route

from tests.sdk_js.helpers import SDK, node
from tests.support.reports import create_task_json, estimates_json
from tests.support.servers import start_sealing_server

pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("sdk")]
DEVICES = 200
FRUIT = {"apple": 100, "banana": 60, "cherry": 40, "durian": 0}
TASKS: dict[str, dict[str, Any]] = {
    "sealed-grr": {"mechanism": "grr", "epsilon": 3.0, "domain": list(FRUIT)},
    "sealed-cms": {"mechanism": "cms", "epsilon": 4.0, "k": 64, "m": 256},
    "sealed-sw": {"mechanism": "numeric", "epsilon": 3.0, "lo": 0, "hi": 100, "buckets": 32},
}
PAGE = Path(__file__).resolve().parent / "page"
WEB = [f"w{i}" for i in range(12)]


@pytest.fixture(scope="module")
def sealing_collector(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Yield the URL of a real collector holding a seal key made by the CLI."""
    server = start_sealing_server(tmp_path_factory.mktemp("sdkjs-sealed") / "collector.sqlite3")
    try:
        yield server.url
    finally:
        server.kill()


def test_sealed_reports_counted_exactly(sealing_collector: str, tmp_path: Path) -> None:
    for task_id, fields in TASKS.items():
        created = create_task_json(
            sealing_collector, task_id=task_id, min_batch_size=1, sealed=True, **fields
        )
        assert created["sealed"] is True and created["seal"]["kem"] == 32
    rng = np.random.default_rng(28)
    fruit = [value for value, count in FRUIT.items() for _ in range(count)]
    latencies = [float(x) for x in rng.uniform(10, 70, DEVICES)]
    plan = {
        "sealed-grr": list(rng.permutation(np.array(fruit, dtype=object))),
        "sealed-cms": list(rng.permutation(np.array(fruit, dtype=object))),
        "sealed-sw": latencies,
    }
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"endpoint": sealing_collector, "values": plan, "concurrency": 10}))
    stats = json.loads(node("test/python/devices.js", str(path)).stdout)
    del stats["retries"]  # a loaded machine may refuse a connection; each report still arrives once
    assert stats == {"sent": DEVICES * len(TASKS), "queued": 0, "dropped": {}, "rejected": {}}
    for task_id in ("sealed-grr", "sealed-cms"):
        answer = estimates_json(sealing_collector, task_id, candidates=list(FRUIT))
        assert answer["n"] == DEVICES, task_id
        for row in answer["estimates"]:
            assert abs(row["estimate"] - FRUIT[row["value"]]) <= 4 * row["std_error"], (
                task_id,
                row,
            )
    answer = estimates_json(sealing_collector, "sealed-sw", candidates=["mean"])
    assert answer["n"] == DEVICES
    row = answer["estimates"][0]
    assert abs(row["estimate"] - float(np.mean(latencies))) <= 4 * row["std_error"]


PAGE_SCRIPT = b"""import { init } from "/assets/ldp-telemetry.js";
window.ldp = init({ endpoint: location.origin, taskIds: ["sealed-web"], reportsPerPeriod: 50 });
"""
# Every value IndexedDB holds for the SDK, as JSON text (the queue, the ledger, the tasks).
STORED = """() => new Promise((resolve, reject) => {
    const open = indexedDB.open("ldp-telemetry");
    open.onerror = reject;
    open.onsuccess = () => {
        const store = open.result.transaction("kv").objectStore("kv");
        const keys = store.getAllKeys(), values = store.getAll();
        const pairs = () => keys.result.map((k, i) => [k, JSON.stringify(values.result[i])]);
        values.onsuccess = () => resolve(pairs());
    };
})"""


def test_sealed_in_a_browser_stored_and_sent_sealed(
    page: Page, context: BrowserContext, sealing_collector: str
) -> None:
    """In Chromium: the HPKE chunk loads lazily, IndexedDB keeps only sealed reports."""
    url = sealing_collector
    create_task_json(
        url,
        task_id="sealed-web",
        mechanism="oue",
        epsilon=2.0,
        domain=WEB,
        sealed=True,
        min_batch_size=1,
    )
    files = {"index.html": (PAGE / "index.html").read_bytes(), "page.js": PAGE_SCRIPT}
    files |= {p.name: p.read_bytes() for p in (SDK / "dist").glob("ldp-telemetry*.js")}

    def fulfil(route: Route) -> None:
        name = route.request.url.rsplit("/", 1)[1]
        kind = "text/html" if name.endswith(".html") else "text/javascript"
        route.fulfill(body=files[name], content_type=kind)

    page.route(f"{url}/sdkjs/*", fulfil)
    page.route(f"{url}/assets/*", fulfil)
    page.goto(f"{url}/sdkjs/index.html")
    page.wait_for_function("window.ldp !== undefined", timeout=30_000)
    assert page.evaluate("ldp.waitForTasks(['sealed-web'], 20000)") is True

    context.set_offline(True)  # the reports wait in IndexedDB
    assert page.evaluate("web => web.map(v => ldp.record('sealed-web', v))", WEB) == [True] * len(
        WEB
    )
    page.wait_for_function(f"ldp.stats().queued === {len(WEB)}", timeout=30_000)
    page.wait_for_timeout(200)  # IndexedDB writes land behind the queue
    stored = dict(page.evaluate(STORED))
    reports = [text for key, text in stored.items() if key.startswith(("q:", "ledger:"))]
    assert len(reports) == 2 * len(WEB)  # each report queued and in the ledger
    for text in reports:
        kept = json.loads(text)  # a queue entry is a report; a ledger entry holds one
        report = json.loads(kept.get("pending", kept)["text"])
        assert set(report) == {"report_id", "fingerprint", "time", "key_id", "sealed"}, report
    context.set_offline(False)
    assert page.evaluate("ldp.flush(20000)") is True
    assert estimates_json(url, "sealed-web", candidates=WEB)["n"] == len(WEB)
    stats = page.evaluate("ldp.stats()")
    assert stats["rejected"] == {} and stats["dropped"] == {}
