package dev.ldptelemetry.internal.wire;

import java.nio.charset.Charset;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/** Bytes: UTF-8, hex, base64url (RFC 4648 §5, no padding, canonical), SHA-256 and HMAC. */
public final class Bytes {
  private Bytes() {}

  public static final Charset UTF8 = Charset.forName("UTF-8");
  private static final char[] HEX = "0123456789abcdef".toCharArray();
  private static final char[] B64 =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".toCharArray();

  public static byte[] utf8(String s) {
    return s.getBytes(UTF8);
  }

  /** Return whether a string holds no lone surrogate (PROTOCOL §3.1: such text is refused). */
  public static boolean wellFormed(String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (Character.isHighSurrogate(c)) {
        if (i + 1 >= s.length() || !Character.isLowSurrogate(s.charAt(i + 1))) return false;
        i++;
      } else if (Character.isLowSurrogate(c)) {
        return false;
      }
    }
    return true;
  }

  public static String hex(byte[] bytes) {
    char[] out = new char[2 * bytes.length];
    for (int i = 0; i < bytes.length; i++) {
      out[2 * i] = HEX[(bytes[i] >> 4) & 15];
      out[2 * i + 1] = HEX[bytes[i] & 15];
    }
    return new String(out);
  }

  public static byte[] fromHex(String s) {
    byte[] out = new byte[s.length() / 2];
    for (int i = 0; i < out.length; i++) {
      out[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
    }
    return out;
  }

  public static String base64url(byte[] bytes) {
    StringBuilder out = new StringBuilder((bytes.length * 4 + 2) / 3);
    int i = 0;
    for (; i + 3 <= bytes.length; i += 3) {
      int v = (bytes[i] & 255) << 16 | (bytes[i + 1] & 255) << 8 | (bytes[i + 2] & 255);
      out.append(B64[v >> 18]).append(B64[(v >> 12) & 63]).append(B64[(v >> 6) & 63]).append(B64[v & 63]);
    }
    int rest = bytes.length - i;
    if (rest == 1) {
      int v = (bytes[i] & 255) << 16;
      out.append(B64[v >> 18]).append(B64[(v >> 12) & 63]);
    } else if (rest == 2) {
      int v = (bytes[i] & 255) << 16 | (bytes[i + 1] & 255) << 8;
      out.append(B64[v >> 18]).append(B64[(v >> 12) & 63]).append(B64[(v >> 6) & 63]);
    }
    return out.toString();
  }

  /** Return the bytes of canonical unpadded base64url, or null if the text is not that. */
  public static byte[] fromBase64url(String s) {
    if (s.length() % 4 == 1) return null;
    byte[] out = new byte[s.length() * 3 / 4];
    int bits = 0;
    int count = 0;
    int at = 0;
    for (int i = 0; i < s.length(); i++) {
      int v = sextet(s.charAt(i));
      if (v < 0) return null;
      bits = (bits << 6) | v;
      count += 6;
      if (count >= 8) {
        count -= 8;
        out[at++] = (byte) (bits >> count);
        bits &= (1 << count) - 1;
      }
    }
    return bits == 0 ? out : null; // the unused low bits of the last character are zero
  }

  private static int sextet(char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '-') return 62;
    if (c == '_') return 63;
    return -1;
  }

  public static byte[] concat(byte[]... parts) {
    int size = 0;
    for (byte[] p : parts) size += p.length;
    byte[] out = new byte[size];
    int at = 0;
    for (byte[] p : parts) {
      System.arraycopy(p, 0, out, at, p.length);
      at += p.length;
    }
    return out;
  }

  /** Return the low `size` bytes of a value, big-endian (two's complement). */
  public static byte[] bigEndian(long value, int size) {
    byte[] out = new byte[size];
    for (int i = size - 1; i >= 0; i--) {
      out[i] = (byte) value;
      value >>= 8;
    }
    return out;
  }

  public static byte[] sha256(byte[] data) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(data);
    } catch (GeneralSecurityException error) {
      throw new IllegalStateException("SHA-256 is missing", error);
    }
  }

  /** One Mac per thread: Mac.getInstance's provider lookup costs more than a short HMAC. */
  private static final ThreadLocal<Mac> MACS = new ThreadLocal<Mac>();

  public static byte[] hmac(byte[] key, byte[] data) {
    try {
      Mac mac = MACS.get();
      if (mac == null) {
        mac = Mac.getInstance("HmacSHA256");
        MACS.set(mac);
      }
      // SecretKeySpec refuses an empty key; HMAC pads keys with zeros to the block size, so
      // the empty key and 32 zero bytes are the same key (HKDF's default salt relies on it).
      mac.init(new SecretKeySpec(key.length == 0 ? new byte[32] : key, "HmacSHA256"));
      return mac.doFinal(data);
    } catch (GeneralSecurityException error) {
      throw new IllegalStateException("HMAC-SHA256 is missing", error);
    }
  }
}
