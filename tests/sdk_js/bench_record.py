"""Measure the TypeScript SDK (not a test): record() latency for a cms task, in Chromium and Node.

Run: ``.venv/bin/python -m tests.sdk_js.bench_record [--records 5000]`` after ``make test``
(which builds sdk-js and installs Debian's Chromium). Each ``record`` call of distinct
values (no budget limit) is timed with ``performance.now()`` on the caller's thread:
privatize with the platform's CSPRNG (k=2048, m=1024, ε=4: 1,024 random words), memo key,
budget check, queueing (and, in the page, the IndexedDB write it schedules). Uploads go to a
fetch that never answers, so only record() is measured. Prints median, p99 and max.
"""

from __future__ import annotations

import argparse
import json
import subprocess

from playwright.sync_api import sync_playwright

from ldp_telemetry.shared import TaskConfig
from tests.sdk_js.helpers import SDK
from tests.support.browser import CHROMIUM, LAUNCH_ARGS

MEASURE = """async ([task, records]) => {
  const { init } = await import("/ldp-telemetry.js");
  const ldp = init({ endpoint: location.origin, tasks: [task], reportsPerPeriod: 1e9,
                     maxQueue: 1e6, fetch: () => new Promise(() => {}) });
  await ldp.ready;
  const times = [];
  for (let i = 0; i < records; i++) {
    const start = performance.now();
    if (!ldp.record(task.task_id, `value-${i}`)) throw new Error("not queued");
    times.push(performance.now() - start);
  }
  return times;
}"""


def summary(where: str, times: list[float]) -> str:
    ordered = sorted(times[len(times) // 10 :])  # the first 10% warm the JIT up
    p = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    median, p99, worst = (round(x * 1000) for x in (p(0.5), p(0.99), ordered[-1]))
    return f"{where}: record() median {median} µs, p99 {p99} µs, max {worst} µs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=5000)
    args = parser.parse_args()
    subprocess.run(["npm", "run", "--silent", "build"], cwd=SDK, check=True)
    task = TaskConfig.create(task_id="cms", mechanism="cms", epsilon=4.0, k=2048, m=1024).to_dict()
    bundle = (SDK / "dist" / "ldp-telemetry.js").read_bytes()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        page = browser.new_page()
        # Cross-origin isolated, so that performance.now() has 5 µs resolution (else 100 µs).
        isolated = {
            "Cross-Origin-Opener-Policy": "same-origin",
            "Cross-Origin-Embedder-Policy": "require-corp",
        }
        page.route(
            "http://localhost:9/ldp-telemetry.js",
            lambda r: r.fulfill(body=bundle, content_type="text/javascript", headers=isolated),
        )
        page.route(
            "http://localhost:9/",
            lambda r: r.fulfill(
                body="<!doctype html><title>bench</title>",
                content_type="text/html",
                headers=isolated,
            ),
        )
        page.goto("http://localhost:9/")
        print(summary("Chromium", page.evaluate(MEASURE, [task, args.records])))
        browser.close()
    call = json.dumps([task, args.records])
    script = f"const m = {MEASURE}; console.log(JSON.stringify(await m({call})));"
    script = script.replace(
        '"/ldp-telemetry.js"', json.dumps(str(SDK / "dist" / "ldp-telemetry.js"))
    )
    script = script.replace("location.origin", '"http://127.0.0.1:9"')
    node = subprocess.run(
        ["node", "--input-type=module", "-e", script], capture_output=True, text=True, check=True
    )
    print(summary("Node", json.loads(node.stdout)))


if __name__ == "__main__":
    main()
