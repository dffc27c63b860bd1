/** ldp-telemetry: local differential privacy telemetry for web pages and Node. */
export { Client, init, type Options, type Stats } from "./client.js";
export { TaskError, ValueError } from "./mechanisms/base.js";
export { PROTOCOL, parseTask, type Task } from "./task.js";
export type { Saved, Store } from "./device/store.js";
