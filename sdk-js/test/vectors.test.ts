// The published conformance vectors' hashing cases, bit for bit (protocol/vectors.json, or
// the file LDP_VECTORS names); published.test.ts checks its tasks.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { fromHex, hex, utf8 } from "../src/bytes.js";
import { RowHashes, murmur64, splitmix64 } from "../src/hashing.js";
import { FixedWords } from "../src/random.js";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const PUBLISHED = process.env["LDP_VECTORS"] ?? `${ROOT}protocol/vectors.json`;
test("the vectors file is there", () => assert.ok(existsSync(PUBLISHED), PUBLISHED));
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const legacy: any = existsSync(PUBLISHED) ? JSON.parse(readFileSync(PUBLISHED, "utf8")) : null;

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

test("fixed words are taken in order", () => {
  const words = new FixedWords([2 ** 32 - 1, 5, 7]);
  assert.equal(words.below(3), 2);
  assert.equal(words.word(), 7);
});

