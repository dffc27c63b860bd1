package dev.ldptelemetry;

import java.security.GeneralSecurityException;

/**
 * HPKE base mode, single shot, for the one suite of PROTOCOL §10: DHKEM(X25519, HKDF-SHA256),
 * HKDF-SHA256, ChaCha20-Poly1305 (RFC 9180). The default is {@link JdkHpke} (the runtime's
 * XDH and ChaCha20-Poly1305: Java 11+); a runtime without them (older Android) passes its
 * own, e.g. built on BouncyCastle or Tink, through {@link Client.Builder#hpke(Hpke)}.
 */
public interface Hpke {
  /** Return enc ‖ ct of SealBase(pkR, info, aad = "", plaintext) with a fresh ephemeral key. */
  byte[] sealBase(byte[] publicKey, byte[] info, byte[] plaintext) throws GeneralSecurityException;
}
