package dev.ldptelemetry;

import dev.ldptelemetry.internal.wire.*;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.spec.PKCS8EncodedKeySpec;
import java.security.spec.X509EncodedKeySpec;
import java.util.Arrays;
import javax.crypto.Cipher;
import javax.crypto.KeyAgreement;
import javax.crypto.spec.IvParameterSpec;
import javax.crypto.spec.SecretKeySpec;

/**
 * RFC 9180 base mode, single shot, composed from the runtime's own primitives: X25519 as the
 * JCA's "X25519" (Java 11+; "XDH" elsewhere), ChaCha20-Poly1305 as its cipher, and the labeled
 * HKDF of RFC 9180 §4 on HmacSHA256. Keys cross the JCA as their fixed DER encodings (the
 * raw 32 bytes behind a constant prefix), so these class files need nothing newer than Java 8
 * and fail cleanly where the algorithms are missing.
 */
public final class JdkHpke implements Hpke {
  private static final byte[] X509_PREFIX = Bytes.fromHex("302a300506032b656e032100");
  private static final byte[] PKCS8_PREFIX = Bytes.fromHex("302e020100300506032b656e04220420");
  private static final byte[] KEM_SUITE = Bytes.fromHex("4b454d0020"); // "KEM" ‖ 0x0020
  private static final byte[] HPKE_SUITE = Bytes.fromHex("48504b45002000010003"); // "HPKE" ‖ kem ‖ kdf ‖ aead
  private static final byte[] VERSION = Bytes.utf8("HPKE-v1");

  /** The JCA names: the JDK's first, then other providers' (Conscrypt names them differently). */
  private static final String[] X25519 = {"X25519", "XDH"};
  private static final String[] CHACHA = {"ChaCha20-Poly1305", "ChaCha20/Poly1305/NoPadding"};
  private static volatile String x25519 = "X25519";
  private static volatile String chacha = "ChaCha20-Poly1305";

  private JdkHpke() {}

  /** Return the runtime's HPKE, or null when it lacks X25519 or ChaCha20-Poly1305. */
  public static synchronized JdkHpke createOrNull() {
    String x = null;
    String c = null;
    for (String name : X25519) {
      try {
        KeyPairGenerator.getInstance(name).generateKeyPair();
        KeyAgreement.getInstance(name);
        KeyFactory.getInstance(name);
        x = name;
        break;
      } catch (GeneralSecurityException | RuntimeException missing) {
        // try the next name
      }
    }
    for (String name : CHACHA) {
      try {
        Cipher.getInstance(name);
        c = name;
        break;
      } catch (GeneralSecurityException | RuntimeException missing) {
        // try the next name
      }
    }
    if (x == null || c == null) return null;
    x25519 = x;
    chacha = c;
    return new JdkHpke();
  }

  @Override
  public byte[] sealBase(byte[] publicKey, byte[] info, byte[] plaintext) throws GeneralSecurityException {
    KeyPair ephemeral = KeyPairGenerator.getInstance(x25519).generateKeyPair();
    return seal(ephemeral.getPrivate(), raw(ephemeral.getPublic()), publicKey, info, new byte[0], plaintext);
  }

  /** SealBase with a given ephemeral key (RFC 9180's vectors fix it); returns enc ‖ ct. */
  byte[] seal(PrivateKey skE, byte[] enc, byte[] pkR, byte[] info, byte[] aad, byte[] plaintext)
      throws GeneralSecurityException {
    byte[] shared = sharedSecret(dh(skE, pkR), Bytes.concat(enc, pkR));
    byte[][] keyNonce = keySchedule(shared, info);
    Cipher cipher = Cipher.getInstance(chacha);
    cipher.init(Cipher.ENCRYPT_MODE, new SecretKeySpec(keyNonce[0], "ChaCha20"), new IvParameterSpec(keyNonce[1]));
    cipher.updateAAD(aad);
    return Bytes.concat(enc, cipher.doFinal(plaintext));
  }

  /** OpenBase of enc ‖ ct with the recipient's private key (tests; the collector opens in Python). */
  byte[] open(byte[] skR, byte[] sealed, byte[] info, byte[] aad) throws GeneralSecurityException {
    byte[] enc = Arrays.copyOfRange(sealed, 0, 32);
    PrivateKey key = privateKey(skR);
    byte[] pkR = publicOf(skR);
    byte[] shared = sharedSecret(dh(key, enc), Bytes.concat(enc, pkR));
    byte[][] keyNonce = keySchedule(shared, info);
    Cipher cipher = Cipher.getInstance(chacha);
    cipher.init(Cipher.DECRYPT_MODE, new SecretKeySpec(keyNonce[0], "ChaCha20"), new IvParameterSpec(keyNonce[1]));
    cipher.updateAAD(aad);
    return cipher.doFinal(sealed, 32, sealed.length - 32);
  }

  static PrivateKey privateKey(byte[] raw) throws GeneralSecurityException {
    return KeyFactory.getInstance(x25519).generatePrivate(new PKCS8EncodedKeySpec(Bytes.concat(PKCS8_PREFIX, raw)));
  }

  /** Return the raw public key of a raw private key (X25519 with the base point 9). */
  static byte[] publicOf(byte[] skR) throws GeneralSecurityException {
    byte[] base = new byte[32];
    base[0] = 9;
    return dh(privateKey(skR), base);
  }

  static byte[] raw(PublicKey key) {
    byte[] encoded = key.getEncoded();
    return Arrays.copyOfRange(encoded, encoded.length - 32, encoded.length);
  }

  /** X25519; refuses an all-zero result (a low-order public key), as RFC 9180 §7.1.4 requires. */
  static byte[] dh(PrivateKey sk, byte[] pk) throws GeneralSecurityException {
    PublicKey peer = KeyFactory.getInstance(x25519).generatePublic(new X509EncodedKeySpec(Bytes.concat(X509_PREFIX, pk)));
    KeyAgreement agreement = KeyAgreement.getInstance(x25519);
    agreement.init(sk);
    agreement.doPhase(peer, true);
    byte[] out = agreement.generateSecret();
    int any = 0;
    for (byte b : out) any |= b;
    if (any == 0) throw new GeneralSecurityException("X25519 gave the all-zero value: a low-order key");
    return out;
  }

  static byte[] sharedSecret(byte[] dh, byte[] kemContext) {
    byte[] prk = labeledExtract(KEM_SUITE, new byte[0], "eae_prk", dh);
    return labeledExpand(KEM_SUITE, prk, "shared_secret", kemContext, 32);
  }

  /** Return {key, base_nonce} of the base mode's key schedule (RFC 9180 §5.1). */
  static byte[][] keySchedule(byte[] shared, byte[] info) {
    byte[] pskIdHash = labeledExtract(HPKE_SUITE, new byte[0], "psk_id_hash", new byte[0]);
    byte[] infoHash = labeledExtract(HPKE_SUITE, new byte[0], "info_hash", info);
    byte[] context = Bytes.concat(new byte[] {0}, pskIdHash, infoHash);
    byte[] secret = labeledExtract(HPKE_SUITE, shared, "secret", new byte[0]);
    return new byte[][] {
      labeledExpand(HPKE_SUITE, secret, "key", context, 32), labeledExpand(HPKE_SUITE, secret, "base_nonce", context, 12)
    };
  }

  static byte[] labeledExtract(byte[] suite, byte[] salt, String label, byte[] ikm) {
    return Bytes.hmac(salt, Bytes.concat(VERSION, suite, Bytes.utf8(label), ikm));
  }

  static byte[] labeledExpand(byte[] suite, byte[] prk, String label, byte[] info, int length) {
    byte[] labeled = Bytes.concat(Bytes.bigEndian(length, 2), VERSION, suite, Bytes.utf8(label), info);
    byte[] out = new byte[length];
    byte[] block = new byte[0];
    for (int at = 0, i = 1; at < length; i++) {
      block = Bytes.hmac(prk, Bytes.concat(block, labeled, new byte[] {(byte) i}));
      System.arraycopy(block, 0, out, at, Math.min(32, length - at));
      at += 32;
    }
    return out;
  }
}
