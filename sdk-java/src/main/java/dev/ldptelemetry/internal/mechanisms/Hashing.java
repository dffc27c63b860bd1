package dev.ldptelemetry.internal.mechanisms;

/**
 * The task's hash family (PROTOCOL §3.1): a MurmurHash3 x64 128 key per value (its low 64-bit
 * half) and k row hashes by multiply-add-shift with SplitMix64 constants. Java's long is the
 * 64-bit word; >>> keeps it unsigned.
 */
public final class Hashing {
  private Hashing() {}

  private static final long C1 = 0x87c37b91114253d5L;
  private static final long C2 = 0x4cf5ad432745937fL;

  private static long fmix(long k) {
    k ^= k >>> 33;
    k *= 0xff51afd7ed558ccdL;
    k ^= k >>> 33;
    k *= 0xc4ceb9fe1a85ec53L;
    return k ^ (k >>> 33);
  }

  private static long mixK1(long k1) {
    return Long.rotateLeft(k1 * C1, 31) * C2;
  }

  private static long mixK2(long k2) {
    return Long.rotateLeft(k2 * C2, 33) * C1;
  }

  private static long littleEndian(byte[] data, int at) {
    long v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | (data[at + i] & 255L);
    return v;
  }

  /** Return the first (low) 64-bit half of MurmurHash3 x64 128 of the bytes. */
  public static long murmur64(byte[] data, long seed) {
    int blocks = data.length >> 4;
    long h1 = seed & 0xffffffffL;
    long h2 = h1;
    for (int i = 0; i < blocks; i++) {
      h1 ^= mixK1(littleEndian(data, 16 * i));
      h1 = (Long.rotateLeft(h1, 27) + h2) * 5 + 0x52dce729L;
      h2 ^= mixK2(littleEndian(data, 16 * i + 8));
      h2 = (Long.rotateLeft(h2, 31) + h1) * 5 + 0x38495ab5L;
    }
    int tail = 16 * blocks;
    long k1 = 0;
    long k2 = 0;
    for (int i = data.length - 1; i >= tail; i--) {
      long b = data[i] & 255L;
      if (i - tail >= 8) k2 |= b << (8 * (i - tail - 8));
      else k1 |= b << (8 * (i - tail));
    }
    if (data.length - tail > 8) h2 ^= mixK2(k2);
    if (data.length > tail) h1 ^= mixK1(k1);
    h1 ^= data.length;
    h2 ^= data.length;
    h1 += h2;
    h2 += h1;
    h1 = fmix(h1);
    h2 = fmix(h2);
    return h1 + h2;
  }

  /** Return word i (1-based) of SplitMix64 started at seed. */
  public static long splitmix64(long seed, long i) {
    long z = seed + i * 0x9E3779B97F4A7C15L;
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  /** The k row hashes h_j: key to [0, m), constants computed once per task. */
  public static final class Rows {
    public final long seed;
    public final int m;
    private final long[] a;
    private final long[] b;

    public Rows(long seed, int k, int m) {
      this.seed = seed;
      this.m = m;
      // k ≤ 2^20 rows: 16 MiB at most, computed lazily past the first 4,096.
      int cached = Math.min(k, 4096);
      a = new long[cached];
      b = new long[cached];
      for (int j = 0; j < cached; j++) {
        a[j] = splitmix64(seed, 2L * j + 1) | 1L;
        b[j] = splitmix64(seed, 2L * j + 2);
      }
    }

    public long a(int row) {
      return row < a.length ? a[row] : splitmix64(seed, 2L * row + 1) | 1L;
    }

    public long b(int row) {
      return row < b.length ? b[row] : splitmix64(seed, 2L * row + 2);
    }

    /** Return h_row(key) = ((((a·key + b) mod 2^64) >> 32) · m) >> 32. */
    public int bucket(long key, int row) {
      long top = (a(row) * key + b(row)) >>> 32;
      return (int) ((top * m) >>> 32);
    }
  }
}
