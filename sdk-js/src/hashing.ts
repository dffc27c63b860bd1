/**
 * The task's hash family (PROTOCOL §3.1): a MurmurHash3 x64 key per value and k row
 * hashes by multiply-add-shift with SplitMix64 constants. 64-bit arithmetic in BigInt.
 */

const MASK = (1n << 64n) - 1n;
const C1 = 0x87c37b91114253d5n;
const C2 = 0x4cf5ad432745937fn;

function rotl(x: bigint, r: bigint): bigint {
  return ((x << r) | (x >> (64n - r))) & MASK;
}

function fmix(k: bigint): bigint {
  k ^= k >> 33n;
  k = (k * 0xff51afd7ed558ccdn) & MASK;
  k ^= k >> 33n;
  k = (k * 0xc4ceb9fe1a85ec53n) & MASK;
  return k ^ (k >> 33n);
}

function mixK1(k1: bigint): bigint {
  return (rotl((k1 * C1) & MASK, 31n) * C2) & MASK;
}

function mixK2(k2: bigint): bigint {
  return (rotl((k2 * C2) & MASK, 33n) * C1) & MASK;
}

/** Return the first (low) 64-bit half of MurmurHash3 x64 128 of the bytes, unsigned. */
export function murmur64(data: Uint8Array, seed: number): bigint {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const blocks = data.length >> 4;
  let h1 = BigInt(seed >>> 0);
  let h2 = h1;
  for (let i = 0; i < blocks; i++) {
    const k1 = view.getBigUint64(16 * i, true);
    const k2 = view.getBigUint64(16 * i + 8, true);
    h1 ^= mixK1(k1);
    h1 = (((rotl(h1, 27n) + h2) * 5n) + 0x52dce729n) & MASK;
    h2 ^= mixK2(k2);
    h2 = (((rotl(h2, 31n) + h1) * 5n) + 0x38495ab5n) & MASK;
  }
  const tail = 16 * blocks;
  let k1 = 0n;
  let k2 = 0n;
  for (let i = data.length - 1; i >= tail; i--) {
    const byte = BigInt(data[i]!);
    if (i - tail >= 8) k2 |= byte << BigInt(8 * (i - tail - 8));
    else k1 |= byte << BigInt(8 * (i - tail));
  }
  if (data.length - tail > 8) h2 ^= mixK2(k2);
  if (data.length > tail) h1 ^= mixK1(k1);
  const length = BigInt(data.length);
  h1 ^= length;
  h2 ^= length;
  h1 = (h1 + h2) & MASK;
  h2 = (h2 + h1) & MASK;
  h1 = fmix(h1);
  h2 = fmix(h2);
  return (h1 + h2) & MASK;
}

/** Return word i (1-based) of SplitMix64 started at seed. */
export function splitmix64(seed: number, i: number): bigint {
  let z = (BigInt(seed) + BigInt(i) * 0x9e3779b97f4a7c15n) & MASK;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK;
  return z ^ (z >> 31n);
}

/** The k row hashes h_j: key -> [0, m) of one task (constants computed per row on demand). */
export class RowHashes {
  private readonly rows = new Map<number, [bigint, bigint]>();

  constructor(
    readonly seed: number,
    readonly m: number,
  ) {}

  /** Return (a_j, b_j) of row j. */
  constants(row: number): [bigint, bigint] {
    let pair = this.rows.get(row);
    if (!pair) {
      pair = [splitmix64(this.seed, 2 * row + 1) | 1n, splitmix64(this.seed, 2 * row + 2)];
      if (this.rows.size < 4096) this.rows.set(row, pair);
    }
    return pair;
  }

  /** Return h_row(key). */
  bucket(key: bigint, row: number): number {
    const [a, b] = this.constants(row);
    const top = Number(((a * key + b) & MASK) >> 32n);
    return Number((BigInt(top) * BigInt(this.m)) >> 32n);
  }
}
