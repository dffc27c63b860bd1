/**
 * Where a browser keeps the device secret, the budget, the privacy ledger, the queue and the
 * task configurations between page loads: IndexedDB, written behind record() (which never
 * waits). Without IndexedDB (Node) everything lives in memory for the process's life.
 */

import type { Pending, Persist } from "./state.js";

/** One budget entry as kept: a report made in a period of a task, by memo key. */
export interface Remembered {
  taskId: string;
  start: number;
  end: number;
  lookup: string;
  pending: Pending;
}

/** What a client restores at start. */
export interface Saved {
  secret?: Uint8Array;
  tasks: Record<string, unknown>[];
  /** The budget's entries (the field keeps its first name: custom stores return it). */
  ledger: Remembered[];
  configurations: Record<string, [string, number][]>;
  drawn: Record<string, number>;
  period?: { start: number; epsilon: number };
  queue: Pending[];
}

export interface Store extends Persist {
  load(): Promise<Saved>;
  /** Called once by the client: how the store reports a write that failed. */
  reportErrors?(handler: () => void): void;
  secret(secret: Uint8Array): void;
  task(json: Record<string, unknown>): void;
}

/** Keep nothing: the process's memory is the store. */
export class MemoryStore implements Store {
  async load(): Promise<Saved> {
    return { tasks: [], ledger: [], queue: [], configurations: {}, drawn: {} };
  }
  adopted(): void {}
  drew(): void {}
  spent(): void {}
  secret(): void {}
  task(): void {}
  remembered(): void {}
  forgotten(): void {}
  queued(): void {}
  removed(): void {}
}

const KV = "kv";

function done(request: IDBRequest | IDBTransaction): Promise<void> {
  return new Promise((resolve, reject) => {
    if ("oncomplete" in request) {
      request.oncomplete = () => resolve();
      request.onerror = request.onabort = () => reject(request.error);
    } else {
      request.onsuccess = () => resolve();
      request.onerror = () => reject(request.error);
    }
  });
}

/**
 * One IndexedDB database with one key-value object store: "secret", "task:<id>", the budget
 * "ledger:<task id>:<period end>:<memo key>" (one entry per report made: a record writes one
 * small entry, never the whole budget; the prefix keeps its first name so that a browser's
 * saved state still loads), the privacy ledger ("cfg:<task id>", "drawn:<key>",
 * "spent") and "q:<sequence>" (the queue, in order).
 */
export class IndexedDBStore implements Store {
  private db: Promise<IDBDatabase>;
  private seq = Date.now() * 1000;
  private readonly keys = new Map<string, string>();

  constructor(name: string, private readonly onError: () => void) {
    const request = indexedDB.open(name, 1);
    request.onupgradeneeded = () => request.result.createObjectStore(KV);
    this.db = done(request).then(() => request.result);
  }

  async load(): Promise<Saved> {
    const db = await this.db;
    const store = db.transaction(KV).objectStore(KV);
    const keys = store.getAllKeys();
    const values = store.getAll();
    await done(values);
    const saved: Saved = { tasks: [], ledger: [], queue: [], configurations: {}, drawn: {} };
    (keys.result as string[]).forEach((key, i) => {
      const value = values.result[i];
      if (key === "secret") saved.secret = value as Uint8Array;
      else if (key.startsWith("task:")) saved.tasks.push(value);
      else if (key.startsWith("ledger:")) saved.ledger.push(value);
      else if (key.startsWith("cfg:")) saved.configurations[key.slice(4)] = value;
      else if (key.startsWith("drawn:")) saved.drawn[key.slice(6)] = value;
      else if (key === "spent") saved.period = value;
      else if (key.startsWith("q:")) {
        saved.queue.push(value);
        this.keys.set((value as Pending).id, key);
      }
    });
    return saved;
  }

  private write(change: (store: IDBObjectStore) => void): void {
    this.db
      .then((db) => {
        const transaction = db.transaction(KV, "readwrite");
        change(transaction.objectStore(KV));
        return done(transaction);
      })
      .catch(this.onError);
  }

  secret(secret: Uint8Array): void {
    this.write((s) => s.put(secret, "secret"));
  }
  task(json: Record<string, unknown>): void {
    this.write((s) => s.put(json, `task:${String(json["task_id"])}`));
  }
  remembered(taskId: string, start: number, end: number, lookup: string, pending: Pending): void {
    const entry: Remembered = { taskId, start, end, lookup, pending };
    this.write((s) => s.put(entry, `ledger:${taskId}:${String(end).padStart(16, "0")}:${lookup}`));
  }
  adopted(taskId: string, configurations: [string, number][]): void {
    this.write((s) => s.put(configurations, `cfg:${taskId}`));
  }
  drew(key: string, epsilonInf: number): void {
    this.write((s) => s.put(epsilonInf, `drawn:${key}`));
  }
  spent(period: number, epsilon: number): void {
    this.write((s) => s.put({ start: period, epsilon }, "spent"));
  }
  forgotten(taskId: string, before: number): void {
    // Entries of periods that ended by `before` sort below this key ("~" follows the hex digits).
    const range = IDBKeyRange.bound(`ledger:${taskId}:`, `ledger:${taskId}:${String(before).padStart(16, "0")}:~`);
    this.write((s) => s.delete(range));
  }
  queued(pending: Pending): void {
    // Keys sort in queue order: a page loaded later sends the oldest reports first.
    const key = `q:${(this.seq++).toString().padStart(20, "0")}`;
    this.keys.set(pending.id, key);
    this.write((s) => s.put(pending, key));
  }
  removed(ids: string[]): void {
    const keys = ids.map((id) => this.keys.get(id)).filter((k): k is string => k !== undefined);
    for (const id of ids) this.keys.delete(id);
    if (keys.length) this.write((s) => keys.forEach((k) => s.delete(k)));
  }
}
