/**
 * Node only. `fileStore(dir)`: the device secret, task configurations, budget (the memo),
 * privacy ledger and queue kept in a folder across restarts (pass it as `store`). `fileSecret(dir)`: the
 * secret alone (device.key, the file the Python SDK keeps) — with the memory store, a
 * restart forgets the budget and the privacy ledger while the secret lives on (README, "From Node").
 */
import { FileStore } from "./device/filestore.js";

export { FileStore, fileSecret } from "./device/filestore.js";

/** Return a store that keeps the device's state in `dir` (created 0700 if missing). */
export function fileStore(dir: string): FileStore {
  return new FileStore(dir);
}
