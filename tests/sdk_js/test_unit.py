"""The TypeScript SDK's own tests (node:test): the conformance vectors bit for bit, and the
core bundle's size (npm run size: minified + gzipped, at most the budget in
sdk-js/scripts/bundle.mjs, which says what each addition measured; the sealed tasks' HPKE
is a chunk of its own, loaded on first use, not counted)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.sdk_js.helpers import SDK, run

BUNDLE = SDK / "scripts" / "bundle.mjs"

pytestmark = [pytest.mark.timeout(120), pytest.mark.usefixtures("sdk")]


def test_vectors_and_unit_tests_pass() -> None:
    tests = sorted(str(p) for p in (SDK / "build" / "test").glob("*.test.js"))
    done = run(["node", "--test", *tests])
    passed = int(re.search(r"^# pass (\d+)$", done.stdout, re.MULTILINE)[1])
    assert passed >= 6 and "# fail 0" in done.stdout, done.stdout


def test_core_bundle_fits_the_budget(tmp_path: Path) -> None:
    # npm run size bundles again, into dist/: in a copy of the sources, so that no test of the
    # other worker (make test runs two) reads sdk-js/dist while its chunks are replaced.
    copy = tmp_path / "sdk-js"
    copy.mkdir()
    for name in ("package.json", "tsconfig.json"):
        shutil.copy(SDK / name, copy / name)
    for name in ("scripts", "src"):
        shutil.copytree(SDK / name, copy / name)
    (copy / "node_modules").symlink_to(SDK / "node_modules")
    done = run(["npm", "run", "--silent", "size"], cwd=copy)
    size = int(re.search(r"(\d+) bytes min\+gzip", done.stdout)[1])
    budget = int(re.search(r"const BUDGET = ([\d_]+);", BUNDLE.read_text())[1].replace("_", ""))
    assert budget <= 13 * 1024 + 510 + 799 + 210 + 48  # grown only by what bundle.mjs names
    assert 0 < size <= budget, done.stdout
