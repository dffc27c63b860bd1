// A sealed task (PROTOCOL §10) is refused: this SDK cannot seal, and must never send such
// a task's payload in the clear. Its fingerprint is otherwise reproduced (seal is unhashed).
import assert from "node:assert/strict";
import { test } from "node:test";
import { TaskError } from "../src/mechanisms/base.js";
import { fingerprintOf, parseTask } from "../src/task.js";

const plain = {
  task_id: "colors",
  mechanism: "grr",
  epsilon: 2,
  domain: ["red", "green", "blue"],
  time_precision: 86400,
  min_batch_size: 100,
  protocol: "1.0",
  derived: { T: 2980871540, L: 2980871540, k: 3 },
};

test("a sealed task is refused, whatever its key", () => {
  const sealed: Record<string, unknown> = { ...plain, sealed: true };
  sealed["fingerprint"] = fingerprintOf(sealed);
  sealed["seal"] = { kem: 32, kdf: 1, aead: 3, key_id: "k1", public_key: "A".repeat(43) };
  assert.equal(fingerprintOf(sealed), sealed["fingerprint"]);
  assert.throws(() => parseTask(sealed), (e: unknown) => e instanceof TaskError && /sealed/.test(String(e)));
});
