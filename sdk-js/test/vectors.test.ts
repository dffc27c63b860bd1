// The conformance vectors, bit for bit: tests/protocol/vectors.json (and protocol/vectors.json
// when the repository has it).
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { fromHex, hex, utf8 } from "../src/bytes.js";
import { pythonCanonical, type Json } from "../src/canonical.js";
import { RowHashes, murmur64, splitmix64 } from "../src/hashing.js";
import { FixedWords } from "../src/random.js";
import { GeneralizedRandomizedResponse, RandomizedResponse } from "../src/mechanisms/simple.js";
import { CountMeanSketch, HadamardCountMeanSketch, OptimizedLocalHashing } from "../src/mechanisms/sketch.js";
import { fingerprintOf, parseTask } from "../src/task.js";
import { batchBody, reportText } from "../src/wire.js";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
// The vectors before protocol 1.0 (tests/protocol/) and the published ones (protocol/):
// whichever this tree has; LDP_VECTORS names another published file.
const LEGACY = `${ROOT}tests/protocol/vectors.json`;
const PUBLISHED = process.env["LDP_VECTORS"] ?? `${ROOT}protocol/vectors.json`;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const read = (path: string): any => (existsSync(path) ? JSON.parse(readFileSync(path, "utf8")) : null);
const legacy = read(LEGACY) ?? read(PUBLISHED);

test("a vectors file is there", () => assert.ok(existsSync(LEGACY) || existsSync(PUBLISHED)));

const hex64 = (x: bigint) => x.toString(16).padStart(16, "0");

test("splitmix64 words and row constants", () => {
  const { seed, words } = legacy.splitmix64;
  assert.deepEqual(words.map((_: string, i: number) => hex64(splitmix64(seed, i + 1))), words);
  const rc = legacy.row_constants;
  const hashes = new RowHashes(rc.seed, 2);
  for (let j = 0; j < rc.k; j++) {
    const [a, b] = hashes.constants(j);
    assert.equal(hex64(a), rc.a[j]);
    assert.equal(hex64(b), rc.b[j]);
  }
});

test("MurmurHash3 x64 keys", () => {
  for (const v of legacy.keys) {
    const bytes = v.utf8_hex ?? v.utf8;
    assert.equal(hex(utf8(v.value)), bytes);
    assert.equal(hex64(murmur64(fromHex(bytes), v.seed)), v.key, v.value);
  }
  assert.ok(legacy.keys.length >= 5);
});

test("row buckets", () => {
  for (const v of legacy.buckets) {
    const hashes = new RowHashes(v.seed, v.m);
    const key = murmur64(utf8(v.value), v.seed);
    assert.deepEqual(v.rows.map((_: number, j: number) => hashes.bucket(key, j)), v.rows);
  }
});

test("task canonical form, fingerprint and batch body (before 1.0)", { skip: !existsSync(LEGACY) && "no pre-1.0 vectors" }, () => {
  for (const v of legacy.tasks) {
    const { fingerprint: _, effective_epsilon: __, ...fields } = v.task;
    assert.equal(pythonCanonical(fields as Json), v.canonical_json);
    assert.equal(fingerprintOf(v.task), v.fingerprint);
    const task = parseTask(v.task);
    const sent = JSON.parse(v.batch_body).reports[0];
    const { report_id, fingerprint, time, ...payload } = sent;
    const id = Uint8Array.from({ length: 16 }, (_, i) => i);
    assert.equal(batchBody([reportText(id, fingerprint, time, payload)]), v.batch_body);
    assert.equal(task.fingerprint, fingerprint);
    assert.equal(report_id, "AAECAwQFBgcICQoLDA0ODw");
  }
});

test("thresholds (before 1.0)", { skip: !existsSync(LEGACY) && "no pre-1.0 vectors" }, () => {
  for (const v of legacy.thresholds) {
    assert.equal(RandomizedResponse.fromEpsilon(v.epsilon).no, v.rr_lie);
    assert.equal(new GeneralizedRandomizedResponse(v.epsilon, ["a", "b", "c"]).other, v.grr_d3_other);
    assert.equal(CountMeanSketch.fromEpsilon(v.epsilon, 1, 2, 0).flip, v.cms_flip);
    assert.equal(HadamardCountMeanSketch.fromEpsilon(v.epsilon, 1, 2, 0).flip, v.hcms_flip);
    const olh = OptimizedLocalHashing.fromEpsilon(v.epsilon, 1, 0);
    assert.equal(olh.m, v.olh_g);
    assert.equal(olh.flip, v.olh_other);
  }
});

test("fixed words are taken in order", () => {
  const words = new FixedWords([2 ** 32 - 1, 5, 7]);
  assert.equal(words.below(3), 2);
  assert.equal(words.word(), 7);
});

