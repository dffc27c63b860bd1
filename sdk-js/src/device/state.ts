/**
 * The device's state and its rules (PROTOCOL §4), as the Python SDK's ldp_telemetry.client.storage:
 * the budget (budget.ts: per task id and period at most N reports; the same value in the same
 * period re-queues the report already made, same id, same noise, found by an HMAC memo key,
 * never by the value), the privacy ledger the collector cannot reset (privacy-ledger.ts: the
 * permanent configurations adopted per task id (a re-published one refused unless the
 * app's republishedEpsilonInf allows it), the PRRs drawn (by HMAC value key) within the
 * lifetime cap maxEpsilonInf, and the ε of one device period within maxEpsilonPerPeriod.
 * A refused record draws no noise and changes nothing. Only encoded reports are kept.
 *
 * A sealed task's report is made in two steps: admit() decides and charges at once, on the
 * caller's thread, and holds the report's promise in the memo (a repeat of the value in the
 * period is "reused", never a second report); the sealed text is queued and persisted when
 * the promise settles, so storage and the queue only ever see ciphertext.
 */

import { type Charge, type Limits, within } from "./privacy-ledger.js";

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
  memo: Map<string, Pending | Promise<Pending>>;
}

export type Admission =
  | "new"
  | "reused"
  | "config_changed"
  | "budget_exhausted"
  | "epsilon_exhausted"
  | "epsilon_inf_exhausted"
  | "queue_full";

/** What a change of the device's state must persist (IndexedDB in browsers; nothing in memory). */
export interface Persist {
  /** A new report in the budget: its task id, period and memo key. */
  remembered(taskId: string, start: number, end: number, lookup: string, pending: Pending): void;
  /** The task's periods that ended before `before` are forgotten. */
  forgotten(taskId: string, before: number): void;
  /** The task's adopted permanent configurations (C, ε∞), in order. */
  adopted(taskId: string, configurations: [string, number][]): void;
  /** A PRR was drawn (key: task id, configuration, value key) spending ε∞. */
  drew(key: string, epsilonInf: number): void;
  /** The ε spent in the current device period. */
  spent(period: number, epsilon: number): void;
  queued(pending: Pending): void;
  removed(ids: string[]): void;
}

/**
 * The budget (the reports made per task id and period), the privacy ledger (configurations
 * adopted, PRRs drawn, ε of the device period) and the queue of undelivered reports.
 */
export class DeviceState {
  readonly queue = new Map<string, Pending>();
  /** The budget: per task id, its periods overlapping the present and their memo. */
  readonly budget = new Map<string, Period[]>();
  readonly configurations = new Map<string, [string, number][]>();
  readonly drawn = new Map<string, number>();
  /** Reports being sealed: queued when sealed (flush waits for them). */
  readonly sealing = new Set<Promise<Pending>>();
  period = { start: 0, epsilon: 0 };
  private lifetime = 0;
  /** Bumped by clear(): a report sealed after it is not queued. */
  private cleared = 0;
  private bytes = 0;

  constructor(
    private readonly maxQueue: number,
    private readonly maxBytes: number,
    private readonly persist: Persist,
    /** A sealed report was lost: it did not seal, or the queue had no room when it had. */
    private readonly lost: (reason: string) => void = () => {},
  ) {}

  /** Apply the device rules (PROTOCOL §4, in its order) to a record; make() privatizes it. */
  admit(taskId: string, start: number, end: number, lookup: string, charge: Charge, limits: Limits, make: () => Pending | Promise<Pending>): Admission {
    const periods = this.budget.get(taskId) ?? [];
    const earlier = periods.find((p) => p.start === start && p.end === end)?.memo.get(lookup);
    if (earlier instanceof Promise) return "reused"; // still being sealed: queued when it is
    if (earlier) return this.enqueue(earlier) ? "reused" : "queue_full";
    const permanent = charge.permanent;
    const adopt = this.adopts(taskId, charge, limits);
    if (adopt === null) return "config_changed";
    // Periods overlapping this one, whatever the task's configuration was: a task
    // re-published under the same id gives no fresh budget.
    let spent = 0;
    for (const p of periods) if (p.start < end && p.end > start) spent += p.memo.size;
    if (spent >= limits.reportsPerPeriod) return "budget_exhausted";
    const periodEpsilon = this.period.start === charge.period ? this.period.epsilon : 0;
    if (!within(periodEpsilon, charge.epsilon, limits.maxEpsilonPerPeriod)) return "epsilon_exhausted";
    const drawKey = permanent && `${taskId}\0${permanent.configuration}\0${permanent.valueKey}`;
    const newPrr = permanent && drawKey && !this.drawn.has(drawKey) ? permanent : null;
    if (newPrr && !within(this.lifetime, newPrr.epsilonInf, limits.maxEpsilonInf)) return "epsilon_inf_exhausted";
    if (!this.hasRoom(0)) return "queue_full"; // before privatizing: no noise drawn for nothing
    const pending = make();
    if (pending instanceof Promise) this.seal(taskId, start, end, lookup, pending, periods);
    else if (!this.enqueue(pending)) return "queue_full";
    else this.remember(taskId, start, end, lookup, pending, periods);
    if (adopt && permanent) {
      const list = [...(this.configurations.get(taskId) ?? []), [permanent.configuration, permanent.epsilonInf] as [string, number]];
      this.configurations.set(taskId, list);
      this.persist.adopted(taskId, list);
    }
    if (newPrr && drawKey) {
      this.drawn.set(drawKey, newPrr.epsilonInf);
      this.lifetime += newPrr.epsilonInf;
      this.persist.drew(drawKey, newPrr.epsilonInf);
    }
    this.period = { start: charge.period, epsilon: periodEpsilon + charge.epsilon };
    this.persist.spent(this.period.start, this.period.epsilon);
    return "new";
  }

  /** Return whether a record adopts its configuration: true, false (known) or null (refused). */
  private adopts(taskId: string, charge: Charge, limits: Limits): boolean | null {
    // Decided from the task's configurations only, never from the value.
    const adopted = this.configurations.get(taskId) ?? [];
    const permanent = charge.permanent;
    if (!permanent) return adopted.length ? null : false; // a permanent layer is never dropped
    if (!adopted.length) return true;
    if (adopted.some(([configuration]) => configuration === permanent.configuration)) return false;
    const later = adopted.slice(1).reduce((sum, [, epsilonInf]) => sum + epsilonInf, 0);
    return within(later, permanent.epsilonInf, limits.republishedEpsilonInf) ? true : null;
  }

  private remember(taskId: string, start: number, end: number, lookup: string, pending: Pending | Promise<Pending>, periods: Period[]): Period {
    const kept = periods.filter((p) => p.end > start);
    if (kept.length < periods.length) this.persist.forgotten(taskId, start);
    let period = kept.find((p) => p.start === start && p.end === end);
    if (!period) kept.push((period = { start, end, memo: new Map() }));
    period.memo.set(lookup, pending);
    this.budget.set(taskId, kept);
    if (!(pending instanceof Promise)) this.persist.remembered(taskId, start, end, lookup, pending);
    return period;
  }

  /** Hold a report being sealed in the memo; queue and persist it once sealed. */
  private seal(taskId: string, start: number, end: number, lookup: string, sealing: Promise<Pending>, periods: Period[]): void {
    const period = this.remember(taskId, start, end, lookup, sealing, periods);
    const cleared = this.cleared;
    this.sealing.add(sealing);
    sealing
      .then(
        (pending) => {
          if (period.memo.get(lookup) === sealing) period.memo.set(lookup, pending);
          this.persist.remembered(taskId, start, end, lookup, pending);
          if (cleared !== this.cleared) this.lost("disabled");
          else if (!this.enqueue(pending)) this.lost("queue_full");
        },
        () => {
          // Its budget stays spent (the safe side); a repeat of the value makes a new report.
          if (period.memo.get(lookup) === sealing) period.memo.delete(lookup);
          this.lost("seal_failed");
        },
      )
      .finally(() => this.sealing.delete(sealing));
  }

  /** Put back what the privacy ledger held (restored from storage). */
  restorePrivacyLedger(configurations: Record<string, [string, number][]>, drawn: Record<string, number>, period: { start: number; epsilon: number } | undefined): void {
    for (const [taskId, list] of Object.entries(configurations)) this.configurations.set(taskId, list);
    for (const [key, epsilonInf] of Object.entries(drawn)) {
      this.drawn.set(key, epsilonInf);
      this.lifetime += epsilonInf;
    }
    if (period) this.period = period;
  }

  private hasRoom(size: number): boolean {
    return this.queue.size < this.maxQueue && this.bytes + size <= this.maxBytes;
  }

  /** Put back a report the budget held before (restored from storage). */
  restoreBudget(taskId: string, start: number, end: number, lookup: string, pending: Pending): void {
    const periods = this.budget.get(taskId) ?? [];
    let period = periods.find((p) => p.start === start && p.end === end);
    if (!period) periods.push((period = { start, end, memo: new Map() }));
    period.memo.set(lookup, pending);
    this.budget.set(taskId, periods);
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

  /** Drop every queued report (the budget and the privacy ledger stay); return how many there were. */
  clear(): number {
    this.cleared++;
    const ids = [...this.queue.keys()];
    this.remove(ids);
    return ids.length;
  }
}
