/**
 * oue and ss (PROTOCOL §3.11, §3.12): a report names a set of domain values. Symbols: d the
 * domain size, i the value's index, ω the subset size (Wang et al., USENIX Security 2017;
 * Ye and Barg, IEEE Trans. Inf. Theory 2018).
 */

import { base64url } from "../bytes.js";
import { SCALE, thresholdAtLeast, type Words } from "../random.js";
import { type Mechanism, type Payload, tooSmall } from "./base.js";
import { Domain } from "./simple.js";
import { packBelow } from "./sketch.js";

/** Optimized unary encoding: d bits, bit i kept with `keep` = 2^31, the others set with `other`. */
export class OptimizedUnaryEncoding extends Domain implements Mechanism<Uint8Array> {
  readonly keep = SCALE / 2;
  readonly other: number;

  constructor(epsilon: number, domain: readonly string[]) {
    super(domain);
    this.other = thresholdAtLeast(1 / (Math.exp(epsilon) + 1));
    if (SCALE - this.other <= this.other) throw tooSmall();
  }

  /** Draw d words (bit j: r_j < other), then one for bit i (r < keep); r_i goes unused. */
  privatize(value: unknown, rng: Words): Uint8Array {
    const i = this.indexOf(value);
    const words = rng.words(this.d);
    // In place of r_i, a word below every threshold (bit i set) or above them all.
    words[i] = rng.word() < this.keep ? 0 : SCALE - 1;
    return packBelow(words, this.other);
  }

  encode(bits: Uint8Array): Payload {
    return { bits: base64url(bits) };
  }
}

/** Subset selection: ω of the d values, holding i unless a word is below `exclude`. */
export class SubsetSelection extends Domain implements Mechanism<number[]> {
  /** ω = max(1, ⌊d/(e^ε + 1) + ½⌋), at most d − 1. */
  readonly size: number;
  readonly exclude: number;

  constructor(epsilon: number, domain: readonly string[]) {
    super(domain);
    const [d, e] = [this.d, Math.exp(epsilon)];
    const w = (this.size = Math.min(d - 1, Math.max(1, Math.floor(d / (e + 1) + 0.5))));
    this.exclude = thresholdAtLeast((d - w) / (w * e + d - w));
    // Exact in doubles: both sides are below 2^44 (d ≤ 4,096).
    if ((SCALE - this.exclude) * (d - w) <= this.exclude * w) throw tooSmall();
  }

  /** Draw the include word, then the others by Floyd's algorithm; the indices sorted. */
  privatize(value: unknown, rng: Words): number[] {
    const i = this.indexOf(value);
    const include = rng.word() >= this.exclude;
    const chosen = new Set<number>();
    for (let j = this.d - 1 - this.size + (include ? 1 : 0); j < this.d - 1; j++) {
      const t = rng.below(j + 1);
      chosen.add(chosen.has(t) ? j : t);
    }
    const indices = [...chosen].map((c) => (c >= i ? c + 1 : c));
    if (include) indices.push(i);
    return indices.sort((a, b) => a - b);
  }

  encode(indices: number[]): Payload {
    return { indices };
  }
}
