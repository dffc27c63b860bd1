/**
 * What an app configures, as the Python SDK's ldp_telemetry.client.settings: the options init()
 * takes, checked at once (a bad one is the only thing that throws), and the caps every record
 * is checked against.
 */

import type { Limits } from "./device/privacy-ledger.js";
import type { Store } from "./device/store.js";

export interface Options {
  /** The collector's base URL, e.g. "https://telemetry.example.com". */
  endpoint: string;
  /** The upload key of tasks created with upload_key_required. */
  uploadKey?: string;
  /** Tasks to fetch at once (others are fetched when first recorded, that record dropped). */
  taskIds?: string[];
  /** Task JSON objects to use as given (never fetched). */
  tasks?: Record<string, unknown>[];
  /**
   * This device's dimension values, e.g. { platform: "ios", app_version: "5.2" } (PROTOCOL §11).
   * Sent in the clear, NOT protected by LDP: a task that declares a name gets the value if
   * it lists it, else "other"; names a task does not declare are never sent.
   */
  dimensions?: Record<string, string>;
  /** The 32-byte device secret; default: kept in IndexedDB in a browser, else new per client. */
  secret?: Uint8Array;
  /** The IndexedDB database name, or false for memory only; default "ldp-telemetry" where IndexedDB exists. */
  database?: string | false;
  /** Where the device's state lives instead (Node: `fileStore(dir)` from dist/node.js); overrides `database`. */
  store?: Store;
  /** Reports per task id per period (default 1). */
  reportsPerPeriod?: number;
  /** The ε∞ a task id may spend on permanent configurations after its first (default 0; null: no cap). */
  republishedEpsilonInf?: number | null;
  /** The device's lifetime ε∞ over every permanent response drawn (default 64; null: no cap). */
  maxEpsilonInf?: number | null;
  /** The ε of all new reports in one device period (default null: no cap). */
  maxEpsilonPerPeriod?: number | null;
  /** The device period of maxEpsilonPerPeriod, seconds (default 86,400). */
  epsilonPeriod?: number;
  batchSize?: number;
  maxBatchBytes?: number;
  /** Seconds between uploads of what is queued (default 30). */
  flushInterval?: number;
  maxQueue?: number;
  maxQueueBytes?: number;
  /** First backoff and its cap, seconds (default 0.5 and 30). */
  backoff?: number;
  backoffMax?: number;
  /** Seconds before a request is abandoned as failed (default 60; a task's configuration: at most 10). */
  timeout?: number;
  enabled?: boolean;
  fetch?: typeof fetch;
  /** Unix time in seconds (tests). */
  clock?: () => number;
}

/** Return the caps every record is checked against (throws on a bad option). */
export function limitsOf(options: Options): Limits {
  return {
    reportsPerPeriod: positive("reportsPerPeriod", options.reportsPerPeriod, 1),
    republishedEpsilonInf: cap("republishedEpsilonInf", options.republishedEpsilonInf, 0),
    maxEpsilonInf: cap("maxEpsilonInf", options.maxEpsilonInf, 64),
    maxEpsilonPerPeriod: cap("maxEpsilonPerPeriod", options.maxEpsilonPerPeriod, null),
    epsilonPeriod: positive("epsilonPeriod", options.epsilonPeriod, 86_400),
  };
}

function cap(name: string, value: number | null | undefined, fallback: number | null): number | null {
  const v = value === undefined ? fallback : value;
  if (v !== null && !(typeof v === "number" && v >= 0 && Number.isFinite(v))) {
    throw new TypeError(`ldp-telemetry: ${name} must be a number ≥ 0 or null`);
  }
  return v;
}

export function positive(name: string, value: number | undefined, fallback: number, integer = true): number {
  const v = value ?? fallback;
  if (typeof v !== "number" || !(v > 0) || (integer && !Number.isInteger(v))) {
    throw new TypeError(`ldp-telemetry: ${name} must be a positive ${integer ? "integer" : "number"}`);
  }
  return v;
}
