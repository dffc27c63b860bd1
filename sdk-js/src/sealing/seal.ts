/**
 * Sealed reports (PROTOCOL §10): a sealed task's payload is encrypted to the collector's
 * HPKE key (RFC 9180 base mode, DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, ChaCha20-Poly1305)
 * before it is queued, so the queue, IndexedDB and every relay hold ciphertext only.
 *
 * This module is in the core bundle and does no cryptography: it checks the served `seal`
 * and builds `info` and the sealed report. The padding and HPKE are ./hpke.ts, imported on
 * first use (a chunk of its own), so pages without sealed tasks never load them.
 */

import { base64url, fromBase64url } from "../bytes.js";
import { jcs } from "../canonical.js";
import type { DimensionValues } from "../device/dimensions.js";
import { type Payload, TaskError } from "../mechanisms/base.js";

/** The IANA HPKE ids of the one suite PROTOCOL §10 allows. */
export const SUITE = { kem: 0x0020, kdf: 0x0001, aead: 0x0003 } as const;
export const INFO_LABEL = "ldp-telemetry/seal/1";
const KEY_ID = /^[A-Za-z0-9_-]{1,32}$/;
const KEY_BYTES = 32;

/** The collector's public key a sealed task serves as `seal`. */
export interface SealKey {
  readonly keyId: string;
  readonly publicKey: Uint8Array;
}

/** Return the key a task's `seal` object serves, or throw TaskError (never seal to anything else). */
export function sealKeyOf(seal: unknown, taskId: string): SealKey {
  if (typeof seal !== "object" || seal === null || Array.isArray(seal)) {
    throw new TaskError(`task ${taskId} is sealed but served without the collector's key: refused`);
  }
  const fields = seal as Record<string, unknown>;
  const names = Object.keys(fields).sort().join();
  if (names !== "aead,kdf,kem,key_id,public_key") throw new TaskError(`task ${taskId}: seal must be {kem, kdf, aead, key_id, public_key}`);
  if (fields["kem"] !== SUITE.kem || fields["kdf"] !== SUITE.kdf || fields["aead"] !== SUITE.aead) {
    throw new TaskError(`task ${taskId}: seal names an HPKE suite other than X25519/HKDF-SHA256/ChaCha20-Poly1305: refused`);
  }
  const keyId = fields["key_id"];
  if (typeof keyId !== "string" || !KEY_ID.test(keyId)) throw new TaskError(`task ${taskId}: seal.key_id is not 1-32 of A-Z a-z 0-9 - _`);
  const publicKey = typeof fields["public_key"] === "string" ? fromBase64url(fields["public_key"]) : null;
  if (!publicKey || publicKey.length !== KEY_BYTES) throw new TaskError(`task ${taskId}: seal.public_key is not 32 bytes of base64url`);
  return { keyId, publicKey };
}

/** Return HPKE's `info` text: the RFC 8785 JSON of the envelope the seal binds (a dimensions task's `dims` too). */
export function sealInfo(taskId: string, fingerprint: string, keyId: string, reportId: string, time: number, dims?: DimensionValues): string {
  return jcs({ fingerprint, key_id: keyId, label: INFO_LABEL, report_id: reportId, task_id: taskId, time, ...(dims && { dims }) });
}

/** The seal in progress: reports are sealed one after another, so a burst of records leaves the page room between seals. */
let last: Promise<unknown> = Promise.resolve();

/** Return a sealed report's text: the envelope, key_id and base64url(enc ‖ ct) of the padded payload. */
export function sealedReportText(taskId: string, key: SealKey, reportId: string, fingerprint: string, time: number, payload: Payload, dims?: DimensionValues): Promise<string> {
  const info = sealInfo(taskId, fingerprint, key.keyId, reportId, time, dims);
  const seal = async () => {
    const { sealPayload } = await import("./hpke.js");
    const sealed = base64url(await sealPayload(key.publicKey, info, payload));
    return JSON.stringify({ report_id: reportId, fingerprint, time, ...(dims && { dims }), key_id: key.keyId, sealed });
  };
  const next = last.then(seal, seal);
  last = next.catch(() => {});
  return next;
}

/** Resolve once a key can be sealed to (HPKE loaded, the point not of low order); reject if not. */
export async function checkSealable(key: SealKey): Promise<void> {
  const { sealBase } = await import("./hpke.js");
  await sealBase(key.publicKey, new Uint8Array(0), new Uint8Array(0));
}
