// The published protocol vectors (protocol/vectors.json, or LDP_VECTORS), bit for bit:
// canonical JSON, DRBG output, per task the canonical form, fingerprint, derived integers,
// device key, hash family, permanent response and each report from fixed words (a sealed
// task's: its padded plaintext), and §10's padded plaintext of every payload shape.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { base64url, fromHex, hex, utf8 } from "../src/bytes.js";
import { coarsen, sliceOf } from "../src/device/dimensions.js";
import { sealInfo } from "../src/sealing/seal.js";
import { type Json, jcs } from "../src/canonical.js";
import { RowHashes, murmur64 } from "../src/hashing.js";
import { deviceKey, lookupKey } from "../src/device/budget.js";
import { Longitudinal } from "../src/mechanisms/longitudinal.js";
import { FixedWords, KeyedStream } from "../src/random.js";
import { paddedText } from "../src/sealing/hpke.js";
import { canonicalJson, derivedOf, fingerprintOf, parseTask } from "../src/task.js";
import { batchBody, reportText } from "../src/wire.js";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const PATH = process.env["LDP_VECTORS"] ?? `${ROOT}protocol/vectors.json`;
const skip = !existsSync(PATH) && "protocol/vectors.json is not in this tree";
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const v: any = skip ? null : JSON.parse(readFileSync(PATH, "utf8"));
const hex64 = (x: bigint) => x.toString(16).padStart(16, "0");

test("RFC 8785 canonical JSON", { skip }, () => {
  for (const c of v.canonical_json) assert.equal(jcs(JSON.parse(c.json) as Json), c.canonical);
});

test("HMAC-DRBG generate calls", { skip }, () => {
  for (const d of v.drbg) {
    const stream = new KeyedStream(fromHex(d.seed_material));
    for (const call of d.calls) assert.equal(hex(stream.bytes(call.bytes)), call.output);
  }
});

test("tasks, permanent responses and reports", { skip }, () => {
  const secret = fromHex(v.device_secret);
  const reportId = fromHex(v.report_id);
  for (const t of v.tasks) {
    const id = t.task.task_id;
    const task = parseTask(t.task);
    const { fingerprint: _, effective_epsilon: __, effective_epsilon_inf: ___, upload_key_required: _u, archive: _a, attack_success: _s, selection: _c, seal: _k, ...hashed } = t.task;
    assert.equal(canonicalJson(hashed), t.canonical, id);
    assert.equal(task.fingerprint, t.fingerprint, id);
    assert.deepEqual(derivedOf(task.mechanism), t.derived, id);
    // The ε the ledger charges, as the collector computed it (V8's ln may differ by an ulp).
    assert.ok(Math.abs(task.epsilon - t.task.effective_epsilon) <= 1e-15 * t.task.effective_epsilon, id);
    const key = deviceKey(secret, id);
    assert.equal(hex(key), t.device_key, id);
    if (t.hash_family) {
      const hashes = new RowHashes(t.task.hash_seed ?? t.task.longitudinal?.hash_seed ?? 0, t.hash_family.m);
      for (let j = 0; j < t.hash_family.k; j++) {
        assert.deepEqual(hashes.constants(j).map(hex64), [t.hash_family.a[j], t.hash_family.b[j]], id);
      }
    }
    const mechanism = task.mechanism.forDevice(key);
    if (t.prr) {
      const layer = mechanism as Longitudinal<unknown>;
      const stream = new KeyedStream(fromHex(t.prr.seed_material));
      for (const call of t.prr.calls) assert.equal(hex(stream.bytes(call.bytes)), call.output, id);
      assert.deepEqual(layer.permanent.encode(layer.permanentResponse(t.prr.value)), t.prr.permanent_response, id);
    }
    for (const r of t.reports) {
      const where = `${id} ${JSON.stringify(r.value)}`;
      assert.equal(hex(mechanism.canonical(r.value)), r.canonical, where);
      assert.equal(lookupKey(secret, task.fingerprint, v.time, mechanism.canonical(r.value), r.slice), r.memo_key, where);
      const seed = t.task.hash_seed ?? t.task.longitudinal?.hash_seed;
      if (r.key && !r.hashed) assert.equal(hex64(murmur64(utf8(r.value), seed)), r.key, where);
      const words = new FixedWords(r.words);
      const payload = mechanism.encode(mechanism.privatize(r.value, words));
      assert.deepEqual(payload, r.report, where);
      assert.equal(words.used, r.words_used, where);
      // §11: the app's dimension values mapped to the task's lists (other else), in the clear.
      const dims = task.dimensions ? coarsen(task.dimensions, r.dimensions) : undefined;
      assert.deepEqual(dims, r.dims, where);
      if (dims) assert.equal(sliceOf(task.dimensions!, dims), r.slice, where);
      if (t.task.sealed) {
        // The wire is randomized: the padded plaintext, and the info binding the clear dims.
        assert.equal(paddedText(payload), r.plaintext, where);
        if (dims) assert.equal(sealInfo(id, task.fingerprint, t.task.seal.key_id, base64url(reportId), v.time, dims), r.info, where);
      } else assert.equal(batchBody([reportText(reportId, task.fingerprint, v.time, payload, dims)]), r.wire, where);
    }
  }
});

test("§10's padded plaintext of every payload shape", { skip }, () => {
  for (const c of v.padding) {
    assert.equal(paddedText(c.payload), c.plaintext, c.task);
    assert.equal(utf8(c.plaintext).length, c.padded_length, c.task);
  }
  assert.ok(v.padding.length >= 9);
});

test("a task publishing other derived integers is refused", { skip }, () => {
  for (const t of v.tasks) {
    // T_i is taken as published (its ε₁ ends in an ln): only its range is checked.
    for (const name of Object.keys(t.derived).filter((n) => n !== "T_i")) {
      const value = t.derived[name];
      const derived = { ...t.derived, [name]: Array.isArray(value) ? [value[0] + 1, ...value.slice(1)] : value + 1 };
      assert.throws(() => parseTask({ ...t.task, derived }), /derived integers/, `${t.task.task_id} ${name}`);
    }
  }
});

/** Return a vector task with one field changed (undefined: removed) and its fingerprint recomputed. */
function changed(task: Record<string, unknown>, field: string, value: unknown): Record<string, unknown> {
  const copy: Record<string, unknown> = { ...task, [field]: value };
  if (value === undefined) delete copy[field];
  return { ...copy, fingerprint: fingerprintOf(copy) };
}

test("PROTOCOL §1.1: derived always served, only the kind's own fields, no upload_key", { skip }, () => {
  const rr = v.tasks.find((t: { task: { mechanism: string } }) => t.task.mechanism === "rr").task;
  parseTask(changed(rr, "fingerprint", undefined)); // the recomputed fingerprint alone is accepted
  assert.throws(() => parseTask(changed(rr, "derived", undefined)), /derived integers/);
  assert.throws(() => parseTask(changed(rr, "k", 4)), /takes no k/);
  assert.throws(() => parseTask(changed(rr, "upload_key", "secret")), /takes no upload_key/);
  assert.throws(() => parseTask(changed(rr, "colour", "red")), /takes no colour/);
});

test("a published T_i whose own ε₁ exceeds epsilon_1 is refused (§3.9)", { skip }, () => {
  const task = v.tasks.find((t: { task: { task_id: string } }) => t.task.task_id === "grr-longitudinal").task;
  const honest = parseTask(task);
  const stingy = { ...task.derived, T_i: task.derived.T_i - 1000 };
  assert.throws(() => parseTask(changed(task, "derived", stingy)), /epsilon_1/);
  const generous = parseTask(changed(task, "derived", { ...task.derived, T_i: task.derived.T_i + 1000 }));
  assert.ok(generous.epsilon < honest.epsilon);
});

test("LOLOHA's published T_i is checked as §3.9's (§3.13)", { skip }, () => {
  const task = v.tasks.find((t: { task: { task_id: string } }) => t.task.task_id === "grr-loloha").task;
  parseTask(task);
  const stingy = { ...task.derived, T_i: task.derived.T_i - 1000 };
  assert.throws(() => parseTask(changed(task, "derived", stingy)), /epsilon_1/);
});
