// Sealed tasks (PROTOCOL §10): the SDK seals with HPKE and the test opens with the private
// key, as §10's opening vector is opened; the padding rule for every kind; a task without a
// valid `seal` is refused; a rotated key reaches the client through ETag revalidation.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { base64url, fromBase64url, fromHex, utf8 } from "../src/bytes.js";
import { suite, paddedLength, paddedText } from "../src/sealing/hpke.js";
import { init, type Options } from "../src/index.js";
import { TaskError } from "../src/mechanisms/base.js";
import { SecureWords } from "../src/random.js";
import { sealInfo, sealKeyOf, sealedReportText } from "../src/sealing/seal.js";
import { derivedOf, fingerprintOf, mechanismOf, parseTask } from "../src/task.js";

type Json = Record<string, unknown>;

// PROTOCOL §10's opening vector: the private key 00 01 … 1f and its public key.
const PRIVATE = fromHex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");
const PUBLIC = "j0DFrbaPJWJK5bIU6nZ6bslNgp09e14a0bpvPiE4KF8";
const TIME = 1_764_028_800;
const seal = (keyId: string, publicKey = PUBLIC) => ({ kem: 32, kdf: 1, aead: 3, key_id: keyId, public_key: publicKey });

/** A sealed protocol 1.0 task as the collector serves it (seal is not fingerprinted). */
function sealedTask(fields: Json, keyId = "k1"): Json {
  const json: Json = { time_precision: 86400, min_batch_size: 1, protocol: "1.0", ...fields };
  const derived = derivedOf(mechanismOf(json));
  const hashed = { ...json, derived, sealed: true };
  return { ...hashed, fingerprint: fingerprintOf(hashed), seal: seal(keyId) };
}

const COLORS = { task_id: "colors", mechanism: "grr", epsilon: 2, domain: ["red", "green", "blue"] };

/** Open a sealed report with PRIVATE: info rebuilt from its envelope and the task id. */
async function open(taskId: string, report: Json): Promise<string> {
  const { report_id, fingerprint, time, key_id, sealed } = report as Record<string, string> & { time: number };
  const bytes = fromBase64url(sealed)!;
  const recipientKey = await suite.kem.deserializePrivateKey(PRIVATE);
  const info = utf8(sealInfo(taskId, fingerprint, key_id, report_id, time));
  const plaintext = await suite.open({ recipientKey, enc: bytes.slice(0, 32), info }, bytes.slice(32));
  return new TextDecoder().decode(plaintext);
}

test("PROTOCOL §10's vector opens with the info this SDK builds", async () => {
  const report = {
    report_id: "AAECAwQFBgcICQoLDA0ODw",
    fingerprint: "0123456789abcdef0123456789abcdef",
    time: 1700006400,
    key_id: "vector-key-1",
    sealed:
      "zqeK3bZD9eWKiPzFc4MsEJgDujebtLVGXieeS1AzVFkeru1rAz8sD3On-NKrS0dSV_pmCSNhkwnBRGCJ" +
      "kVPH5MmD5v4uIRCpdDF8-8V3Ia0TU7wpQHsrJh1qRLvZeKnM",
  };
  assert.equal(
    sealInfo("vector-task", report.fingerprint, report.key_id, report.report_id, report.time),
    '{"fingerprint":"0123456789abcdef0123456789abcdef","key_id":"vector-key-1","label":"ldp-telemetry/seal/1","report_id":"AAECAwQFBgcICQoLDA0ODw","task_id":"vector-task","time":1700006400}',
  );
  const plaintext = await open("vector-task", report);
  assert.equal(plaintext, `{"row":3,"bits":"gQBg"}${" ".repeat(25)}`);
  assert.equal(paddedText({ row: 3, bits: "gQBg" }), plaintext);
  await assert.rejects(open("other-task", report));
  await assert.rejects(open("vector-task", { ...report, time: report.time + 1 }));
});

test("the SDK's seal opens, and sealing twice gives two ciphertexts", async () => {
  const key = sealKeyOf(seal("k1"), "t");
  const payload = { index: 2 };
  const a = JSON.parse(await sealedReportText("t", key, "AAAAAAAAAAAAAAAAAAAAAA", "f".repeat(32), TIME, payload)) as Json;
  const b = JSON.parse(await sealedReportText("t", key, "AAAAAAAAAAAAAAAAAAAAAA", "f".repeat(32), TIME, payload)) as Json;
  assert.deepEqual(Object.keys(a).sort(), ["fingerprint", "key_id", "report_id", "sealed", "time"]);
  assert.notEqual(a["sealed"], b["sealed"]);
  assert.equal(await open("t", a), paddedText(payload));
  assert.equal((await open("t", b)).trimEnd(), '{"index":2}');
  await assert.rejects(open("t", { ...a, report_id: "AQAAAAAAAAAAAAAAAAAAAA" }));
});

// The padded length, written apart from the SDK's: the JSON with every scalar as a
// 22-character string (24 with its quotes), in UTF-8, rounded up to 16.
function widestJson(payload: unknown): number {
  const wide = JSON.stringify(payload, (_k, v: unknown) => (typeof v === "number" || typeof v === "boolean" || v === null ? "x".repeat(22) : v));
  return Math.ceil(utf8(wide).length / 16) * 16;
}

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const PATH = process.env["LDP_VECTORS"] ?? `${ROOT}protocol/vectors.json`;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const vectors: any = existsSync(PATH) ? JSON.parse(readFileSync(PATH, "utf8")) : null;

test("every kind's sealed plaintext has one length per task, by the padding rule", async () => {
  const kinds = new Set<string>();
  const words = new SecureWords();
  for (const t of vectors.tasks) {
    const task = parseTask(t.task);
    kinds.add(`${t.task.mechanism}${t.task.method ? `/${t.task.method}` : ""}${t.task.longitudinal ? "/longitudinal" : ""}`);
    const lengths = new Set<number>();
    for (let device = 0; device < 20; device++) {
      const mechanism = task.mechanism.forDevice(Uint8Array.of(device, ...new Uint8Array(31)));
      for (const r of t.reports) {
        const payload = mechanism.encode(mechanism.privatize(r.value, words));
        const text = paddedText(payload);
        assert.equal(utf8(text).length, widestJson(payload), t.task.task_id);
        assert.equal(paddedLength(payload), widestJson(payload), t.task.task_id);
        assert.deepEqual(JSON.parse(text), payload, t.task.task_id); // trailing spaces are JSON whitespace
        lengths.add(utf8(text).length);
      }
    }
    assert.equal(lengths.size, 1, `${t.task.task_id}: ${[...lengths].join(", ")}`);
    // And through the seal: the ciphertext is 32 (enc) + that length + 16 (tag) bytes.
    const key = sealKeyOf(seal("k1"), t.task.task_id);
    const payload = task.mechanism.forDevice(new Uint8Array(32)).encode(task.mechanism.forDevice(new Uint8Array(32)).privatize(t.reports[0].value, words));
    const report = JSON.parse(await sealedReportText(t.task.task_id, key, "AAAAAAAAAAAAAAAAAAAAAA", task.fingerprint, TIME, payload)) as Json;
    assert.equal(fromBase64url(String(report["sealed"]))!.length, 32 + [...lengths][0]! + 16, t.task.task_id);
    assert.deepEqual(JSON.parse(await open(t.task.task_id, report)), payload, t.task.task_id);
  }
  const every = ["rr", "grr", "oue", "ss", "olh", "cms", "hcms", "hh", "numeric/sw", "numeric/1bit"];
  for (const kind of [...every, ...["rr", "grr", "cms", "hcms"].map((k) => `${k}/longitudinal`)]) assert.ok(kinds.has(kind), kind);
});

test("a sealed task without a valid seal is refused", () => {
  const good = sealedTask(COLORS);
  assert.equal(parseTask(good).seal?.keyId, "k1");
  const bad: [string, unknown][] = [
    ["no seal", undefined],
    ["null", null],
    ["another KEM", { ...seal("k1"), kem: 16 }],
    ["another KDF", { ...seal("k1"), kdf: 2 }],
    ["AES-GCM", { ...seal("k1"), aead: 1 }],
    ["ids as strings", { ...seal("k1"), kem: "32" }],
    ["a short key", seal("k1", PUBLIC.slice(0, 42))],
    ["a non-canonical key", seal("k1", `${PUBLIC.slice(0, 42)}9`)],
    ["not base64url", seal("k1", `${PUBLIC.slice(0, 42)}+`)],
    ["a bad key id", seal("k 1")],
    ["a long key id", seal("k".repeat(33))],
    ["an extra field", { ...seal("k1"), mode: 0 }],
  ];
  for (const [why, value] of bad) {
    const served = { ...good, seal: value };
    if (value === undefined) delete served.seal;
    assert.throws(() => parseTask(served), (e: unknown) => e instanceof TaskError, why);
  }
  assert.throws(() => parseTask({ ...good, sealed: "yes" }), TaskError);
  const plain = sealedTask(COLORS);
  delete plain["sealed"];
  assert.throws(() => parseTask({ ...plain, fingerprint: fingerprintOf(plain) }), /only a sealed task/);
});

/** A fake collector serving `tasks()` with an ETag and max-age=0, recording bodies and requests. */
function collector(tasks: () => Json[], answer?: (reports: Json[]) => Json) {
  const bodies: Json[][] = [];
  const gets: (string | null)[] = [];
  const fetch = async (url: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const path = String(url);
    if (!init?.method) {
      const found = tasks().find((t) => path.endsWith(`/v1/tasks/${String(t["task_id"])}`));
      if (!found) return new Response("{}", { status: 404 });
      const etag = `"${String(found["fingerprint"])}.${String((found["seal"] as Json | undefined)?.["key_id"])}"`;
      const asked = new Headers(init?.headers).get("If-None-Match");
      gets.push(asked);
      const headers = { ETag: etag, "Cache-Control": "public, max-age=0" };
      if (asked === etag) return new Response(null, { status: 304, headers });
      return Response.json(found, { headers });
    }
    const reports = (JSON.parse(String(init.body)) as { reports: Json[] }).reports;
    bodies.push(reports);
    return Response.json(answer?.(reports) ?? { accepted: reports.length, rejected: [] });
  };
  return { fetch: fetch as typeof globalThis.fetch, bodies, gets };
}

function client(options: Partial<Options>, fetch: typeof globalThis.fetch) {
  return init({ endpoint: "http://collector.test", database: false, fetch, clock: () => TIME, ...options });
}

test("record() queues only the sealed report, and it opens to the privatized payload", async () => {
  const fake = collector(() => [sealedTask(COLORS)]);
  const sdk = client({ tasks: [sealedTask(COLORS)], reportsPerPeriod: 3 }, fake.fetch);
  await sdk.ready;
  const queue = (sdk as unknown as { state: { queue: Map<string, { text: string }> } }).state.queue;
  assert.equal(sdk.record("colors", "green"), true); // returns at once: the sealing is queued
  assert.equal(sdk.record("colors", "green"), true); // the memo: the same report, still sealing
  assert.equal(queue.size, 0); // nothing queued before it is sealed
  assert.equal(sdk.record("colors", "blue"), true);
  assert.equal(sdk.record("colors", "red"), true);
  assert.equal(await sdk.flush(10_000), true);
  const reports = fake.bodies.flat();
  assert.equal(reports.length, 3);
  for (const report of reports) {
    assert.deepEqual(Object.keys(report), ["report_id", "fingerprint", "time", "key_id", "sealed"]);
    assert.equal(report["key_id"], "k1");
    const payload = JSON.parse(await open("colors", report)) as Json;
    assert.deepEqual(Object.keys(payload), ["index"]);
    assert.ok([0, 1, 2].includes(payload["index"] as number));
  }
  assert.equal(new Set(reports.map((r) => r["sealed"])).size, 3);
  assert.ok(!JSON.stringify(fake.bodies).includes("index"));
  // A repeat of a sent value re-queues the same sealed bytes (a resend, PROTOCOL §5).
  assert.equal(sdk.record("colors", "blue"), true);
  assert.equal(await sdk.close(10_000), true);
  assert.ok(reports.some((r) => JSON.stringify(r) === JSON.stringify(fake.bodies.at(-1)![0])));
  assert.deepEqual(sdk.stats().dropped, {});
});

test("a key that cannot be sealed to is refused when fetched", async () => {
  const zero = { ...sealedTask(COLORS), seal: seal("k0", base64url(new Uint8Array(32))) }; // low order
  const fake = collector(() => [zero]);
  const sdk = client({ taskIds: ["colors"] }, fake.fetch);
  assert.equal(await sdk.waitForTasks(["colors"], 300), false);
  assert.equal(sdk.record("colors", "red"), false);
  assert.equal(sdk.stats().dropped["task_unavailable"], 1);
  assert.equal(fake.bodies.length, 0);
  await sdk.close(100);
});

test("ETag revalidation picks up a rotated key; a 304 keeps the copy", async () => {
  let keyId = "k1";
  const fake = collector(() => [sealedTask(COLORS, keyId)]);
  const sdk = client({ taskIds: ["colors"], reportsPerPeriod: 3, flushInterval: 0.02 }, fake.fetch);
  assert.equal(await sdk.waitForTasks(["colors"], 5_000), true);
  assert.equal(sdk.record("colors", "red"), true);
  assert.equal(await sdk.flush(5_000), true);
  const etag = `"${String(sealedTask(COLORS)["fingerprint"])}.k1"`;
  await until(() => fake.gets.includes(etag)); // revalidated: 304
  keyId = "k2"; // the collector rotates its key
  await until(() => fake.gets.filter((g) => g === etag).length >= 2 && fake.gets.at(-1) !== etag);
  await until(() => fake.gets.at(-1) === `"${String(sealedTask(COLORS)["fingerprint"])}.k2"`);
  assert.equal(sdk.record("colors", "green"), true);
  assert.equal(await sdk.close(5_000), true);
  assert.deepEqual(fake.bodies.flat().map((r) => r["key_id"]), ["k1", "k2"]);
});

test("an unknown_seal_key rejection revalidates the task at once", async () => {
  let keyId = "k1";
  const fake = collector(
    () => [sealedTask(COLORS, keyId)],
    (reports) => ({ accepted: 0, rejected: reports.map((_, index) => ({ index, reason: "unknown_seal_key" })) }),
  );
  const sdk = client({ taskIds: ["colors"], flushInterval: 3_600 }, fake.fetch);
  assert.equal(await sdk.waitForTasks(["colors"], 5_000), true);
  keyId = "k2";
  assert.equal(sdk.record("colors", "red"), true);
  assert.equal(await sdk.flush(5_000), true);
  await until(() => fake.gets.length >= 2);
  assert.equal(sdk.stats().rejected["unknown_seal_key"], 1);
  await until(() => (sdk as unknown as { tasks: Map<string, { seal: { keyId: string } }> }).tasks.get("colors")?.seal.keyId === "k2");
  await sdk.close(100);
});

async function until(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
