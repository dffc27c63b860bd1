/**
 * LOLOHA (PROTOCOL §3.13, protocol 1.1): a grr task's longitudinal variant. The device's row of
 * a public family of `seeds` hashes comes from its key (HMAC-DRBG, nothing stored); the
 * permanent response is drawn per hashed bucket, not per value (GRR over g at ε∞), so a device
 * draws at most g of them for ever; each report re-randomizes it with fresh words (T_i).
 */

import { bigEndian, concat, utf8 } from "../bytes.js";
import { RowHashes, murmur64 } from "../hashing.js";
import { KeyedStream, type Words } from "../random.js";
import { type Mechanism, type Payload, TaskError, int, num } from "./base.js";
import { GeneralizedRandomizedResponse } from "./simple.js";

type Report = { row: number; index: number };
const PERMANENT = utf8("ldp-telemetry permanent response\0");
const ROW = utf8("ldp-telemetry hash row\0");

/** Return the g in 2 … 256 whose rare-value variance is least (§3.13; the smallest on ties). */
function optimalBuckets(epsilonInf: number, epsilon1: number): number {
  const [a, b] = [Math.exp(epsilonInf), Math.exp(epsilon1)];
  let best = 2;
  let least = Infinity;
  for (let g = 2; g <= 256; g++) {
    const [p1, q1] = [a / (a + g - 1), 1 / (a + g - 1)];
    const t = (p1 - b * q1) / (b * (p1 - q1) - (1 - g * p1));
    const keep = p1 + t * (1 - g * p1);
    const variance = ((1 / g) * (1 - 1 / g)) / (keep - 1 / g) ** 2;
    if (variance < least) [best, least] = [g, variance];
  }
  return best;
}

export class Loloha implements Mechanism<Report> {
  readonly hashes: RowHashes;

  constructor(
    readonly domain: GeneralizedRandomizedResponse,
    /** GRR over the g buckets at ε∞: the permanent layer (T), re-randomized with T_i. */
    readonly buckets: GeneralizedRandomizedResponse,
    readonly seeds: number,
    readonly hashSeed: number,
    /** T_i as published (checked against the range; its ε₁ ends in an ln). */
    readonly threshold: number,
    /** The canonical JSON of the task's mechanism fields (F of §3.9). */
    readonly identity: string,
    private readonly deviceKey: Uint8Array | null = null,
  ) {
    this.hashes = new RowHashes(hashSeed, buckets.d);
    if (!(Number.isInteger(threshold) && threshold >= 1 && threshold < buckets.irrLimit())) {
      throw new TaskError("the published T_i is out of range");
    }
  }

  /** Return the layers a task's `longitudinal` option and published T_i define. */
  static fromSpec(domain: GeneralizedRandomizedResponse, spec: Record<string, unknown>, threshold: number, identity: string): Loloha {
    const [epsilonInf, epsilon1] = [num(spec, "epsilon_inf"), num(spec, "epsilon_1")];
    if (!(epsilon1 < epsilonInf)) throw new TaskError("longitudinal epsilon_1 must be below epsilon_inf");
    const g = spec["g"] === "optimal" ? optimalBuckets(epsilonInf, epsilon1) : int(spec, "g", 2, 256);
    const buckets = new GeneralizedRandomizedResponse(epsilonInf, Array.from({ length: g }, (_, i) => String(i)));
    const [seeds, hashSeed] = [int(spec, "seeds", 1, 1 << 16), int(spec, "hash_seed", 0, 2 ** 32 - 1)];
    return new Loloha(domain, buckets, seeds, hashSeed, threshold, identity);
  }

  get g(): number {
    return this.buckets.d;
  }

  /** The permanent responses are this mechanism's own reports. */
  get permanent(): Loloha {
    return this;
  }

  canonical(value: unknown): Uint8Array {
    return this.domain.canonical(value);
  }

  private key(): Uint8Array {
    if (!this.deviceKey) throw new TaskError("the permanent response belongs to a device");
    return this.deviceKey;
  }

  /** Return the device's row (the same for its key and the task, never stored). */
  row(): number {
    return new KeyedStream(concat(this.key(), ROW, utf8(this.identity))).below(this.seeds);
  }

  private bucket(value: unknown, row: number): number {
    const plain = this.domain.domain[this.domain.indexOf(value)]!;
    return this.hashes.bucket(murmur64(utf8(plain), this.hashSeed), row);
  }

  /** Return what the value's permanent response is drawn for (the ledger's key): its bucket. */
  drawnFor(canonical: Uint8Array): Uint8Array {
    const index = new DataView(canonical.buffer, canonical.byteOffset, 4).getUint32(0);
    return bigEndian(this.bucket(this.domain.domain[index], this.row()), 4);
  }

  /** Return the device's permanent response of the value's bucket (the same every time). */
  permanentResponse(value: unknown): Report {
    const row = this.row();
    const bucket = this.bucket(value, row);
    const seed = concat(this.key(), PERMANENT, utf8(this.identity), Uint8Array.of(0), bigEndian(bucket, 4));
    return { row, index: this.buckets.privatize(String(bucket), new KeyedStream(seed)) };
  }

  privatize(value: unknown, rng: Words): Report {
    let report: Report;
    if (this.deviceKey) report = this.permanentResponse(value);
    else {
      const row = rng.below(this.seeds);
      report = { row, index: this.buckets.privatize(String(this.bucket(value, row)), rng) };
    }
    return { row: report.row, index: this.buckets.reflip(report.index, this.threshold, rng) };
  }

  encode(report: Report): Payload {
    return { row: report.row, index: report.index };
  }

  forDevice(deviceKey: Uint8Array): Loloha {
    return new Loloha(this.domain, this.buckets, this.seeds, this.hashSeed, this.threshold, this.identity, deviceKey);
  }
}
