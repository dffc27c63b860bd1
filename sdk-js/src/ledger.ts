/**
 * The device's budget rule and its bounded queue (PROTOCOL §4, as the Python SDK's
 * client/budget.py and client/storage.py): per task id and period at most `limit` reports;
 * the same value in the same period re-queues the report already made (same id, same
 * noise), found by an HMAC memo key, never by the value. Only encoded reports are kept.
 */

import { bigEndian, concat, hex, utf8 } from "./bytes.js";
import { hmac } from "./sha256.js";

/** One encoded report waiting for upload. */
export interface Pending {
  taskId: string;
  id: string;
  text: string;
}

/** A period of one task id: what was reported in it, by memo key. */
export interface Period {
  start: number;
  end: number;
  memo: Map<string, Pending>;
}

export type Admission = "new" | "reused" | "budget_exhausted" | "queue_full";

/** Return the device's key for a task id (HMAC of its secret; hh levels and PRRs derive from it). */
export function deviceKey(secret: Uint8Array, taskId: string): Uint8Array {
  return hmac(secret, utf8(`ldp-telemetry device key\0${taskId}`));
}

/** Return the memo key of a canonical value in a period of a task (binds the fingerprint). */
export function lookupKey(secret: Uint8Array, fingerprint: string, period: number, value: Uint8Array): string {
  return hex(hmac(secret, concat(utf8(fingerprint), bigEndian(period, 8), value)));
}

/** What a ledger change must persist (IndexedDB in browsers; nothing in memory). */
export interface Persist {
  /** A new report in the ledger: its task id, period and memo key. */
  remembered(taskId: string, start: number, end: number, lookup: string, pending: Pending): void;
  /** The task's periods that ended before `before` are forgotten. */
  forgotten(taskId: string, before: number): void;
  queued(pending: Pending): void;
  removed(ids: string[]): void;
}

/** The ledger of reports made per task id and period, and the queue of undelivered ones. */
export class Ledger {
  readonly queue = new Map<string, Pending>();
  readonly periods = new Map<string, Period[]>();
  private bytes = 0;

  constructor(
    private readonly maxQueue: number,
    private readonly maxBytes: number,
    private readonly persist: Persist,
  ) {}

  /** Queue the slot's memoized report, or a new one from make() while the budget allows. */
  admit(taskId: string, start: number, end: number, lookup: string, limit: number, make: () => Pending): Admission {
    const periods = this.periods.get(taskId) ?? [];
    const earlier = periods.find((p) => p.start === start && p.end === end)?.memo.get(lookup);
    if (earlier) return this.enqueue(earlier) ? "reused" : "queue_full";
    // Periods overlapping this one, whatever the task's configuration was: a task
    // re-published under the same id gives no fresh budget.
    let spent = 0;
    for (const p of periods) if (p.start < end && p.end > start) spent += p.memo.size;
    if (spent >= limit) return "budget_exhausted";
    if (!this.hasRoom(0)) return "queue_full";
    const pending = make();
    if (!this.enqueue(pending)) return "queue_full";
    const kept = periods.filter((p) => p.end > start);
    if (kept.length < periods.length) this.persist.forgotten(taskId, start);
    let period = kept.find((p) => p.start === start && p.end === end);
    if (!period) kept.push((period = { start, end, memo: new Map() }));
    period.memo.set(lookup, pending);
    this.periods.set(taskId, kept);
    this.persist.remembered(taskId, start, end, lookup, pending);
    return "new";
  }

  private hasRoom(size: number): boolean {
    return this.queue.size < this.maxQueue && this.bytes + size <= this.maxBytes;
  }

  /** Put back a report the ledger held before (restored from storage). */
  restore(taskId: string, start: number, end: number, lookup: string, pending: Pending): void {
    const periods = this.periods.get(taskId) ?? [];
    let period = periods.find((p) => p.start === start && p.end === end);
    if (!period) periods.push((period = { start, end, memo: new Map() }));
    period.memo.set(lookup, pending);
    this.periods.set(taskId, periods);
  }

  /** Queue a report (a no-op if queued); false if it does not fit. */
  enqueue(pending: Pending, persist = true): boolean {
    if (this.queue.has(pending.id)) return true;
    if (!this.hasRoom(pending.text.length)) return false;
    this.queue.set(pending.id, pending);
    this.bytes += pending.text.length;
    if (persist) this.persist.queued(pending);
    return true;
  }

  /** Forget delivered (or definitively refused) reports. */
  remove(ids: string[]): void {
    for (const id of ids) {
      const pending = this.queue.get(id);
      if (pending) {
        this.queue.delete(id);
        this.bytes -= pending.text.length;
      }
    }
    this.persist.removed(ids);
  }

  /** Drop every queued report (the ledger stays); return how many there were. */
  clear(): number {
    const ids = [...this.queue.keys()];
    this.remove(ids);
    return ids.length;
  }
}
