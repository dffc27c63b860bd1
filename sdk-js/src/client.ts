/**
 * The SDK's entry point, as the Python SDK's Client: `record()` privatizes on the caller's
 * thread with the platform's CSPRNG and queues only the encoded report; it never touches
 * the network, never waits and never throws. Task configurations are fetched in the
 * background (a record for a task not known yet is dropped and counted); uploads run from
 * timers and, in a browser, whenever the page is hidden or left. Only a bad configuration
 * throws, from `init()`.
 *
 * A sealed task's record (PROTOCOL §10) privatizes and is charged on the caller's thread as
 * any other; the raw value is not kept past the call. Only the privatized payload is handed
 * to HPKE (async: the lazily loaded ./sealing/hpke.ts), and the sealed text is what is queued, kept
 * and sent. Known tasks are revalidated with their ETag ("<fingerprint>.<key_id>" for a
 * sealed one) when their max-age has passed, so a rotated key is used from then on.
 */

import { base64url } from "./bytes.js";
import { Contract } from "./contract.js";
import { deviceKey, lookupKey } from "./device/budget.js";
import { type DimensionValues, coarsen, sliceOf } from "./device/dimensions.js";
import { type Charge, type Limits, valueKey } from "./device/privacy-ledger.js";
import { DeviceState, type Pending } from "./device/state.js";
import { IndexedDBStore, MemoryStore, type Saved, type Store } from "./device/store.js";
import { ValueError } from "./mechanisms/base.js";
import { SecureWords, randomBytes } from "./random.js";
import { checkSealable, sealedReportText } from "./sealing/seal.js";
import { type Options, limitsOf, positive } from "./settings.js";
import { type Task, parseTask } from "./task.js";
import { timeoutSignal } from "./timeout.js";
import { type Counters, Uploader, retryAfter } from "./uploader.js";
import { floorTime, reportText, taskPath } from "./wire.js";

export type { Options } from "./settings.js";

export interface Stats extends Counters {
  queued: number;
  /** The privacy ledger per task id, for the device's life (the Python SDK's permanent_responses, epsilon_inf):
   * permanent responses drawn (values, or LOLOHA's hashed buckets) and the ε∞ they spent (maxEpsilonInf caps the sum). */
  permanentResponses: Record<string, number>;
  epsilonInf: Record<string, number>;
}

const SECRET_BYTES = 32;
/** A task's max-age without Cache-Control, its cap, and the wait after a failed revalidation (seconds). */
const DEFAULT_MAX_AGE = 60;
const MAX_AGE_CAP = 86_400;
const RETRY_SECONDS = 30;
/** The longest a task request may take, and the least wait before asking again after one failed (seconds). */
const TASK_TIMEOUT = 10;
const TASK_RETRY = 1;

/** Return the seconds a task's copy stays fresh (Cache-Control max-age, capped). */
function maxAge(header: string | null): number {
  const match = /max-age=(\d+)/i.exec(header ?? "");
  return match ? Math.min(Number(match[1]), MAX_AGE_CAP) : DEFAULT_MAX_AGE;
}

export class Client {
  private readonly tasks = new Map<string, Task>();
  private readonly fetching = new Set<string>();
  /** Task ids with a request in flight, and when (ms) one that failed may be asked again. */
  private readonly asking = new Set<string>();
  private readonly notBefore = new Map<string, number>();
  private readonly timeout: number;
  /** A fetched task's ETag and when (clock seconds) to revalidate it. */
  private readonly fresh = new Map<string, { etag: string | null; due: number }>();
  private readonly words = new SecureWords();
  private readonly deviceKeys = new Map<string, Uint8Array>();
  private readonly state: DeviceState;
  private readonly uploader: Uploader;
  private readonly store: Store;
  private readonly counters: Counters = { sent: 0, retries: 0, failedBatches: 0, dropped: {}, rejected: {} };
  private readonly endpoint: string;
  private readonly limits: Limits;
  private readonly dimensions: Record<string, string> | undefined;
  private readonly clock: () => number;
  private readonly fetch: typeof fetch;
  private readonly timer: ReturnType<typeof setInterval>;
  private secret: Uint8Array | null = null;
  private enabled: boolean;
  private closed = false;
  private readonly unlisten: () => void;
  /** Settles when the saved state is loaded and the named tasks were asked for. */
  readonly ready: Promise<void>;

  constructor(options: Options) {
    if (!options || typeof options.endpoint !== "string" || !/^https?:\/\/[^/]/.test(options.endpoint)) {
      throw new TypeError("ldp-telemetry: endpoint must be an http(s) URL");
    }
    if (options.secret !== undefined && !(options.secret instanceof Uint8Array && options.secret.length === SECRET_BYTES)) {
      throw new TypeError("ldp-telemetry: secret must be 32 bytes (a Uint8Array)");
    }
    this.endpoint = options.endpoint.replace(/\/+$/, "");
    this.limits = limitsOf(options);
    this.dimensions = options.dimensions;
    this.clock = options.clock ?? (() => Date.now() / 1000);
    this.fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.timeout = positive("timeout", options.timeout, 60, false);
    this.enabled = options.enabled ?? true;
    const database = options.database ?? (typeof indexedDB === "undefined" ? false : "ldp-telemetry");
    this.store = options.store ?? (database === false ? new MemoryStore() : new IndexedDBStore(database, () => this.drop("storage_error")));
    this.store.reportErrors?.(() => this.drop("storage_error"));
    this.state = new DeviceState(
      positive("maxQueue", options.maxQueue, 10_000),
      positive("maxQueueBytes", options.maxQueueBytes, 16 << 20),
      this.store,
      (reason) => this.drop(reason),
    );
    this.uploader = new Uploader(
      this.state,
      {
        endpoint: this.endpoint,
        uploadKey: options.uploadKey,
        batchSize: positive("batchSize", options.batchSize, 500),
        maxBatchBytes: positive("maxBatchBytes", options.maxBatchBytes, 60_000),
        backoff: positive("backoff", options.backoff, 0.5, false),
        backoffMax: positive("backoffMax", options.backoffMax, 30, false),
        timeout: this.timeout,
        fetch: this.fetch,
      },
      this.counters,
      (taskId) => this.refetch(taskId),
      (taskId) => void this.revalidate(taskId, true),
    );
    for (const json of options.tasks ?? []) this.adopt(parseTask(json), false);
    this.timer = setInterval(() => this.tick(), positive("flushInterval", options.flushInterval, 30, false) * 1000);
    (this.timer as { unref?: () => void }).unref?.();
    this.unlisten = this.listen();
    this.ready = this.start(options).catch(() => void this.drop("storage_error"));
  }

  private async start(options: Options): Promise<void> {
    // Without a usable IndexedDB (a private window may refuse it) the client goes on in memory.
    const saved = await this.store.load().catch((): Saved => {
      this.drop("storage_error");
      return { tasks: [], ledger: [], queue: [], configurations: {}, drawn: {} };
    });
    this.secret = options.secret ?? saved.secret ?? randomBytes(SECRET_BYTES);
    if (!options.secret && !saved.secret) this.store.secret(this.secret);
    for (const json of saved.tasks) {
      try {
        const id = String(json["task_id"]);
        if (this.tasks.has(id)) continue;
        this.adopt(parseTask(json), false);
        this.fresh.set(id, { etag: null, due: 0 }); // a copy from an earlier page: revalidated soon
      } catch {
        /* a cached task this version refuses: fetched again when recorded */
      }
    }
    for (const e of saved.ledger) this.state.restoreBudget(e.taskId, e.start, e.end, e.lookup, e.pending);
    this.state.restorePrivacyLedger(saved.configurations, saved.drawn, saved.period);
    for (const pending of saved.queue) this.state.enqueue(pending, false);
    // Asked for, not awaited: a collector that never answers must not hold ready (and so
    // flush, close and waitForTasks) past their own timeouts.
    for (const id of options.taskIds ?? []) void this.want(id);
  }

  /** Page lifecycle: upload when the page is hidden or left, shown again, or back online. */
  private listen(): () => void {
    const target = globalThis as unknown as Partial<EventTarget> & { document?: Document };
    if (typeof target.addEventListener !== "function" || !target.document) return () => {};
    const document = target.document;
    const now = () => this.upload(true);
    document.addEventListener("visibilitychange", now);
    target.addEventListener("pagehide", now);
    target.addEventListener("online", now);
    return () => {
      document.removeEventListener("visibilitychange", now);
      target.removeEventListener!("pagehide", now);
      target.removeEventListener!("online", now);
    };
  }

  private tick(): void {
    this.upload(false);
    for (const id of this.fetching) void this.want(id, true);
    for (const id of this.fresh.keys()) void this.revalidate(id);
  }

  private upload(force: boolean): void {
    try {
      if (this.enabled && !this.closed) this.uploader.pump(force);
    } catch {
      this.drop("internal_error", 0);
    }
  }

  private drop(reason: string, count = 1): false {
    this.counters.dropped[reason] = (this.counters.dropped[reason] ?? 0) + count;
    return false;
  }

  private adopt(task: Task, save: boolean): void {
    this.tasks.set(task.id, task);
    this.fetching.delete(task.id);
    if (save) this.store.task(task.json);
  }

  /** Fetch a task's configuration (kept for later tries when it fails: one request at a
   * time, and after a failure not before its Retry-After, at least a second). */
  private async want(taskId: string, again = false): Promise<void> {
    if (this.tasks.has(taskId) || (this.fetching.has(taskId) && !again) || this.closed) return;
    this.fetching.add(taskId);
    if (this.asking.has(taskId) || Date.now() < (this.notBefore.get(taskId) ?? 0)) return;
    this.asking.add(taskId);
    try {
      await this.get(taskId, null);
    } catch {
      this.drop("task_refused", 0);
    } finally {
      this.asking.delete(taskId);
      if (!this.tasks.has(taskId)) {
        const asked = this.notBefore.get(taskId) ?? 0; // a Retry-After get() was given
        this.notBefore.set(taskId, Math.max(asked, Date.now() + TASK_RETRY * 1000));
      }
    }
  }

  /** Ask for a known task again once its max-age has passed (now if `now`); a 304 keeps it. */
  private async revalidate(taskId: string, now = false): Promise<void> {
    const fresh = this.fresh.get(taskId);
    if (!fresh || (!now && this.clock() < fresh.due) || this.closed) return;
    fresh.due = this.clock() + RETRY_SECONDS; // one request at a time; the answer sets it
    try {
      await this.get(taskId, fresh.etag);
    } catch {
      this.drop("task_refused", 0); // the copy in use stays (as the Python SDK keeps it)
    }
  }

  /** GET a task (If-None-Match `etag`), check it and adopt it; throws if refused. */
  private async get(taskId: string, etag: string | null): Promise<void> {
    const headers: Record<string, string> = etag ? { "If-None-Match": etag } : {};
    const signal = timeoutSignal(Math.min(TASK_TIMEOUT, this.timeout));
    const response = await this.fetch(this.endpoint + taskPath(Contract.TASK_PATH, taskId), { headers, signal });
    const due = this.clock() + maxAge(response.headers.get("Cache-Control"));
    if (response.status === 304 && etag !== null) {
      this.fresh.set(taskId, { etag, due });
      return;
    }
    if (!response.ok) {
      const wait = Math.min(RETRY_SECONDS, retryAfter(response.headers.get("Retry-After")) ?? 0);
      this.notBefore.set(taskId, Date.now() + wait * 1000);
      return;
    }
    const task = parseTask(await response.json());
    if (task.id !== taskId) throw new TypeError("the server answered another task");
    // A key that cannot be sealed to is refused here (and HPKE is loaded before a record needs it).
    if (task.seal) await checkSealable(task.seal);
    this.fresh.set(taskId, { etag: response.headers.get("ETag"), due });
    this.adopt(task, true);
  }

  private refetch(taskId: string): void {
    this.tasks.delete(taskId);
    void this.want(taskId);
  }

  /**
   * Privatize `value` for task `taskId` and queue the report; true if queued. The value
   * must fit the task's kind (a boolean for rr, a domain value for grr, a string for
   * sketches and hh, a number for numeric). Never throws. For a sealed task true means
   * privatized and charged: the report is queued once sealed (a failure counts seal_failed).
   * `options.dimensions` overrides the client's per name; a task that declares dimensions
   * gets them mapped to its lists (`other` else) before the report is stored. They are
   * sent in the clear: NOT protected by LDP (PROTOCOL §11).
   */
  record(taskId: string, value: unknown, options?: { dimensions?: Record<string, string> }): boolean {
    if (!this.enabled) return false;
    if (this.closed) return this.drop("closed");
    try {
      const task = typeof taskId === "string" ? this.tasks.get(taskId) : undefined;
      if (!task || !this.secret) {
        if (typeof taskId === "string") void this.want(taskId);
        return this.drop("task_unavailable");
      }
      const secret = this.secret;
      const now = this.clock();
      const period = floorTime(now, task.timePrecision);
      const canonical = task.mechanism.canonical(value);
      // A record under other dimensions is a new report (the memo key binds the slice, §3.10).
      const dims = task.dimensions ? coarsen(task.dimensions, { ...this.dimensions, ...options?.dimensions }) : undefined;
      const lookup = lookupKey(secret, task.fingerprint, period, canonical, dims && sliceOf(task.dimensions!, dims));
      const charge: Charge = {
        epsilon: task.epsilon,
        period: floorTime(now, this.limits.epsilonPeriod),
        permanent:
          task.configuration === null || task.epsilonInf === null
            ? null
            : { configuration: task.configuration, epsilonInf: task.epsilonInf, valueKey: valueKey(secret, task.id, this.drawnFor(task, secret, canonical)) },
      };
      const end = period + task.timePrecision;
      const admission = this.state.admit(task.id, period, end, lookup, charge, this.limits, () =>
        this.privatize(task, secret, period, value, dims),
      );
      if (admission === "new" || admission === "reused") {
        if (this.state.queue.size >= 500) this.upload(false);
        return true;
      }
      return this.drop(admission);
    } catch (error) {
      return this.drop(error instanceof ValueError ? "invalid_value" : "internal_error");
    }
  }

  /** Return the device key of a task id (cached: an HMAC per record saved). */
  /** Return what a value's permanent response is drawn for: the value, or (LOLOHA) the device's bucket of it. */
  private drawnFor(task: Task, secret: Uint8Array, canonical: Uint8Array): Uint8Array {
    const device = task.mechanism.drawnFor ? task.mechanism.forDevice(this.deviceKey(secret, task.id)) : null;
    return device?.drawnFor?.(canonical) ?? canonical;
  }

  private deviceKey(secret: Uint8Array, taskId: string): Uint8Array {
    let key = this.deviceKeys.get(taskId);
    if (!key) this.deviceKeys.set(taskId, (key = deviceKey(secret, taskId)));
    return key;
  }

  private privatize(task: Task, secret: Uint8Array, period: number, value: unknown, dims?: DimensionValues): Pending | Promise<Pending> {
    const mechanism = task.mechanism.forDevice(this.deviceKey(secret, task.id));
    const payload = mechanism.encode(mechanism.privatize(value, this.words));
    const id = randomBytes(16);
    if (!task.seal) return { taskId: task.id, id: base64url(id), text: reportText(id, task.fingerprint, period, payload, dims) };
    // Only the privatized payload crosses into the async sealing; `value` stays in this call.
    const reportId = base64url(id);
    const sealing = sealedReportText(task.id, task.seal, reportId, task.fingerprint, period, payload, dims);
    return sealing.then((text) => ({ taskId: task.id, id: reportId, text }));
  }

  /** Resolve true once these tasks (default: every task asked for) are known, false after the timeout. */
  async waitForTasks(taskIds?: string[], timeoutMs = 10_000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    await this.ready;
    for (const id of taskIds ?? []) void this.want(id);
    for (;;) {
      const missing = (taskIds ?? [...this.fetching]).filter((id) => !this.tasks.has(id));
      if (!missing.length) return true;
      if (Date.now() >= deadline) return false;
      await sleep(50);
      for (const id of missing) void this.want(id, true);
    }
  }

  /** Send everything queued; resolve true if the queue emptied within the timeout. */
  async flush(timeoutMs = 5_000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    try {
      await this.ready;
      for (;;) {
        if (!this.enabled || this.closed) return !this.closed;
        if (this.uploader.idle) return true;
        if (Date.now() >= deadline) return false;
        this.uploader.pump();
        await sleep(Math.min(50, Math.max(1, deadline - Date.now())));
      }
    } catch {
      return false;
    }
  }

  /** Flush, then stop; resolve true if nothing queued was left. Idempotent. */
  async close(timeoutMs = 5_000): Promise<boolean> {
    if (this.closed) return true;
    const flushed = await this.flush(timeoutMs);
    this.closed = true;
    clearInterval(this.timer);
    this.unlisten();
    return flushed;
  }

  /** Turn recording on or off; off deletes every queued report. */
  setEnabled(enabled: boolean): void {
    this.enabled = Boolean(enabled);
    if (!this.enabled) this.drop("disabled", this.state.clear());
  }

  /** Return the counters (sent, retries, failed batches, drops and rejections by reason, queued) and the privacy ledger per task id. */
  stats(): Stats {
    const c = this.counters;
    const permanentResponses: Record<string, number> = {};
    const epsilonInf: Record<string, number> = {};
    for (const [key, spent] of this.state.drawn) {
      const id = key.split("\0")[0]!; // task id \0 configuration \0 value key
      permanentResponses[id] = (permanentResponses[id] ?? 0) + 1;
      epsilonInf[id] = (epsilonInf[id] ?? 0) + spent;
    }
    return { ...c, dropped: { ...c.dropped }, rejected: { ...c.rejected }, queued: this.state.queue.size, permanentResponses, epsilonInf };
  }
}

function sleep(ms: number): Promise<void> {
  // Not unref'd: whoever awaits flush() or waitForTasks() keeps Node running until it settles.
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Return a started client (throws only for a bad configuration). */
export function init(options: Options): Client {
  return new Client(options);
}
