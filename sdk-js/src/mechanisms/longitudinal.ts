/**
 * Longitudinal tasks (PROTOCOL §3.9): a permanent response per value, drawn from HMAC-DRBG
 * keyed by the device's task key, the task's mechanism fields and the value (nothing is
 * stored), re-randomized with fresh CSPRNG words for each report.
 */

import { concat, utf8 } from "../bytes.js";
import { KeyedStream, type Words } from "../random.js";
import { type Mechanism, type Payload, type Permanent, TaskError } from "./base.js";

const CONTEXT = utf8("ldp-telemetry permanent response\0");

/** Return the smallest instantaneous threshold whose one-report ε is at most ε₁. */
export function thresholdFor<R>(permanent: Permanent<R>, epsilon1: number): number {
  let low = 0;
  let high = permanent.irrLimit();
  while (high - low > 1) {
    const middle = Math.floor((low + high) / 2);
    if (permanent.composedEpsilon(middle) <= epsilon1) high = middle;
    else low = middle;
  }
  if (high >= permanent.irrLimit()) throw new TaskError(`longitudinal epsilon_1 ${epsilon1} is too small to implement`);
  return high;
}

/** A mechanism whose reports are a device's permanent responses, re-randomized. */
export class Longitudinal<R> implements Mechanism<R> {
  constructor(
    readonly permanent: Permanent<R>,
    /** The instantaneous layer's threshold T_i. */
    readonly threshold: number,
    /** The canonical JSON of the task's mechanism fields (P of §3.9). */
    readonly identity: string,
    private readonly deviceKey: Uint8Array | null = null,
  ) {}

  canonical(value: unknown): Uint8Array {
    return this.permanent.canonical(value);
  }

  /** Return the device's permanent response for a value (the same every time). */
  permanentResponse(value: unknown): R {
    if (!this.deviceKey) throw new TaskError("the permanent response belongs to a device");
    const seed = concat(this.deviceKey, CONTEXT, utf8(this.identity), Uint8Array.of(0), this.permanent.canonical(value));
    return this.permanent.privatize(value, new KeyedStream(seed));
  }

  privatize(value: unknown, rng: Words): R {
    const permanent = this.deviceKey ? this.permanentResponse(value) : this.permanent.privatize(value, rng);
    return this.permanent.reflip(permanent, this.threshold, rng);
  }

  encode(report: R): Payload {
    return this.permanent.encode(report);
  }

  forDevice(deviceKey: Uint8Array): Longitudinal<R> {
    return new Longitudinal(this.permanent, this.threshold, this.identity, deviceKey);
  }
}
