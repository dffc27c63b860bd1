/**
 * Where a browser keeps the device secret, the ledger, the queue and the task
 * configurations between page loads: IndexedDB, written behind record() (which never
 * waits). Without IndexedDB (Node) everything lives in memory for the process's life.
 */

import type { Pending, Period, Persist } from "./ledger.js";

/** What a client restores at start. */
export interface Saved {
  secret?: Uint8Array;
  tasks: Record<string, unknown>[];
  periods: Record<string, Period[]>;
  queue: Pending[];
}

export interface Store extends Persist {
  load(): Promise<Saved>;
  secret(secret: Uint8Array): void;
  task(json: Record<string, unknown>): void;
}

/** Keep nothing: the process's memory is the store. */
export class MemoryStore implements Store {
  async load(): Promise<Saved> {
    return { tasks: [], periods: {}, queue: [] };
  }
  secret(): void {}
  task(): void {}
  periods(): void {}
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

/** One IndexedDB database with one key-value object store ("secret", "task:", "ledger:", "q:"). */
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
    const saved: Saved = { tasks: [], periods: {}, queue: [] };
    (keys.result as string[]).forEach((key, i) => {
      const value = values.result[i];
      if (key === "secret") saved.secret = value as Uint8Array;
      else if (key.startsWith("task:")) saved.tasks.push(value);
      else if (key.startsWith("ledger:")) saved.periods[key.slice(7)] = value;
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
  periods(taskId: string, periods: Period[]): void {
    this.write((s) => s.put(periods, `ledger:${taskId}`));
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
