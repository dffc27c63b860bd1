// Checks a fixture the reference implementation wrote (tests/sdk_js/test_cross.py):
// fingerprints, device and memo keys, permanent responses and whole reports drawn from a
// fixed HMAC-DRBG stream, bit for bit, and each report's sealed padded length (PROTOCOL §10).
// The device secret is read as the Python SDK keeps it.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { fromHex, hex } from "../../src/bytes.js";
import { paddedLength } from "../../src/sealing/hpke.js";
import { deviceKey, lookupKey } from "../../src/device/budget.js";
import { Longitudinal } from "../../src/mechanisms/longitudinal.js";
import { fileSecret } from "../../src/node.js";
import { KeyedStream } from "../../src/random.js";
import { derivedOf, parseTask } from "../../src/task.js";

interface Case {
  task: Record<string, unknown>;
  device_key: string;
  threshold: number | null;
  values: { value: unknown; memo_key: string; report: Record<string, unknown>; padded: number; permanent: Record<string, unknown> | null }[];
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const fixture: any = JSON.parse(readFileSync(process.env["LDP_CROSS_FIXTURE"]!, "utf8"));
const secret = await fileSecret(fixture.data_dir);
const stream = () => new KeyedStream(fromHex(fixture.stream_seed));

for (const item of fixture.cases as Case[]) {
  test(`${String(item.task["task_id"])}`, () => {
    const task = parseTask(item.task);
    const key = deviceKey(secret, task.id);
    assert.equal(hex(key), item.device_key);
    const mechanism = task.mechanism.forDevice(key);
    if (item.threshold !== null) assert.equal(derivedOf(task.mechanism)["T_i"], item.threshold);
    for (const v of item.values) {
      assert.equal(lookupKey(secret, task.fingerprint, fixture.period, mechanism.canonical(v.value)), v.memo_key);
      const payload = mechanism.encode(mechanism.privatize(v.value, stream()));
      assert.deepEqual(payload, v.report, JSON.stringify(v.value));
      assert.equal(paddedLength(payload), v.padded, JSON.stringify(v.value));
      if (v.permanent) {
        const layer = mechanism as Longitudinal<unknown>;
        assert.deepEqual(layer.permanent.encode(layer.permanentResponse(v.value)), v.permanent);
      }
    }
  });
}
