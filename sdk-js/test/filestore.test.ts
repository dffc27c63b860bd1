// Node's fileStore: the privacy ledger, memo and queue outlive the process as the secret does
// (PROTOCOL §4), so a task re-published between two runs gets no second permanent response.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { init } from "../src/index.js";
import { fileSecret, fileStore } from "../src/node.js";
import { derivedOf, fingerprintOf, mechanismOf, parseTask } from "../src/task.js";

type Json = Record<string, unknown>;

function task(fields: Json): Json {
  const json: Json = { time_precision: 86400, min_batch_size: 1, protocol: "1.0", ...fields };
  const derived = derivedOf(mechanismOf(json));
  const served = { ...json, derived };
  return { ...served, fingerprint: fingerprintOf(served) };
}
const longCms = (flip: number) => task({ task_id: "c", mechanism: "cms", k: 4, m: 16, hash_seed: 7, longitudinal: { epsilon_inf: 4, flip } });
const down = (async () => new Response("{}", { status: 503 })) as typeof fetch; // nothing is delivered

function run(dir: string, tasks: Json[], options: Json = {}) {
  return init({ endpoint: "http://collector.test", store: fileStore(dir), tasks, fetch: down, clock: () => 1_764_028_800, backoff: 30, ...options });
}

test("a restart keeps the ledger: a re-published task is refused, the period's budget and the queue remain", async () => {
  const dir = mkdtempSync(join(tmpdir(), "ldp-filestore-"));
  try {
    const first = run(dir, [longCms(0.1)]);
    await first.ready;
    assert.equal(first.record("c", "apple"), true);
    await first.close(50);
    const secret = readFileSync(join(dir, "device.key"));
    assert.deepEqual(new Uint8Array(secret), await fileSecret(dir)); // the Python SDK's device.key

    const republished = run(dir, [longCms(0.2)]);
    await republished.ready;
    assert.equal(republished.record("c", "pear"), false);
    assert.equal(republished.stats().dropped["config_changed"], 1);
    assert.equal(republished.stats().queued, 1); // the first run's report is still queued
    assert.deepEqual(republished.stats().permanentResponses, { c: 1 }); // the ledger outlives the run
    assert.deepEqual(republished.stats().epsilonInf, { c: parseTask(longCms(0.1)).epsilonInf });
    await republished.close(50);

    const same = run(dir, [longCms(0.1)]);
    await same.ready;
    assert.equal(same.record("c", "apple"), true); // the memo: the same report again
    assert.equal(same.record("c", "pear"), false); // one report per period, across runs
    assert.equal(same.stats().dropped["budget_exhausted"], 1);
    await same.close(50);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a line cut short by a crash is ignored with what follows it", async () => {
  const dir = mkdtempSync(join(tmpdir(), "ldp-filestore-"));
  try {
    const first = run(dir, [longCms(0.1)]);
    await first.ready;
    assert.equal(first.record("c", "apple"), true);
    await first.close(50);
    const { appendFileSync } = await import("node:fs");
    appendFileSync(join(dir, "ledger-js.jsonl"), '{"op": "drew", "key"');
    const again = run(dir, [longCms(0.2)]);
    await again.ready;
    assert.equal(again.record("c", "apple"), false); // the ledger before the cut is kept
    assert.equal(again.stats().dropped["storage_error"], undefined);
    await again.close(50);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the package exports the Node store as ldp-telemetry/node", async () => {
  const name = "ldp-telemetry/node"; // a self-reference: resolved through package.json's exports
  const module = (await import(name)) as { fileStore?: unknown; fileSecret?: unknown };
  assert.equal(typeof module.fileStore, "function");
  assert.equal(typeof module.fileSecret, "function");
});
