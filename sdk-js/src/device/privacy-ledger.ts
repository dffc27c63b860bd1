/**
 * The device's privacy ledger (PROTOCOL §4), as the Python SDK's ldp_telemetry.client.privacy_ledger:
 * what a new report spends (its ε in a device period and, for a longitudinal task, maybe a new
 * permanent response, PRR, recorded under an HMAC value key, never the value) and the caps the
 * app sets on it. The rule that applies them, with the budget, is DeviceState.admit (state.ts).
 */

import { concat, hex, utf8 } from "../bytes.js";
import { hmac } from "../sha256.js";

/** The caps the app sets (null lifts one). */
export interface Limits {
  reportsPerPeriod: number;
  republishedEpsilonInf: number | null;
  maxEpsilonInf: number | null;
  maxEpsilonPerPeriod: number | null;
  epsilonPeriod: number;
}

/** What a new report of a record spends: its ε in a device period, maybe a new PRR. */
export interface Charge {
  epsilon: number;
  period: number;
  permanent: { configuration: string; epsilonInf: number; valueKey: string } | null;
}

const TOLERANCE = 1e-9; // ε are floats: a sum equal to its cap is not refused by rounding

export function within(spent: number, cost: number, cap: number | null): boolean {
  return cap === null || spent + cost <= cap + TOLERANCE;
}

/** Return the key a value's PRRs are recorded under (bound to the task id, never the value itself). */
export function valueKey(secret: Uint8Array, taskId: string, value: Uint8Array): string {
  return hex(hmac(secret, concat(utf8(`ldp-telemetry ledger\0${taskId}\0`), value)));
}
