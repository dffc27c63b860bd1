/**
 * Node only: the device's state kept in a folder across process restarts — the device
 * secret (`device.key`, the file the Python SDK keeps) and, in `ledger-js.jsonl` (its first
 * name, kept so that a folder written before still loads), the task configurations, the budget
 * (the per-period memo), the privacy ledger and the queue (PROTOCOL §4: the privacy
 * ledger must outlive the process as long as the secret does, or a collector that
 * re-publishes a longitudinal task between two runs would obtain a second permanent
 * response). Each change is one JSON line appended synchronously before record() returns;
 * loading replays the lines and rewrites the file compacted.
 */
import { appendFileSync, closeSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from "node:fs";
import { mkdir, open, readFile } from "node:fs/promises";
import { join } from "node:path";
import { randomBytes } from "../random.js";
import type { Pending } from "./state.js";
import type { Remembered, Saved, Store } from "./store.js";

/** Return the 32-byte secret in `<dir>/device.key`, creating it (mode 0600) the first time. */
export async function fileSecret(dir: string): Promise<Uint8Array> {
  const path = join(dir, "device.key");
  await mkdir(dir, { recursive: true, mode: 0o700 });
  try {
    const file = await open(path, "wx", 0o600);
    await file.writeFile(randomBytes(32));
    await file.close();
  } catch (error) {
    if ((error as { code?: string }).code !== "EEXIST") throw error;
  }
  const secret = new Uint8Array(await readFile(path));
  if (secret.length !== 32) throw new Error(`${path} is not a 32-byte device secret; delete it to start a new one`);
  return secret;
}

type Line =
  | { op: "task"; json: Record<string, unknown> }
  | { op: "remembered"; entry: Remembered }
  | { op: "forgotten"; taskId: string; before: number }
  | { op: "adopted"; taskId: string; configurations: [string, number][] }
  | { op: "drew"; key: string; epsilonInf: number }
  | { op: "spent"; start: number; epsilon: number }
  | { op: "queued"; pending: Pending }
  | { op: "removed"; ids: string[] };

/** The state the lines describe, replayed in order. */
class State {
  readonly tasks = new Map<string, Record<string, unknown>>();
  readonly budget = new Map<string, Remembered>();
  readonly configurations: Record<string, [string, number][]> = {};
  readonly drawn: Record<string, number> = {};
  period: { start: number; epsilon: number } | undefined;
  readonly queue = new Map<string, Pending>();

  apply(line: Line): void {
    if (line.op === "task") this.tasks.set(String(line.json["task_id"]), line.json);
    else if (line.op === "remembered") {
      const e = line.entry;
      this.budget.set(`${e.taskId}\0${e.end}\0${e.lookup}`, e);
    } else if (line.op === "forgotten") {
      for (const [key, e] of this.budget) if (e.taskId === line.taskId && e.end <= line.before) this.budget.delete(key);
    } else if (line.op === "adopted") this.configurations[line.taskId] = line.configurations;
    else if (line.op === "drew") this.drawn[line.key] = line.epsilonInf;
    else if (line.op === "spent") this.period = { start: line.start, epsilon: line.epsilon };
    else if (line.op === "queued") this.queue.set(line.pending.id, line.pending);
    else if (line.op === "removed") for (const id of line.ids) this.queue.delete(id);
  }

  lines(): Line[] {
    const out: Line[] = [...this.tasks.values()].map((json) => ({ op: "task", json }) as Line);
    for (const entry of this.budget.values()) out.push({ op: "remembered", entry });
    for (const [taskId, configurations] of Object.entries(this.configurations)) out.push({ op: "adopted", taskId, configurations });
    for (const [key, epsilonInf] of Object.entries(this.drawn)) out.push({ op: "drew", key, epsilonInf });
    if (this.period) out.push({ op: "spent", ...this.period });
    for (const pending of this.queue.values()) out.push({ op: "queued", pending });
    return out;
  }
}

/** A Store in a folder: pass it as `store` to init() (with no `secret`: it keeps its own). */
export class FileStore implements Store {
  private readonly path: string;
  private failed: () => void = () => {};

  constructor(private readonly dir: string) {
    this.path = join(dir, "ledger-js.jsonl");
  }

  reportErrors(handler: () => void): void {
    this.failed = handler;
  }

  async load(): Promise<Saved> {
    const secret = await fileSecret(this.dir);
    const state = new State();
    let text = "";
    try {
      text = readFileSync(this.path, "utf8");
    } catch (error) {
      if ((error as { code?: string }).code !== "ENOENT") throw error;
    }
    for (const raw of text.split("\n")) {
      if (!raw) continue;
      try {
        state.apply(JSON.parse(raw) as Line);
      } catch {
        break; // a line cut short by a crash: it and anything after it never returned to a caller
      }
    }
    this.compact(state);
    return {
      secret,
      tasks: [...state.tasks.values()],
      ledger: [...state.budget.values()],
      configurations: state.configurations,
      drawn: state.drawn,
      period: state.period,
      queue: [...state.queue.values()],
    };
  }

  private compact(state: State): void {
    const temporary = `${this.path}.tmp`;
    const fd = openSync(temporary, "w", 0o600);
    try {
      writeSync(fd, state.lines().map((l) => JSON.stringify(l) + "\n").join(""));
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temporary, this.path);
  }

  private write(line: Line): void {
    try {
      appendFileSync(this.path, JSON.stringify(line) + "\n", { mode: 0o600 });
    } catch {
      this.failed();
    }
  }

  secret(): void {} // load() keeps it in device.key
  task(json: Record<string, unknown>): void {
    this.write({ op: "task", json });
  }
  remembered(taskId: string, start: number, end: number, lookup: string, pending: Pending): void {
    this.write({ op: "remembered", entry: { taskId, start, end, lookup, pending } });
  }
  forgotten(taskId: string, before: number): void {
    this.write({ op: "forgotten", taskId, before });
  }
  adopted(taskId: string, configurations: [string, number][]): void {
    this.write({ op: "adopted", taskId, configurations });
  }
  drew(key: string, epsilonInf: number): void {
    this.write({ op: "drew", key, epsilonInf });
  }
  spent(period: number, epsilon: number): void {
    this.write({ op: "spent", start: period, epsilon });
  }
  queued(pending: Pending): void {
    this.write({ op: "queued", pending });
  }
  removed(ids: string[]): void {
    if (ids.length) this.write({ op: "removed", ids });
  }
}
