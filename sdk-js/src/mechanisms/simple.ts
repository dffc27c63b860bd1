/** rr and grr (PROTOCOL §3.2, §3.3): one word decides the report; what the domain kinds share. */

import { bigEndian } from "../bytes.js";
import { logRatio } from "../exact.js";
import { SCALE, thresholdAtLeast, type Words } from "../random.js";
import { type Payload, type Permanent, TaskError, ValueError, same, tooSmall } from "./base.js";

const S = BigInt(SCALE);

/** Return a yes/no value (a boolean, or 0 / 1) or throw ValueError. */
function answer(value: unknown): boolean {
  if (typeof value === "boolean") return value;
  if (value === 0 || value === 1) return value === 1;
  throw new ValueError("randomized response takes a boolean");
}

/** Return P(1) after a bit that is 1 with p/2^32 flips with t/2^32, over 2^64. */
export function flipped(p: bigint, t: bigint): bigint {
  return p * (S - t) + (S - p) * t;
}

/** Return the threshold of a flip probability, 0 < T < limit (§3.9). */
export function flipThreshold(flip: number, ways: number, limit: number): number {
  const threshold = flip > 0 ? thresholdAtLeast(flip / ways) : 0;
  if (!(threshold > 0 && threshold < limit)) {
    throw new TaskError(`longitudinal flip must be above 0 and below ${(ways * limit) / SCALE}`);
  }
  return threshold;
}

/** Binary randomized response: a yes answers 1 when w < yes, a no when w < no. */
export class RandomizedResponse implements Permanent<number> {
  constructor(
    readonly yes: number,
    readonly no: number,
  ) {
    if (yes <= no) throw tooSmall();
  }

  /** Return rr at ε: the lie threshold L = ceil(2^32 / (1 + e^ε)). */
  static fromEpsilon(epsilon: number): RandomizedResponse {
    const lie = thresholdAtLeast(1 / (1 + Math.exp(epsilon)));
    return new RandomizedResponse(SCALE - lie, lie);
  }

  canonical(value: unknown): Uint8Array {
    return Uint8Array.of(answer(value) ? 1 : 0);
  }

  privatize(value: unknown, rng: Words): number {
    return rng.word() < (answer(value) ? this.yes : this.no) ? 1 : 0;
  }

  encode(report: number): Payload {
    return { bit: report };
  }

  forDevice = same;

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
    const t = BigInt(threshold);
    const yes = flipped(BigInt(this.yes), t);
    const no = flipped(BigInt(this.no), t);
    const all = S * S;
    return Math.max(logRatio(yes, no), logRatio(all - no, all - yes));
  }
}

/** Return the value a lying word names: word div T, skipping the truth. */
export function otherValue(truth: number, word: number, threshold: number): number {
  const other = Math.floor(word / threshold);
  return other + (other >= truth ? 1 : 0);
}

/** The largest domain a task may have (as the reference's grr, oue and ss check). */
const MAX_DOMAIN = 4096;

/** What grr, oue and ss share: the task's domain; a value is its index i, 4 bytes big-endian. */
export abstract class Domain {
  readonly d: number;
  private readonly index: Map<string, number>;

  constructor(readonly domain: readonly string[]) {
    this.d = domain.length;
    this.index = new Map(domain.map((v, i) => [v, i]));
    if (this.d < 2 || this.d > MAX_DOMAIN || this.index.size !== this.d) {
      throw new TaskError(`domain must hold 2 to ${MAX_DOMAIN} distinct strings`);
    }
  }

  indexOf(value: unknown): number {
    const i = typeof value === "string" ? this.index.get(value) : undefined;
    if (i === undefined) throw new ValueError(`value is not in this task's domain of ${this.d} values`);
    return i;
  }

  canonical(value: unknown): Uint8Array {
    return bigEndian(this.indexOf(value), 4);
  }

  forDevice = same;
}

/** Generalized randomized response over the task's domain; a report is an index. */
export class GeneralizedRandomizedResponse extends Domain implements Permanent<number> {
  readonly other: number;

  constructor(epsilon: number, domain: readonly string[]) {
    super(domain);
    this.other = thresholdAtLeast(1 / (Math.exp(epsilon) + this.d - 1));
    if (SCALE - (this.d - 1) * this.other <= this.other) {
      throw tooSmall();
    }
  }

  privatize(value: unknown, rng: Words): number {
    const truth = this.indexOf(value);
    return this.move(truth, rng.word(), this.other);
  }

  private move(truth: number, word: number, threshold: number): number {
    return word < (this.d - 1) * threshold ? otherValue(truth, word, threshold) : truth;
  }

  encode(report: number): Payload {
    return { index: report };
  }

  reflip(report: number, threshold: number, rng: Words): number {
    return this.move(report, rng.word(), threshold);
  }

  irrThreshold(flip: number): number {
    return flipThreshold(flip, this.d - 1, this.irrLimit());
  }

  irrLimit(): number {
    return Math.ceil(SCALE / this.d);
  }

  composedEpsilon(threshold: number): number {
    const d = BigInt(this.d);
    const t = BigInt(threshold);
    const other = BigInt(this.other);
    const keep = S - (d - 1n) * other;
    const stay = S - (d - 1n) * t;
    const keepNow = keep * stay + (d - 1n) * other * t;
    const otherNow = keep * t + other * stay + (d - 2n) * other * t;
    return logRatio(keepNow, otherNow);
  }
}
