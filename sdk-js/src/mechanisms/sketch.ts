/** cms, hcms and olh (PROTOCOL §3.4–§3.6): a row j, the value's bucket h_j(key), noise. */

import { base64url, utf8 } from "../bytes.js";
import { logRatio } from "../exact.js";
import { RowHashes, murmur64 } from "../hashing.js";
import { SCALE, thresholdAtLeast, type Words } from "../random.js";
import { type Payload, type Permanent, TaskError, same, text, tooSmall } from "./base.js";
import { flipThreshold, flipped, otherValue } from "./simple.js";

const S = BigInt(SCALE);

/** What the sketches share: k rows, the hash family, a flip threshold and its ε. */
abstract class Sketch<R> implements Permanent<R> {
  readonly hashes: RowHashes;
  /** Coordinates in which two values' reports differ before noise (cms: 2). */
  protected changes = 1;

  constructor(
    readonly k: number,
    readonly m: number,
    readonly seed: number,
    readonly flip: number,
  ) {
    this.hashes = new RowHashes(seed, m);
    if (SCALE - flip <= flip) throw tooSmall();
  }

  /** Return the task's 64-bit key of a value's bytes. */
  key(bytes: Uint8Array): bigint {
    return murmur64(bytes, this.seed);
  }

  canonical(value: unknown): Uint8Array {
    return utf8(text(value));
  }

  privatize(value: unknown, rng: Words): R {
    return this.privatizeBytes(utf8(text(value)), rng);
  }

  abstract privatizeBytes(bytes: Uint8Array, rng: Words): R;
  abstract encode(report: R): Payload;
  abstract reflip(report: R, threshold: number, rng: Words): R;

  forDevice = same;

  irrThreshold(flip: number): number {
    return flipThreshold(flip, 1, this.irrLimit());
  }

  irrLimit(): number {
    return SCALE / 2;
  }

  composedEpsilon(threshold: number): number {
    const now = flipped(BigInt(this.flip), BigInt(threshold));
    return this.changes * logRatio(S * S - now, now);
  }
}

export interface SketchReport {
  row: number;
  bits: Uint8Array;
}

/** Apple's count-mean sketch: a row and m bits, each flipped with T = ceil(2^32/(1+e^(ε/2))). */
export class CountMeanSketch extends Sketch<SketchReport> {
  protected override changes = 2;

  static fromEpsilon(epsilon: number, k: number, m: number, seed: number): CountMeanSketch {
    return new CountMeanSketch(k, m, seed, thresholdAtLeast(1 / (1 + Math.exp(epsilon / 2))));
  }

  privatizeBytes(bytes: Uint8Array, rng: Words): SketchReport {
    const key = this.key(bytes);
    const row = rng.below(this.k);
    const bits = packBelow(rng.words(this.m), this.flip);
    const bucket = this.hashes.bucket(key, row);
    bits[bucket >> 3]! ^= 0x80 >> (bucket & 7);
    return { row, bits };
  }

  encode(report: SketchReport): Payload {
    return { row: report.row, bits: base64url(report.bits) };
  }

  reflip(report: SketchReport, threshold: number, rng: Words): SketchReport {
    const flips = packBelow(rng.words(this.m), threshold);
    return { row: report.row, bits: report.bits.map((byte, i) => byte ^ flips[i]!) };
  }
}

/** Return the flags word < T packed most significant bit first (np.packbits order). */
export function packBelow(words: Uint32Array, threshold: number): Uint8Array {
  const out = new Uint8Array((words.length + 7) >> 3);
  for (let i = 0; i < words.length; i++) if (words[i]! < threshold) out[i >> 3]! |= 0x80 >> (i & 7);
  return out;
}

export interface HadamardReport {
  row: number;
  col: number;
  bit: number;
}

function parity(x: number): number {
  let p = 0;
  for (; x; x &= x - 1) p ^= 1;
  return p;
}

/** Hadamard count-mean sketch: a row, a column and one sign bit. */
export class HadamardCountMeanSketch extends Sketch<HadamardReport> {
  static fromEpsilon(epsilon: number, k: number, m: number, seed: number): HadamardCountMeanSketch {
    if (m & (m - 1)) throw new TaskError("hcms needs m a power of two");
    return new HadamardCountMeanSketch(k, m, seed, thresholdAtLeast(1 / (1 + Math.exp(epsilon))));
  }

  privatizeBytes(bytes: Uint8Array, rng: Words): HadamardReport {
    const key = this.key(bytes);
    const row = rng.below(this.k);
    const col = rng.below(this.m);
    const plus = parity(col & this.hashes.bucket(key, row)) === 0;
    const flipped = rng.word() < this.flip;
    return { row, col, bit: plus !== flipped ? 1 : 0 };
  }

  encode(report: HadamardReport): Payload {
    return { row: report.row, col: report.col, bit: report.bit };
  }

  reflip(report: HadamardReport, threshold: number, rng: Words): HadamardReport {
    return { ...report, bit: report.bit ^ (rng.word() < threshold ? 1 : 0) };
  }
}

export interface HashedReport {
  row: number;
  index: number;
}

/** Optimized local hashing: g = max(2, floor(e^ε) + 1) buckets (≤ 65,536), then GRR over them. */
export class OptimizedLocalHashing extends Sketch<HashedReport> {
  static fromEpsilon(epsilon: number, k: number, seed: number): OptimizedLocalHashing {
    const e = Math.exp(epsilon);
    const g = Math.min(65536, Math.max(2, Math.floor(e) + 1));
    const other = thresholdAtLeast(1 / (e + g - 1));
    if (SCALE - (g - 1) * other <= other) {
      throw tooSmall();
    }
    return new OptimizedLocalHashing(k, g, seed, other);
  }

  privatizeBytes(bytes: Uint8Array, rng: Words): HashedReport {
    const key = this.key(bytes);
    const row = rng.below(this.k);
    const word = rng.word();
    const truth = this.hashes.bucket(key, row);
    const lie = word < (this.m - 1) * this.flip;
    return { row, index: lie ? otherValue(truth, word, this.flip) : truth };
  }

  encode(report: HashedReport): Payload {
    return { row: report.row, index: report.index };
  }

  reflip(): HashedReport {
    throw new TaskError("olh takes no longitudinal option");
  }
}
