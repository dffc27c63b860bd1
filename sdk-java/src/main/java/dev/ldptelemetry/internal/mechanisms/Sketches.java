package dev.ldptelemetry.internal.mechanisms;

import dev.ldptelemetry.internal.wire.*;
import java.math.BigInteger;
import java.util.Map;

/** cms, hcms and olh (PROTOCOL §3.4–§3.6): a row j, the value's bucket h_j(key), noise. */
public final class Sketches {
  private Sketches() {}

  private static final BigInteger S = Exact.SCALE;

  /** Return the string value or throw ValueError (a lone surrogate is not text: §3.1). */
  public static String text(Object value) {
    if (!(value instanceof String) || !Bytes.wellFormed((String) value)) {
      throw new Mechanism.ValueError("this task takes a string value");
    }
    return (String) value;
  }

  /** Return the flags word &lt; T packed most significant bit first. */
  public static byte[] packBelow(long[] words, long threshold) {
    byte[] out = new byte[(words.length + 7) >> 3];
    for (int i = 0; i < words.length; i++) {
      if (words[i] < threshold) out[i >> 3] |= (byte) (0x80 >> (i & 7));
    }
    return out;
  }

  /** What the sketches share: k rows, the hash family, a flip threshold and its ε. */
  public abstract static class Sketch<R> extends Mechanism.Permanent<R> {
    public final int k;
    public final int m;
    public final long seed;
    public final long flip;
    public final Hashing.Rows rows;

    public Sketch(int k, int m, long seed, long flip) {
      this.k = k;
      this.m = m;
      this.seed = seed;
      this.flip = flip;
      if (Words.SCALE - flip <= flip) throw Mechanism.tooSmall();
      rows = new Hashing.Rows(seed, k, m);
    }

    public long key(byte[] bytes) {
      return Hashing.murmur64(bytes, seed);
    }

    @Override
    public byte[] canonical(Object value) {
      return Bytes.utf8(text(value));
    }

    @Override
    public R privatize(Object value, Words rng) {
      return privatizeBytes(Bytes.utf8(text(value)), rng);
    }

    public abstract R privatizeBytes(byte[] bytes, Words rng);

    /** Coordinates in which two values' reports differ before noise (cms: 2). */
    public int changes() {
      return 1;
    }

    @Override
    public long irrLimit() {
      return Words.SCALE / 2;
    }

    @Override
    public double composedEpsilon(long threshold) {
      BigInteger now = Mechanism.flipped(flip, threshold);
      return changes() * Exact.logRatio(S.multiply(S).subtract(now), now);
    }

    @Override
    public Map<String, Object> derived() {
      return Mechanism.map("T", flip);
    }
  }

  /** A sketch report: a row and m packed bits. */
  public static final class Bits {
    public final int row;
    public final byte[] bits;

    public Bits(int row, byte[] bits) {
      this.row = row;
      this.bits = bits;
    }
  }

  /** Apple's count-mean sketch: a row and m bits, each flipped with T = ⌈2^32/(1+e^(ε/2))⌉. */
  public static final class Cms extends Sketch<Bits> {
    public Cms(int k, int m, long seed, long flip) {
      super(k, m, seed, flip);
    }

    public static Cms fromEpsilon(double epsilon, int k, int m, long seed) {
      return new Cms(k, m, seed, Words.thresholdAtLeast(1 / (1 + Exact.exp(epsilon / 2))));
    }

    @Override
    public int changes() {
      return 2;
    }

    @Override
    public Bits privatizeBytes(byte[] bytes, Words rng) {
      long key = key(bytes);
      int row = (int) rng.below(k);
      byte[] bits = packBelow(rng.words(m), flip);
      int bucket = rows.bucket(key, row);
      bits[bucket >> 3] ^= (byte) (0x80 >> (bucket & 7));
      return new Bits(row, bits);
    }

    @Override
    public Map<String, Object> encode(Bits report) {
      return Mechanism.map("row", report.row, "bits", Bytes.base64url(report.bits));
    }

    @Override
    public Bits reflip(Bits report, long threshold, Words rng) {
      byte[] flips = packBelow(rng.words(m), threshold);
      byte[] out = new byte[flips.length];
      for (int i = 0; i < out.length; i++) out[i] = (byte) (report.bits[i] ^ flips[i]);
      return new Bits(report.row, out);
    }
  }

  /** An hcms report: a row, a column and the reported sign (1 for +1). */
  public static final class Sign {
    public final int row;
    public final int col;
    public final int bit;

    public Sign(int row, int col, int bit) {
      this.row = row;
      this.col = col;
      this.bit = bit;
    }
  }

  /** Hadamard count-mean sketch: a row, a column and one sign bit. */
  public static final class Hcms extends Sketch<Sign> {
    public Hcms(int k, int m, long seed, long flip) {
      super(k, m, seed, flip);
    }

    public static Hcms fromEpsilon(double epsilon, int k, int m, long seed) {
      if ((m & (m - 1)) != 0) throw new Mechanism.TaskError("hcms needs m a power of two");
      return new Hcms(k, m, seed, Words.thresholdAtLeast(1 / (1 + Exact.exp(epsilon))));
    }

    @Override
    public Sign privatizeBytes(byte[] bytes, Words rng) {
      long key = key(bytes);
      int row = (int) rng.below(k);
      int col = (int) rng.below(m);
      boolean plus = Integer.bitCount(col & rows.bucket(key, row)) % 2 == 0;
      boolean flipped = rng.word() < flip;
      return new Sign(row, col, plus != flipped ? 1 : 0);
    }

    @Override
    public Map<String, Object> encode(Sign report) {
      return Mechanism.map("row", report.row, "col", report.col, "bit", report.bit);
    }

    @Override
    public Sign reflip(Sign report, long threshold, Words rng) {
      return new Sign(report.row, report.col, report.bit ^ (rng.word() < threshold ? 1 : 0));
    }
  }

  /** An olh report: a row and a bucket index. */
  public static final class Hashed {
    public final int row;
    public final int index;

    public Hashed(int row, int index) {
      this.row = row;
      this.index = index;
    }
  }

  /** Optimized local hashing: g = min(65536, max(2, ⌊e^ε⌋ + 1)) buckets, GRR over them. */
  public static final class Olh extends Sketch<Hashed> {
    public Olh(int k, int g, long seed, long other) {
      super(k, g, seed, other);
      if (Words.SCALE - (g - 1) * other <= other) throw Mechanism.tooSmall();
    }

    public static Olh fromEpsilon(double epsilon, int k, long seed) {
      double e = Exact.exp(epsilon);
      int g = (int) Math.min(65536, Math.max(2, Math.floor(e) + 1));
      return new Olh(k, g, seed, Words.thresholdAtLeast(1 / (e + g - 1)));
    }

    @Override
    public Hashed privatizeBytes(byte[] bytes, Words rng) {
      long key = key(bytes);
      int row = (int) rng.below(k);
      long word = rng.word();
      int truth = rows.bucket(key, row);
      boolean lie = word < (m - 1) * flip;
      return new Hashed(row, lie ? (int) Simple.otherValue(truth, word, flip) : truth);
    }

    @Override
    public Map<String, Object> encode(Hashed report) {
      return Mechanism.map("row", report.row, "index", report.index);
    }

    @Override
    public Map<String, Object> derived() {
      return Mechanism.map("g", m, "T", flip);
    }

    @Override
    public double epsilon() {
      return Exact.logRatio(S.subtract(Exact.big((m - 1) * flip)), Exact.big(flip));
    }

    @Override
    public Hashed reflip(Hashed report, long threshold, Words rng) {
      throw new Mechanism.TaskError("olh takes no longitudinal option");
    }
  }
}
