/**
 * The sealing of PROTOCOL §10 that needs HPKE, loaded on first use as a chunk of its own:
 * the padded plaintext, and RFC 9180 base mode single shot with @hpke/core's key schedule
 * (HKDF over WebCrypto's HMAC-SHA256), @hpke/dhkem-x25519 (X25519 in JavaScript: WebCrypto's
 * X25519 is missing from browsers before Chrome 133 and Firefox 130) and
 * @hpke/chacha20poly1305 (no WebCrypto has it). It imports nothing of the SDK's own, so the
 * bundler shares no chunk with the core. Measured (esbuild, min+gzip, the suite alone):
 * 14,592 bytes with @hpke/dhkem-x25519, 10,949 with @hpke/core's WebCrypto X25519 KEM; the
 * 3.6 KB buy every browser with WebCrypto, in a chunk only sealed tasks load.
 */

import { Chacha20Poly1305 } from "@hpke/chacha20poly1305";
import { CipherSuite, HkdfSha256 } from "@hpke/core";
import { DhkemX25519HkdfSha256 } from "@hpke/dhkem-x25519";

export const suite = new CipherSuite({
  kem: new DhkemX25519HkdfSha256(),
  kdf: new HkdfSha256(),
  aead: new Chacha20Poly1305(),
});

const ENCODER = new TextEncoder();
const PAD_BLOCK = 16;
/** Every number, true, false or null counts this wide in the padded length. */
export const MAX_SCALAR_CHARS = 24;

/** Return `enc ‖ ct` of SealBase(pkR, info, aad = "", plaintext) with a fresh ephemeral key. */
export async function sealBase(publicKey: Uint8Array, info: Uint8Array, plaintext: Uint8Array): Promise<Uint8Array> {
  const recipientPublicKey = await suite.kem.deserializePublicKey(publicKey);
  const sealed = await suite.seal({ recipientPublicKey, info }, plaintext);
  const out = new Uint8Array(sealed.enc.byteLength + sealed.ct.byteLength);
  out.set(new Uint8Array(sealed.enc));
  out.set(new Uint8Array(sealed.ct), sealed.enc.byteLength);
  return out;
}

/** Return `enc ‖ ct` of a payload's padded plaintext sealed to `publicKey` under `info`. */
export function sealPayload(publicKey: Uint8Array, info: string, payload: object): Promise<Uint8Array> {
  return sealBase(publicKey, ENCODER.encode(info), ENCODER.encode(paddedText(payload)));
}

/** Return the plaintext of a payload: its compact JSON padded with spaces to paddedLength(). */
export function paddedText(payload: object): string {
  const text = JSON.stringify(payload);
  return text + " ".repeat(paddedLength(payload) - ENCODER.encode(text).length);
}

/**
 * Return the padded length of a payload: its JSON with every scalar 24 characters wide,
 * rounded up to 16. It depends only on the field names and the strings' lengths (which a
 * task fixes), so every report of a task has one ciphertext length.
 */
export function paddedLength(payload: object): number {
  return Math.ceil(widest(payload) / PAD_BLOCK) * PAD_BLOCK;
}

function widest(value: unknown): number {
  if (typeof value === "string") return ENCODER.encode(JSON.stringify(value)).length;
  if (Array.isArray(value)) return 2 + value.reduce((sum: number, v) => sum + widest(v), 0) + Math.max(value.length - 1, 0);
  if (typeof value === "object" && value !== null) {
    const fields = Object.entries(value).map(([k, v]) => widest(k) + 1 + widest(v));
    return 2 + fields.reduce((sum, n) => sum + n, 0) + Math.max(fields.length - 1, 0);
  }
  return MAX_SCALAR_CHARS;
}
