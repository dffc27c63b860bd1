/**
 * numeric (PROTOCOL §3.8): a number is clipped to [lo, hi], mapped to one of d buckets
 * (linearly or on a log scale), and the bucket is privatized by the discretized Square Wave
 * or the one-bit mean.
 */

import { bigEndian } from "../bytes.js";
import { logRatio, roundHalfEven } from "../exact.js";
import { SCALE, thresholdAtLeast, type Words } from "../random.js";
import { type Mechanism, type Payload, TaskError, ValueError, same, tooSmall } from "./base.js";
import { flipThreshold, flipped } from "./simple.js";

/** The range and buckets every numeric method shares. */
abstract class Numeric implements Mechanism<number> {
  private readonly low: number;
  private readonly high: number;

  constructor(
    readonly lo: number,
    readonly hi: number,
    readonly d: number,
    readonly log: boolean,
  ) {
    if (!(lo < hi) || (log && !(lo > 0))) throw new TaskError("numeric needs lo < hi (and lo > 0 on a log scale)");
    this.low = this.forward(lo);
    this.high = this.forward(hi);
  }

  private forward(x: number): number {
    return this.log ? Math.log(x) : x;
  }

  /** Return the bucket of a value (clipped to the range), or throw ValueError. */
  bucketOf(value: unknown): number {
    if (typeof value !== "number" || Number.isNaN(value)) throw new ValueError("a numeric task takes a number");
    const clipped = Math.min(Math.max(value, this.lo), this.hi);
    const unit = (this.forward(clipped) - this.low) / (this.high - this.low);
    return Math.min(Math.trunc(unit * this.d), this.d - 1);
  }

  canonical(value: unknown): Uint8Array {
    return bigEndian(this.bucketOf(value), 4);
  }

  encode(report: number): Payload {
    return { index: report };
  }

  forDevice = same;

  abstract privatize(value: unknown, rng: Words): number;
}

/** Square Wave: d + 2w outputs; the 2w + 1 near the bucket have P words each, the rest T. */
export class SquareWave extends Numeric {
  readonly w: number;
  readonly far: number;
  readonly near: number;
  readonly used: number;

  constructor(epsilon: number, lo: number, hi: number, d: number, log: boolean) {
    super(lo, hi, d, log);
    const e = Math.exp(epsilon);
    const half = (epsilon * e - e + 1) / (2 * e * (e - 1 - epsilon));
    this.w = Math.max(0, roundHalfEven(half * d));
    const nearCount = 2 * this.w + 1;
    this.far = thresholdAtLeast(1 / (nearCount * e + (d - 1)));
    this.near = Math.floor((SCALE - (d - 1) * this.far) / nearCount);
    if (this.near <= this.far) throw tooSmall();
    this.used = (d - 1) * this.far + nearCount * this.near;
  }

  privatize(value: unknown, rng: Words): number {
    const truth = this.bucketOf(value);
    let word = rng.word();
    while (word >= this.used) word = rng.word();
    const lie = (this.d - 1) * this.far;
    if (word < lie) {
      const other = Math.floor(word / this.far);
      return other + (other >= truth ? 2 * this.w + 1 : 0);
    }
    return truth + Math.floor((word - lie) / this.near);
  }
}

/** The one-bit mean: 1 with probability (L + i·S) / 2^32 for bucket i (PROTOCOL §3.8). */
export class OneBitMean extends Numeric {
  readonly lowWords: number;
  readonly step: number;

  constructor(epsilon: number, lo: number, hi: number, d: number) {
    super(lo, hi, d, false);
    const low = thresholdAtLeast(1 / (Math.exp(epsilon) + 1));
    // The first and last buckets (the extreme inputs a device sends) get L and L + (d − 1)S.
    const step = Math.floor((SCALE - 2 * low) / (d - 1));
    if (step < 1) throw tooSmall();
    this.lowWords = low;
    this.step = step;
  }

  privatize(value: unknown, rng: Words): number {
    const bucket = this.bucketOf(value);
    return rng.word() < this.lowWords + bucket * this.step ? 1 : 0;
  }

  // As a longitudinal task's permanent layer (§3.9, protocol 1.1): a bit per bucket, flipped.
  reflip(report: number, threshold: number, rng: Words): number {
    return report ^ (rng.word() < threshold ? 1 : 0);
  }

  irrThreshold(flip: number): number {
    return flipThreshold(flip, 1, this.irrLimit());
  }

  irrLimit(): number {
    return SCALE / 2;
  }

  composedEpsilon(threshold: number): number {
    const [t, all] = [BigInt(threshold), BigInt(SCALE) ** 2n];
    const low = flipped(BigInt(this.lowWords), t);
    const high = flipped(BigInt(this.lowWords + (this.d - 1) * this.step), t);
    return Math.max(logRatio(high, low), logRatio(all - low, all - high));
  }
}
