/**
 * The uploader (PROTOCOL §5): batches of one task's oldest reports sent with fetch,
 * at most 15 requests in flight, `keepalive` while the keepalive bodies in flight stay under
 * 60 KB (what browsers let outlive the page); a resend is byte for byte the same; 413 halves the task's batches;
 * 200, or 202 from a shuffler, delivers;
 * 408, 429, 5xx and network errors (an upload unanswered after `timeout` seconds among them) back off (Retry-After when given, else exponential with
 * jitter); any other 4xx drops the batch; an `outdated_config` rejection refetches the task,
 * an `unknown_seal_key` one revalidates it (the key it was sealed to is retired).
 */

import { Contract } from "./contract.js";
import type { DeviceState, Pending } from "./device/state.js";
import { batchBody, taskPath } from "./wire.js";
import { timeoutSignal } from "./timeout.js";

export const KEEPALIVE_BYTES = 60_000;
export const MAX_IN_FLIGHT = 15;

export interface UploaderOptions {
  endpoint: string;
  uploadKey: string | undefined;
  batchSize: number;
  maxBatchBytes: number;
  backoff: number;
  backoffMax: number;
  /** Seconds before an upload is abandoned (then retried as a network error). */
  timeout: number;
  fetch: typeof fetch;
}

export interface Counters {
  sent: number;
  retries: number;
  failedBatches: number;
  dropped: Record<string, number>;
  rejected: Record<string, number>;
}

/** Return the seconds a Retry-After header asks for (delta-seconds or an HTTP date; at most 600, PROTOCOL §5), or null. */
export function retryAfter(header: string | null, now = Date.now()): number | null {
  if (!header) return null;
  const date = /^\s*\d+\s*$/.test(header) ? now + 1000 * Number(header) : Date.parse(header);
  return Number.isNaN(date) ? null : Math.min(600, Math.max(0, (date - now) / 1000));
}

export class Uploader {
  private readonly inFlight = new Set<string>();
  private requests = 0;
  /** Bytes of keepalive requests in flight: browsers allow 64 KiB in all. */
  private keepaliveBytes = 0;
  private caps = new Map<string, number>();
  private failures = 0;
  /** No request starts before this time (ms): a backoff in progress. */
  waitUntil = 0;

  constructor(
    private readonly state: DeviceState,
    private readonly options: UploaderOptions,
    private readonly counters: Counters,
    private readonly outdated: (taskId: string) => void,
    private readonly unknownKey: (taskId: string) => void = () => {},
  ) {}

  /** Return whether nothing is queued or being sealed. */
  get idle(): boolean {
    return this.state.queue.size === 0 && this.state.sealing.size === 0;
  }

  /** Start as many batches as allowed now (never throws, never waits). */
  pump(force = false): void {
    if (!force && Date.now() < this.waitUntil) return;
    while (this.requests < MAX_IN_FLIGHT) {
      const batch = this.nextBatch();
      if (!batch.length) return;
      void this.send(batch);
    }
  }

  private nextBatch(): Pending[] {
    const { batchSize, maxBatchBytes } = this.options;
    const batch: Pending[] = [];
    let bytes = 16;
    for (const pending of this.state.queue.values()) {
      if (this.inFlight.has(pending.id) || (batch.length && pending.taskId !== batch[0]!.taskId)) continue;
      const cap = this.caps.get(pending.taskId) ?? batchSize;
      bytes += pending.text.length + 1;
      if (batch.length >= cap || (batch.length && bytes > maxBatchBytes)) break;
      batch.push(pending);
    }
    return batch;
  }

  private async send(batch: Pending[]): Promise<void> {
    const ids = batch.map((p) => p.id);
    ids.forEach((id) => this.inFlight.add(id));
    this.requests++;
    const taskId = batch[0]!.taskId;
    const body = batchBody(batch.map((p) => p.text));
    const headers: Record<string, string> = { "Content-Type": "application/json", [Contract.PROTOCOL_HEADER]: Contract.PROTOCOL_VERSION };
    if (this.options.uploadKey) headers["Authorization"] = `Bearer ${this.options.uploadKey}`;
    // keepalive lets the request outlive the page; past the browsers' quota it would fail.
    const keepalive = this.keepaliveBytes + body.length < KEEPALIVE_BYTES;
    if (keepalive) this.keepaliveBytes += body.length;
    try {
      const url = this.options.endpoint + taskPath(Contract.UPLOAD_PATH, taskId);
      const signal = timeoutSignal(this.options.timeout);
      const response = await this.options.fetch(url, { method: "POST", headers, body, keepalive, signal });
      await this.settle(batch, response);
    } catch {
      this.retry(null);
    } finally {
      ids.forEach((id) => this.inFlight.delete(id));
      this.requests--;
      if (keepalive) this.keepaliveBytes -= body.length;
    }
  }

  private async settle(batch: Pending[], response: Response): Promise<void> {
    const status = response.status;
    const ids = batch.map((p) => p.id);
    // 202: a shuffler spooled the reports (PROTOCOL §2: a client treats 202 as 200).
    if (status === 200 || status === 202) {
      this.failures = 0;
      this.account(batch, await response.json().catch(() => ({})));
      this.state.remove(ids);
    } else if (status === 413 && batch.length > 1) {
      this.caps.set(batch[0]!.taskId, batch.length >> 1);
    } else if (status === 408 || status === 429 || status >= 500) {
      this.retry(retryAfter(response.headers.get("Retry-After")));
    } else {
      this.counters.dropped["batch_rejected"] = (this.counters.dropped["batch_rejected"] ?? 0) + batch.length;
      this.counters.failedBatches++;
      this.state.remove(ids);
    }
  }

  private account(batch: Pending[], answer: { accepted?: unknown; rejected?: unknown }): void {
    const rejected = Array.isArray(answer.rejected) ? answer.rejected : [];
    let delivered = typeof answer.accepted === "number" ? answer.accepted : batch.length;
    for (const item of rejected) {
      const reason = String((item as { reason?: unknown })?.reason);
      if (reason === Contract.REPORT_REPLAYED) delivered++;
      else this.counters.rejected[reason] = (this.counters.rejected[reason] ?? 0) + 1;
      if (reason === Contract.OUTDATED_CONFIG) this.outdated(batch[0]!.taskId);
      if (reason === Contract.UNKNOWN_SEAL_KEY) this.unknownKey(batch[0]!.taskId); // a retired key: fetch the new one
    }
    this.counters.sent += delivered;
  }

  private retry(seconds: number | null): void {
    this.counters.retries++;
    // Batches failing together (one outage) lengthen the backoff once, not once each.
    if (Date.now() >= this.waitUntil) this.failures++;
    const { backoff, backoffMax } = this.options;
    const wait = seconds ?? Math.min(backoffMax, backoff * 2 ** (this.failures - 1)) * (0.5 + Math.random());
    this.waitUntil = Math.max(this.waitUntil, Date.now() + wait * 1000);
  }
}
