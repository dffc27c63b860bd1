/** Reports and batches on the wire (PROTOCOL §2). */

import { base64url } from "./bytes.js";
import type { DimensionValues } from "./device/dimensions.js";
import type { Payload } from "./mechanisms/base.js";

/** Return one report's compact JSON text: the common fields, a dimensions task's `dims` (§11), then the payload. */
export function reportText(reportId: Uint8Array, fingerprint: string, time: number, payload: Payload, dims?: DimensionValues): string {
  return JSON.stringify({ report_id: base64url(reportId), fingerprint, time, ...(dims && { dims }), ...payload });
}

/** Return a batch body from report texts (the one place a batch is framed). */
export function batchBody(reports: readonly string[]): string {
  return `{"reports":[${reports.join(",")}]}`;
}

/** Return a path of the contract (contract.ts) with the task id in place, percent-encoded
 * (so holding no `$` that replace() would read as a pattern). */
export function taskPath(path: string, taskId: string): string {
  return path.replace("{task_id}", encodeURIComponent(taskId));
}

/** Return the start of the time bucket holding `seconds`. */
export function floorTime(seconds: number, precision: number): number {
  return Math.floor(seconds / precision) * precision;
}
