package dev.ldptelemetry.internal.mechanisms;

import dev.ldptelemetry.internal.wire.*;
import java.security.SecureRandom;

/**
 * Where a mechanism's uniform 32-bit words come from (PROTOCOL §3): SecureRandom for every
 * report, HMAC-DRBG for a longitudinal task's permanent response (§3.9), fixed words for
 * the conformance vectors. A word is a long in [0, 2^32); an event of probability T/2^32
 * happens when word &lt; T.
 */
public abstract class Words {
  public static final long SCALE = 1L << 32;

  /** Return one uniform word. */
  public abstract long word();

  /** Return `count` uniform words (one generate call for the DRBG). */
  public long[] words(int count) {
    long[] out = new long[count];
    for (int i = 0; i < count; i++) out[i] = word();
    return out;
  }

  /** Return a uniform integer below n (n ≤ 2^32): the first word below the rejection limit, mod n. */
  public long below(long n) {
    long limit = SCALE - SCALE % n;
    for (;;) {
      long w = word();
      if (w < limit) return w % n;
    }
  }

  /** Return the smallest T with T / 2^32 ≥ p (p · 2^32 is exact in doubles). */
  public static long thresholdAtLeast(double p) {
    return (long) Math.ceil(p * SCALE);
  }

  /** The platform's CSPRNG, read 4 KiB at a time (a record must not make a system call per word). */
  public static final class Secure extends Words {
    private final SecureRandom random;
    private final byte[] pool = new byte[1024];
    private int used = pool.length;

    public Secure(SecureRandom random) {
      this.random = random;
    }

    @Override
    public long[] words(int count) {
      if (count < 16) return super.words(count);
      byte[] raw = new byte[4 * count];
      random.nextBytes(raw);
      long[] out = new long[count];
      for (int i = 0; i < count; i++) {
        out[i] = (raw[4 * i] & 255L) | (raw[4 * i + 1] & 255L) << 8 | (raw[4 * i + 2] & 255L) << 16
            | (raw[4 * i + 3] & 255L) << 24;
      }
      java.util.Arrays.fill(raw, (byte) 0);
      return out;
    }

    @Override
    public long word() {
      if (used + 4 > pool.length) {
        random.nextBytes(pool);
        used = 0;
      }
      long w = (pool[used] & 255L) | (pool[used + 1] & 255L) << 8 | (pool[used + 2] & 255L) << 16
          | (pool[used + 3] & 255L) << 24;
      // Used words are zeroed: a heap dump does not show the noise of past reports.
      pool[used] = pool[used + 1] = pool[used + 2] = pool[used + 3] = 0;
      used += 4;
      return w;
    }
  }

  /**
   * HMAC-DRBG (NIST SP 800-90A) with HMAC-SHA256, instantiated from the seed material; no
   * reseed, no additional input, no per-request limit. Every draw is one generate call;
   * below(n) takes calls of 20 bytes until a word is below the rejection limit (§3.9).
   */
  public static final class Keyed extends Words {
    private byte[] key = new byte[32];
    private byte[] v = new byte[32];

    public Keyed(byte[] seed) {
      java.util.Arrays.fill(v, (byte) 1);
      update(seed);
    }

    private void update(byte[] provided) {
      key = Bytes.hmac(key, Bytes.concat(v, new byte[] {0}, provided));
      v = Bytes.hmac(key, v);
      if (provided.length > 0) {
        key = Bytes.hmac(key, Bytes.concat(v, new byte[] {1}, provided));
        v = Bytes.hmac(key, v);
      }
    }

    /** Return the next `size` bytes: one generate call. */
    public byte[] bytes(int size) {
      byte[] out = new byte[size];
      for (int at = 0; at < size; at += 32) {
        v = Bytes.hmac(key, v);
        System.arraycopy(v, 0, out, at, Math.min(32, size - at));
      }
      update(new byte[0]);
      return out;
    }

    @Override
    public long[] words(int count) {
      byte[] raw = bytes(4 * count);
      long[] out = new long[count];
      for (int i = 0; i < count; i++) {
        out[i] = (raw[4 * i] & 255L) | (raw[4 * i + 1] & 255L) << 8 | (raw[4 * i + 2] & 255L) << 16
            | (raw[4 * i + 3] & 255L) << 24;
      }
      return out;
    }

    @Override
    public long word() {
      return words(1)[0];
    }

    @Override
    public long below(long n) {
      long limit = SCALE - SCALE % n;
      for (;;) {
        for (long w : words(5)) {
          if (w < limit) return w % n;
        }
      }
    }
  }
}
