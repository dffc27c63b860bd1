"""The TypeScript SDK's own tests (node:test): the conformance vectors bit for bit, and the
core bundle's size (npm run size: minified + gzipped, at most 14,000 bytes: 13 KiB, protocol
1.1's dimensions, 510 bytes measured, and PROTOCOL.md §1.1/§3.9/§5's task field, T_i and
Retry-After rules, 200; the sealed tasks' HPKE
is a chunk of its own, loaded on first use, not counted)."""

from __future__ import annotations

import re

import pytest

from tests.sdk_js.helpers import SDK, run

pytestmark = [pytest.mark.timeout(120), pytest.mark.usefixtures("sdk")]


def test_vectors_and_unit_tests_pass() -> None:
    tests = sorted(str(p) for p in (SDK / "build" / "test").glob("*.test.js"))
    done = run(["node", "--test", *tests])
    passed = int(re.search(r"^# pass (\d+)$", done.stdout, re.MULTILINE)[1])
    assert passed >= 6 and "# fail 0" in done.stdout, done.stdout


def test_core_bundle_fits_the_budget() -> None:
    done = run(["npm", "run", "--silent", "size"])
    size = int(re.search(r"(\d+) bytes min\+gzip", done.stdout)[1])
    assert 0 < size <= 14_000, done.stdout
