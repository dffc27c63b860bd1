"""Run the scenario's devices through a real SDK over HTTP, one SDK client per device.

Python: each device is a :class:`ldp_telemetry.client.Client` of its own (own secret,
budget and memo) with the task pinned, on a pool of threads. TypeScript: each is an
``init()`` client of the SDK compiled by ``npm run build`` (sdk-js/build/src, what the
bundle is made of), run by node's driver sdk-js/test/python/devices.ts, the TypeScript
SDK's end-to-end tests' own. Java: each is a ``Client`` of sdk-java compiled offline by
Maven, run by its end-to-end tests' driver (sdk-java/src/test/.../E2eDriver.java, 8
threads). Each client gets the device's dimensions as its app would give them; each run
returns the SDKs' summed delivery counters.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from demo.breakdowns.scenario import Device
from ldp_telemetry.client import Client, Timeouts
from ldp_telemetry.shared import TaskConfig

ROOT = Path(__file__).resolve().parents[2]
SDK_JS = ROOT / "sdk-js"
DRIVER = SDK_JS / "build" / "test" / "python" / "devices.js"
SDK_JAVA = ROOT / "sdk-java"
JAVA_CLASSPATH = f"{SDK_JAVA / 'target' / 'classes'}:{SDK_JAVA / 'target' / 'test-classes'}"
PATIENT = Timeouts(connect=10, read=60, config=10)
DRIVER_TIMEOUT = 3600
SDKS = ("python", "typescript", "java")


@dataclass
class Delivery:
    """What the devices' SDKs counted: reports sent, retried, dropped and rejected."""

    sent: int = 0
    retries: int = 0
    queued: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    rejected: dict[str, int] = field(default_factory=dict)


def run(sdk: str, url: str, task: dict[str, Any], devices: list[Device], folder: Path) -> Delivery:
    """Record every device's value through ``sdk``; return the SDKs' summed counters."""
    if sdk == "python":
        return run_python(url, TaskConfig.from_dict(task), devices)
    if sdk == "typescript":
        return run_typescript(url, task["task_id"], devices, folder)
    if sdk == "java":
        return run_java(url, task["task_id"], devices, folder)
    raise ValueError(f"unknown SDK {sdk!r}: one of {', '.join(SDKS)}")


def run_python(
    url: str,
    task: TaskConfig,
    devices: list[Device],
    *,
    threads: int = 16,
    before: Callable[[int], None] | None = None,
) -> Delivery:
    """Run each device as its own Python SDK client; ``before(i)`` runs first on its thread."""

    def device(index: int) -> tuple[int, int, int, Counter[str], Counter[str]]:
        if before is not None:
            before(index)
        sdk = Client(
            url, tasks=[task], timeouts=PATIENT, reports_per_period=None, atexit_timeout=None,
            dimensions=devices[index].given(index),
        )  # fmt: skip
        sdk.record(task.task_id, devices[index].value)
        sdk.close(60)
        stats = sdk.stats()
        return (
            stats.sent,
            stats.retries,
            stats.queued,
            Counter(stats.dropped),
            Counter(stats.rejected),
        )

    total, dropped, rejected = Delivery(), Counter[str](), Counter[str]()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        for sent, retries, queued, drops, rejects in pool.map(device, range(len(devices))):
            total.sent, total.retries, total.queued = (
                total.sent + sent, total.retries + retries, total.queued + queued,
            )  # fmt: skip
            dropped.update(drops)
            rejected.update(rejects)
    total.dropped, total.rejected = dict(dropped), dict(rejected)
    return total


def build(sdk: str) -> None:
    """Compile what ``sdk``'s devices run (nothing for Python), or say what is missing."""
    if sdk == "typescript":
        build_typescript()
    elif sdk == "java":
        missing = [tool for tool in ("mvn", "java") if shutil.which(tool) is None]
        if missing:
            raise RuntimeError(f"the Java devices need {' and '.join(missing)} (Maven, a JDK 11+)")
        _run(["mvn", "-o", "-q", "-B", "test-compile"], SDK_JAVA, 900, "mvn test-compile")


def _run(command: list[str], cwd: Path, timeout: float, what: str) -> str:
    """Run a command to its end and return its output, or raise with its last lines."""
    done = subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return done.stdout


def build_typescript() -> None:
    """Compile the TypeScript SDK and its drivers (``npm run build``), or say what is missing."""
    if shutil.which("node") is None or not (SDK_JS / "node_modules").is_dir():
        raise RuntimeError(
            "the TypeScript devices need node and sdk-js/node_modules: run "
            "'make sdk-js/node_modules/.package-lock.json' (npm ci from the lock file)"
        )
    _run(["npm", "run", "--silent", "build"], SDK_JS, 600, "npm run build")


def run_typescript(
    url: str, task_id: str, devices: list[Device], folder: Path, *, concurrency: int = 32
) -> Delivery:
    """Run each device as its own TypeScript SDK client in node (after ``build``)."""
    plan = {
        "endpoint": url,
        "values": {task_id: [device.value for device in devices]},
        "concurrency": concurrency,
        "dimensions": [device.given(i) for i, device in enumerate(devices)],
    }
    path = folder / "typescript-plan.json"
    path.write_text(json.dumps(plan))
    stats = json.loads(_run(["node", str(DRIVER), str(path)], SDK_JS, DRIVER_TIMEOUT, "node"))
    return Delivery(
        stats["sent"], stats["retries"], stats["queued"], stats["dropped"], stats["rejected"]
    )


def run_java(url: str, task_id: str, devices: list[Device], folder: Path) -> Delivery:
    """Run each device as its own Java SDK client (after ``build``)."""
    plan = {
        "mode": "devices",
        "endpoint": url,
        "values": {task_id: [device.value for device in devices]},
        "dimensions": [device.given(i) for i, device in enumerate(devices)],
    }
    path = folder / "java-plan.json"
    path.write_text(json.dumps(plan))
    command = ["java", "-cp", JAVA_CLASSPATH, "dev.ldptelemetry.E2eDriver", str(path)]
    stats = json.loads(_run(command, SDK_JAVA, DRIVER_TIMEOUT, "java").strip().splitlines()[-1])
    # The driver reports no retries: 0 here means "not counted", not "none".
    return Delivery(stats["sent"], 0, stats["queued"], stats["dropped"], stats["rejected"])
