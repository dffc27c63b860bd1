// The client with a fake collector (fetch): the device rules of PROTOCOL §4 including the
// privacy ledger, and the uploader's answers to 413, 429 + Retry-After, outdated_config and
// network errors. Nothing here throws into the caller.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { init, type Options } from "../src/index.js";
import { retryAfter } from "../src/uploader.js";
import { derivedOf, fingerprintOf, mechanismOf, parseTask } from "../src/task.js";

type Json = Record<string, unknown>;

/** A protocol 1.0 task as the collector serves it: its derived integers, its fingerprint. */
function task(fields: Json): Json {
  const json: Json = { time_precision: 86400, min_batch_size: 1, protocol: "1.0", ...fields };
  const derived = derivedOf(mechanismOf(json));
  const served = { ...json, derived };
  return { ...served, fingerprint: fingerprintOf(served) };
}

const CMS = { task_id: "c", mechanism: "cms", k: 4, m: 16, hash_seed: 7 };
const longCms = (flip: number, epsilonInf = 4) => task({ ...CMS, longitudinal: { epsilon_inf: epsilonInf, flip } });

/** A fake collector: answers uploads with `answer(body)`, serves `tasks`, records bodies. */
function collector(tasks: Json[], answer?: (reports: Json[], n: number) => Response) {
  const bodies: Json[][] = [];
  const fetch = async (url: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const path = String(url);
    if (!init?.method) {
      const found = tasks.find((t) => path.endsWith(`/v1/tasks/${String(t["task_id"])}`));
      return new Response(JSON.stringify(found ?? {}), { status: found ? 200 : 404 });
    }
    const reports = (JSON.parse(String(init.body)) as { reports: Json[] }).reports;
    bodies.push(reports);
    return answer?.(reports, bodies.length) ?? Response.json({ accepted: reports.length, rejected: [] });
  };
  return { fetch: fetch as typeof globalThis.fetch, bodies };
}

function client(options: Partial<Options> & { tasks: Json[] }, fetch: typeof globalThis.fetch) {
  return init({ endpoint: "http://collector.test", database: false, fetch, clock: () => 1_764_028_800, ...options });
}

test("the privacy ledger refuses config_changed, epsilon_inf_exhausted and epsilon_exhausted", async () => {
  const secret = new Uint8Array(32).fill(7);
  let day = 1_764_028_800;
  const make = (tasks: Json[], options: Partial<Options> = {}) =>
    init({ endpoint: "http://collector.test", database: false, secret, tasks, clock: () => day, fetch: collector([]).fetch, reportsPerPeriod: 10, ...options });
  const sdk = make([longCms(0.1, 4), task({ task_id: "p", mechanism: "cms", epsilon: 3, k: 4, m: 16, hash_seed: 1 })], { maxEpsilonInf: 6, maxEpsilonPerPeriod: 10 });
  await sdk.ready;
  assert.equal(sdk.record("c", "apple"), true); // a new PRR: lifetime 4
  assert.equal(sdk.record("c", "apple"), true); // memo
  assert.equal(sdk.record("c", "pear"), false); // a second PRR would make 8 > 6
  assert.equal(sdk.stats().dropped["epsilon_inf_exhausted"], 1);
  // The ledger in stats(): the one PRR drawn and the task's own ε∞ (refused records draw none).
  const epsilonInf = parseTask(longCms(0.1, 4)).epsilonInf!;
  assert.deepEqual(sdk.stats().permanentResponses, { c: 1 });
  assert.deepEqual(sdk.stats().epsilonInf, { c: epsilonInf });
  assert.ok(Math.abs(epsilonInf - 4) < 1e-6, String(epsilonInf));
  assert.equal(sdk.record("p", "x"), true);
  assert.equal(sdk.record("p", "y"), true);
  assert.equal(sdk.record("p", "z"), false); // ε of the device period: ~2.83 + 3 + 3 > 10
  assert.equal(sdk.stats().dropped["epsilon_exhausted"], 1);
  assert.deepEqual(Object.keys(sdk.stats().permanentResponses), ["c"]); // "p" has no permanent layer
  // The collector re-publishes "c" with another flip: the same device state refuses it.
  const state = (sdk as unknown as { state: unknown }).state;
  const again = make([longCms(0.2, 4)]);
  await again.ready;
  (again as unknown as { state: unknown }).state = state;
  day += 86_400;
  assert.equal(again.record("c", "apple"), false);
  assert.equal(again.stats().dropped["config_changed"], 1);
  const plain = make([task({ ...CMS, epsilon: 4 })]);
  await plain.ready;
  (plain as unknown as { state: unknown }).state = state;
  assert.equal(plain.record("c", "apple"), false); // a permanent layer is never dropped
  assert.equal(plain.stats().dropped["config_changed"], 1);
  for (const c of [sdk, again, plain]) await c.close(100);
});

test("republishedEpsilonInf lets a re-published configuration in, once", async () => {
  const secret = new Uint8Array(32).fill(9);
  const first = init({ endpoint: "http://collector.test", database: false, secret, tasks: [longCms(0.1, 4)], fetch: collector([]).fetch, republishedEpsilonInf: 4 });
  await first.ready;
  assert.equal(first.record("c", "apple"), true);
  const state = (first as unknown as { state: { configurations: Map<string, [string, number][]> } }).state;
  assert.equal(state.configurations.get("c")!.length, 1);
  await first.close(100);
});

test("413 halves the batch, 429 waits for Retry-After, replayed reports count as delivered", async () => {
  const tasks = [task({ task_id: "r", mechanism: "rr", epsilon: 1 })];
  let calls = 0;
  const fake = collector(tasks, (reports) => {
    calls++;
    if (calls === 1) return new Response("{}", { status: 413 });
    if (calls === 2) return new Response("{}", { status: 429, headers: { "Retry-After": "0" } });
    return Response.json({ accepted: reports.length - 1, rejected: [{ report_id: "x", reason: "report_replayed" }] });
  });
  const sdk = client({ tasks, reportsPerPeriod: 2, backoff: 0.01 }, fake.fetch);
  await sdk.ready;
  assert.equal(sdk.record("r", true), true);
  assert.equal(sdk.record("r", false), true);
  assert.equal(await sdk.flush(5000), true);
  assert.deepEqual(fake.bodies.map((b) => b.length), [2, 1, 1, 1]);
  assert.equal(sdk.stats().sent, 2);
  assert.equal(sdk.stats().retries, 1);
  // The batch refused with 429 is sent again byte for byte (same report id, same noise).
  const refused = fake.bodies[1]!;
  const resent = fake.bodies.slice(2).find((b) => b[0]!["report_id"] === refused[0]!["report_id"]);
  assert.deepEqual(resent, refused);
  await sdk.close(100);
});

test("a shuffler's 202 delivers the batch as a 200 does", async () => {
  const tasks = [task({ task_id: "r", mechanism: "rr", epsilon: 1 })];
  const fake = collector(tasks, (reports) =>
    Response.json({ accepted: reports.length - 1, rejected: [{ report_id: "x", reason: "report_replayed" }] }, { status: 202 }),
  );
  const sdk = client({ tasks, reportsPerPeriod: 2 }, fake.fetch);
  await sdk.ready;
  assert.equal(sdk.record("r", true), true);
  assert.equal(sdk.record("r", false), true);
  assert.equal(await sdk.flush(5000), true);
  assert.equal(fake.bodies.length, 1); // not resent
  const stats = sdk.stats();
  assert.equal(stats.sent, 2);
  assert.deepEqual(stats.dropped, {});
  assert.equal(stats.failedBatches, 0);
  await sdk.close(100);
});

/** A fetch that never answers: it settles only when the request's signal aborts it. */
function stalled(init?: RequestInit): Promise<Response> {
  return new Promise((_, reject) => {
    init?.signal?.addEventListener("abort", () => reject(init.signal!.reason));
  });
}

test("a collector that never answers holds no promise past its timeout; a stalled upload is retried", { timeout: 10_000 }, async () => {
  const tasks = [task({ task_id: "r", mechanism: "rr", epsilon: 1 })];
  const hanging = init({ endpoint: "http://collector.test", database: false, taskIds: ["r"], fetch: (async (_u: unknown, i?: RequestInit) => stalled(i)) as typeof fetch });
  const started = Date.now();
  assert.equal(await hanging.waitForTasks(["r"], 300), false);
  assert.equal(await hanging.flush(300), true); // nothing queued
  assert.ok(Date.now() - started < 2000);
  await hanging.close(100);
  let posts = 0;
  const fake = collector(tasks);
  const fetch = (async (url: string | URL | Request, i?: RequestInit) => {
    if (i?.method === "POST" && ++posts === 1) return stalled(i);
    return fake.fetch(url, i);
  }) as typeof globalThis.fetch;
  const sdk = client({ tasks, timeout: 0.2, backoff: 0.01 }, fetch);
  await sdk.ready;
  assert.equal(sdk.record("r", true), true);
  assert.equal(await sdk.flush(5000), true);
  assert.equal(posts, 2);
  assert.equal(sdk.stats().sent, 1);
  await sdk.close(100);
});

test("a task request that failed is not repeated before its Retry-After", async () => {
  let gets = 0;
  const fetch = (async () => {
    gets++;
    return new Response("{}", { status: 503, headers: { "Retry-After": "10" } });
  }) as typeof globalThis.fetch;
  const sdk = init({ endpoint: "http://collector.test", database: false, taskIds: ["r"], fetch });
  assert.equal(await sdk.waitForTasks(["r"], 600), false);
  assert.equal(gets, 1);
  await sdk.close(100);
});

test("outdated_config fetches the task again; network errors and bad answers never throw", async () => {
  const tasks = [task({ task_id: "r", mechanism: "rr", epsilon: 1 })];
  let calls = 0;
  const fake = collector(tasks, () => {
    calls++;
    if (calls === 1) throw new TypeError("network down");
    return Response.json({ accepted: 0, rejected: [{ report_id: "x", reason: "outdated_config" }] });
  });
  const sdk = client({ tasks: [], taskIds: ["r"], backoff: 0.01 }, fake.fetch);
  assert.equal(await sdk.waitForTasks(["r"], 2000), true);
  assert.equal(sdk.record("r", true), true);
  assert.equal(sdk.record("r", "not a boolean"), false);
  assert.equal(sdk.record("unknown", 1), false);
  assert.equal(await sdk.flush(5000), true);
  const stats = sdk.stats();
  assert.equal(stats.rejected["outdated_config"], 1);
  assert.equal(stats.dropped["invalid_value"], 1);
  assert.equal(stats.dropped["task_unavailable"], 1);
  assert.equal(await sdk.waitForTasks(["r"], 2000), true); // fetched again
  await sdk.close(100);
});

test("Retry-After takes seconds or an HTTP date", () => {
  assert.equal(retryAfter("7"), 7);
  assert.equal(retryAfter("86400"), 600); // PROTOCOL §5: at most 600 s
  assert.equal(retryAfter(new Date(Date.now() + 86_400_000).toUTCString()), 600);
  assert.equal(retryAfter(new Date(Date.now() + 30_000).toUTCString()) !== null, true);
  assert.equal(retryAfter("soon"), null);
  assert.equal(retryAfter(null), null);
});

test("bad options throw from init, nothing else does", () => {
  assert.throws(() => init({ endpoint: "ftp://x" }));
  assert.throws(() => init({ endpoint: "http://x", secret: new Uint8Array(3) }));
  assert.throws(() => init({ endpoint: "http://x", maxEpsilonInf: -1 }));
});

/** A protocol 1.1 task: it declares dimensions (PROTOCOL §11). */
function dimensionsTask(fields: Json): Json {
  const json: Json = { time_precision: 86400, min_batch_size: 1, protocol: "1.1", min_slice_size: 50, ...fields };
  const derived = derivedOf(mechanismOf(json));
  const served = { ...json, derived };
  return { ...served, fingerprint: fingerprintOf(served) };
}

const PLATFORMS = [
  { name: "platform", values: ["android", "ios", "web"] },
  { name: "app_version", values: ["5.1", "5.2"] },
];

test("dimensions: mapped to the task's lists before the report is stored, overridden per record", async () => {
  const grr = dimensionsTask({ task_id: "d", mechanism: "grr", epsilon: 2, domain: ["a", "b"], dimensions: PLATFORMS });
  const plain = task({ task_id: "p", mechanism: "grr", epsilon: 2, domain: ["a", "b"] });
  const fake = collector([]);
  const sdk = client({ tasks: [grr, plain], dimensions: { platform: "ios", app_version: "5.9", country: "de" }, reportsPerPeriod: 3 }, fake.fetch);
  await sdk.ready;
  assert.equal(sdk.record("d", "a"), true); // ios, and 5.9 is not listed: other
  assert.equal(sdk.record("d", "b", { dimensions: { app_version: "5.2" } }), true);
  assert.equal(sdk.record("d", "b", { dimensions: { app_version: "5.2" } }), true); // the memo: the same report
  // Other dimensions make another slice: the memo key binds it (PROTOCOL §3.10), so this is a
  // new report, within the per-period limit like any other.
  assert.equal(sdk.record("d", "b", { dimensions: { platform: "iOS" } }), true);
  assert.equal(sdk.record("d", "b", { dimensions: { platform: "web" } }), false); // a 4th report: over 3
  assert.equal(sdk.stats().dropped["budget_exhausted"], 1);
  assert.equal(sdk.record("p", "a", { dimensions: { platform: "web" } }), true); // no dimensions: no dims
  assert.equal(await sdk.flush(2000), true);
  const sent = fake.bodies.flat();
  const dims = sent.filter((r) => r["fingerprint"] === grr["fingerprint"]).map((r) => r["dims"]);
  assert.deepEqual(dims, [
    { platform: "ios", app_version: "other" },
    { platform: "ios", app_version: "5.2" },
    { platform: "other", app_version: "other" },
  ]);
  assert.equal(sent.filter((r) => "dims" in r).length, 3); // never on the task without dimensions
  assert.ok(!JSON.stringify(sent).includes("country") && !JSON.stringify(sent).includes("5.9")); // free-form values never leave
  await sdk.close(100);
});

test("a task of a protocol this SDK does not implement is refused alone", async () => {
  const future = { ...task({ task_id: "f", mechanism: "rr", epsilon: 1 }), protocol: "1.2" };
  const mislabelled = { ...task({ task_id: "m", mechanism: "rr", epsilon: 1 }), protocol: "1.1" }; // 1.1 without dimensions
  assert.throws(() => parseTask(future), /protocol 1\.2/);
  assert.throws(() => parseTask(mislabelled), /protocol 1\.1/);
  const fake = collector([future, task({ task_id: "ok", mechanism: "rr", epsilon: 1 })]);
  const sdk = client({ tasks: [], taskIds: ["f", "ok"] }, fake.fetch);
  assert.equal(await sdk.waitForTasks(["ok"], 2000), true);
  assert.equal(sdk.record("ok", true), true);
  assert.equal(sdk.record("f", true), false); // refused (counted), the other task unaffected
  assert.equal(sdk.stats().dropped["task_unavailable"], 1);
  assert.equal(await sdk.flush(2000), true);
  assert.equal(fake.bodies.flat().length, 1);
  await sdk.close(100);
});

test("a LOLOHA device is charged per hashed bucket: six values, at most g = 2 permanent responses", async () => {
  const vectors = JSON.parse(readFileSync(fileURLToPath(new URL("../../../protocol/vectors.json", import.meta.url)), "utf8")) as {
    tasks: { task: Json }[];
  };
  const loloha = vectors.tasks.find((t) => t.task["task_id"] === "grr-loloha")!.task;
  let day = 1_764_028_800;
  const sdk = init({
    endpoint: "http://collector.test", database: false, tasks: [loloha], clock: () => day,
    fetch: collector([]).fetch, maxEpsilonInf: 4.5, // room for two permanent responses at ε∞ = 2
  });
  await sdk.ready;
  for (const value of ["a", "b", "c", "d", "e", "f", "a", "c"]) {
    assert.equal(sdk.record("grr-loloha", value), true, value);
    day += 86_400;
  }
  assert.deepEqual(sdk.stats().dropped, {});
  // stats() as the Python SDK's: at most g = 2 PRRs, each charged the task's ε∞ (= 2).
  const drawn = sdk.stats().permanentResponses["grr-loloha"]!;
  assert.ok(drawn >= 1 && drawn <= 2, String(drawn));
  const epsilonInf = parseTask(loloha).epsilonInf!;
  assert.ok(Math.abs(sdk.stats().epsilonInf["grr-loloha"]! - drawn * epsilonInf) < 1e-9);
  assert.ok(Math.abs(epsilonInf - 2) < 1e-6, String(epsilonInf));
  await sdk.close(100);
});
