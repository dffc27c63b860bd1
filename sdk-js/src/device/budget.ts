/**
 * The keys of the budget (PROTOCOL §4), as the Python SDK's ldp_telemetry.client.budget: per task
 * id and period at most N reports, and the same value in the same period re-queues the report
 * already made, found by a memo key (an HMAC of the device secret, never the value). The device
 * key a task's device-dependent mechanisms derive from (hh levels, PRRs) is bound to the task id.
 */

import { bigEndian, concat, hex, utf8 } from "../bytes.js";
import { hmac } from "../sha256.js";

/** Return the device's key for a task id (HMAC of its secret; hh levels and PRRs derive from it). */
export function deviceKey(secret: Uint8Array, taskId: string): Uint8Array {
  return hmac(secret, utf8(`ldp-telemetry device key\0${taskId}`));
}

/**
 * Return the memo key of a canonical value in a period of a task (binds the fingerprint), and
 * for a task with dimensions in a slice (4 bytes after the value, PROTOCOL §3.10).
 */
export function lookupKey(secret: Uint8Array, fingerprint: string, period: number, value: Uint8Array, slice?: number): string {
  const sliced = slice === undefined ? value : concat(value, bigEndian(slice, 4));
  return hex(hmac(secret, concat(utf8(fingerprint), bigEndian(period, 8), sliced)));
}
