/**
 * Sources of uniform 32-bit words (PROTOCOL §3): the platform's CSPRNG
 * (crypto.getRandomValues) for every report, HMAC-DRBG (NIST SP 800-90A, SHA-256, no
 * reseed) for a longitudinal task's permanent response, and fixed words for the vectors.
 * Every probability is a threshold T on a word w: the event happens when w < T.
 */

import { concat } from "./bytes.js";
import { hmac } from "./sha256.js";

export const SCALE = 2 ** 32;

/** Where a mechanism's random words come from. */
export interface Words {
  /** Return one uniform word in [0, 2^32). */
  word(): number;
  /** Return `count` uniform words. */
  words(count: number): Uint32Array;
  /** Return a uniform integer in [0, n), exactly (rejection sampling), n ≤ 2^32. */
  below(n: number): number;
}

/** Return the largest multiple of n up to 2^32: words from it up are rejected. */
export function rejectionLimit(n: number): number {
  return SCALE - (SCALE % n);
}

/** Return the smallest T with T / 2^32 ≥ p (p·2^32 is exact in doubles). */
export function thresholdAtLeast(p: number): number {
  return Math.ceil(p * SCALE);
}

/** The platform's CSPRNG, read in blocks (one getRandomValues call per ~1,024 words). */
export class SecureWords implements Words {
  private pool = new Uint32Array(0);
  private used = 0;

  word(): number {
    if (this.used >= this.pool.length) {
      this.pool = crypto.getRandomValues(new Uint32Array(1024));
      this.used = 0;
    }
    return this.pool[this.used++]!;
  }

  words(count: number): Uint32Array {
    const out = new Uint32Array(count);
    for (let at = 0; at < count; at += 16384) crypto.getRandomValues(out.subarray(at, at + 16384));
    return out;
  }

  below(n: number): number {
    const limit = rejectionLimit(n);
    for (;;) {
      const w = this.word();
      if (w < limit) return w % n;
    }
  }
}

/** Return `size` fresh random bytes from the CSPRNG (report ids, device secrets). */
export function randomBytes(size: number): Uint8Array {
  return crypto.getRandomValues(new Uint8Array(size));
}

/**
 * HMAC-DRBG with SHA-256, instantiated from `seed` (entropy ‖ nonce ‖ personalization).
 * Every draw is one generate call; below(n) takes calls of 5 words until one is below
 * the rejection limit (PROTOCOL §3.9), as the reference implementation does.
 */
export class KeyedStream implements Words {
  private k: Uint8Array = new Uint8Array(32);
  private v: Uint8Array = new Uint8Array(32).fill(1);

  constructor(seed: Uint8Array) {
    this.update(seed);
  }

  private update(provided?: Uint8Array): void {
    const extra = provided ?? new Uint8Array(0);
    this.k = hmac(this.k, concat(this.v, Uint8Array.of(0), extra));
    this.v = hmac(this.k, this.v);
    if (provided && provided.length) {
      this.k = hmac(this.k, concat(this.v, Uint8Array.of(1), provided));
      this.v = hmac(this.k, this.v);
    }
  }

  /** Return the next `size` bytes: one generate call. */
  bytes(size: number): Uint8Array {
    const out = new Uint8Array(Math.ceil(size / 32) * 32);
    for (let at = 0; at < size; at += 32) {
      this.v = hmac(this.k, this.v);
      out.set(this.v, at);
    }
    this.update();
    return out.subarray(0, size);
  }

  words(count: number): Uint32Array {
    const raw = this.bytes(4 * count);
    const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
    const out = new Uint32Array(count);
    for (let i = 0; i < count; i++) out[i] = view.getUint32(4 * i, true);
    return out;
  }

  word(): number {
    return this.words(1)[0]!;
  }

  below(n: number): number {
    const limit = rejectionLimit(n);
    for (;;) {
      for (const w of this.words(5)) if (w < limit) return w % n;
    }
  }
}

/** Words given in advance, taken in order (conformance vectors); below() takes one at a time. */
export class FixedWords implements Words {
  private at = 0;

  constructor(private readonly given: ArrayLike<number>) {}

  /** Return how many words were taken. */
  get used(): number {
    return this.at;
  }

  word(): number {
    if (this.at >= this.given.length) throw new RangeError("the fixed words ran out");
    return this.given[this.at++]!;
  }

  words(count: number): Uint32Array {
    const out = new Uint32Array(count);
    for (let i = 0; i < count; i++) out[i] = this.word();
    return out;
  }

  below(n: number): number {
    const limit = rejectionLimit(n);
    for (;;) {
      const w = this.word();
      if (w < limit) return w % n;
    }
  }
}
