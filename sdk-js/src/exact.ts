/**
 * Exact arithmetic where the reference computes with fractions: the ε of a composed
 * longitudinal channel (PROTOCOL §3.9) is ln of a ratio of big integers, correctly rounded
 * to a double first, as Python's int / int is.
 */

/** Return num / den (positive BigInts) correctly rounded to the nearest double. */
export function ratio(num: bigint, den: bigint): number {
  // Scale so the quotient has at least 56 bits, keep a sticky bit for the remainder, and
  // let Number() round once (to nearest, ties to even).
  const shift = Math.max(0, 56 - (num.toString(2).length - den.toString(2).length));
  const scaled = num << BigInt(shift);
  let q = scaled / den;
  if (q * den !== scaled) q |= 1n;
  const bits = q.toString(2).length;
  const drop = Math.max(0, bits - 64);
  // Dropping bits below the 64 kept is safe: ≥ 55 significant bits remain and the sticky bit
  // stands for what was dropped.
  const kept = drop ? (q >> BigInt(drop)) | (q & ((1n << BigInt(drop)) - 1n) ? 1n : 0n) : q;
  return Number(kept) * 2 ** (drop - shift);
}

/** Return ln(num / den) from the correctly rounded ratio. */
export function logRatio(num: bigint, den: bigint): number {
  return Math.log(ratio(num, den));
}

/** Return round-half-even of x (Python's round()). */
export function roundHalfEven(x: number): number {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/** Return x·2^1074 (x ≥ 0 a finite double) as an exact BigInt. */
export function scaled1074(x: number): bigint {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  const biased = (view.getUint16(0) >> 4) & 0x7ff;
  const fraction = view.getBigUint64(0) & ((1n << 52n) - 1n);
  return biased === 0 ? fraction : (fraction | (1n << 52n)) << BigInt(biased - 1);
}

/** Return ceil(a / b) of positive BigInts. */
export function ceilDiv(a: bigint, b: bigint): bigint {
  return (a + b - 1n) / b;
}
