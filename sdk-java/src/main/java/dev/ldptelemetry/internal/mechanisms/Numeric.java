package dev.ldptelemetry.internal.mechanisms;

import dev.ldptelemetry.internal.wire.*;
import java.util.Map;

/**
 * numeric (PROTOCOL §3.8): a number is clipped to [lo, hi], mapped to one of d buckets
 * (linearly or on a log scale), and the bucket is privatized by the discretized Square Wave
 * or the one-bit mean.
 */
public abstract class Numeric extends Mechanism.Permanent<Integer> {
  public final double lo;
  public final double hi;
  public final int d;
  public final boolean log;
  private final double low;
  private final double high;

  public Numeric(double lo, double hi, int d, boolean log) {
    if (!(lo < hi) || (log && !(lo > 0))) {
      throw new TaskError("numeric needs lo < hi (and lo > 0 on a log scale)");
    }
    this.lo = lo;
    this.hi = hi;
    this.d = d;
    this.log = log;
    low = forward(lo);
    high = forward(hi);
  }

  private double forward(double x) {
    return log ? Exact.log(x) : x;
  }

  /** Return the bucket of a value (clipped to the range), or throw ValueError. */
  public int bucketOf(Object value) {
    if (!(value instanceof Number) || Double.isNaN(((Number) value).doubleValue())) {
      throw new ValueError("a numeric task takes a number");
    }
    double clipped = Math.min(Math.max(((Number) value).doubleValue(), lo), hi);
    double unit = (forward(clipped) - low) / (high - low);
    return (int) Math.min((long) (unit * d), d - 1);
  }

  @Override
  public byte[] canonical(Object value) {
    return Bytes.bigEndian(bucketOf(value), 4);
  }

  @Override
  public Map<String, Object> encode(Integer report) {
    return map("index", report);
  }

  // A permanent layer only as 1bit (§3.9, 1.1): Square Wave takes no longitudinal.
  @Override
  public Integer reflip(Integer report, long threshold, Words rng) {
    throw new TaskError("numeric sw takes no longitudinal");
  }

  @Override
  public long irrLimit() {
    throw new TaskError("numeric sw takes no longitudinal");
  }

  @Override
  public double composedEpsilon(long threshold) {
    throw new TaskError("numeric sw takes no longitudinal");
  }

  /** Square Wave: d + 2w outputs; the 2w + 1 near the bucket have P words each, the rest T. */
  public static final class SquareWave extends Numeric {
    public final long w;
    public final long far;
    public final long near;
    public final long used;

    public SquareWave(double epsilon, double lo, double hi, int d, boolean log) {
      super(lo, hi, d, log);
      double e = Exact.exp(epsilon);
      double half = (epsilon * e - e + 1) / (2 * e * (e - 1 - epsilon));
      w = (long) Math.max(0, Exact.roundHalfEven(half * d));
      long nearCount = 2 * w + 1;
      far = Words.thresholdAtLeast(1 / (nearCount * e + (d - 1)));
      near = (Words.SCALE - (d - 1) * far) / nearCount;
      if (near <= far) throw tooSmall();
      used = (d - 1) * far + nearCount * near;
    }

    @Override
    public Integer privatize(Object value, Words rng) {
      int truth = bucketOf(value);
      long word = rng.word();
      while (word >= used) word = rng.word();
      long lie = (d - 1) * far;
      if (word < lie) {
        long other = word / far;
        return (int) (other + (other >= truth ? 2 * w + 1 : 0));
      }
      return (int) (truth + (word - lie) / near);
    }

    @Override
    public Map<String, Object> derived() {
      return map("w", w, "T", far, "P", near, "U", used);
    }

    @Override
    public double epsilon() {
      return Exact.logRatio(Exact.big(near), Exact.big(far));
    }
  }

  /** The one-bit mean: 1 with probability (L + i·S) / 2^32 for bucket i. */
  public static final class OneBit extends Numeric {
    public final long lowWords;
    public final long step;

    public OneBit(double epsilon, double lo, double hi, int d) {
      super(lo, hi, d, false);
      lowWords = Words.thresholdAtLeast(1 / (Exact.exp(epsilon) + 1));
      step = (Words.SCALE - 2 * lowWords) / (d - 1);
      if (step < 1) throw tooSmall();
    }

    @Override
    public Integer privatize(Object value, Words rng) {
      int bucket = bucketOf(value);
      return rng.word() < lowWords + bucket * step ? 1 : 0;
    }

    @Override
    public Map<String, Object> derived() {
      return map("L", lowWords, "S", step);
    }

    @Override
    public double epsilon() {
      return Exact.logRatio(Exact.big(lowWords + (d - 1) * step), Exact.big(lowWords));
    }

    /** The IRR flips the bit as rr's does (§3.9). */
    @Override
    public Integer reflip(Integer report, long threshold, Words rng) {
      return report ^ (rng.word() < threshold ? 1 : 0);
    }

    @Override
    public long irrLimit() {
      return Words.SCALE / 2;
    }

    /** ε₁ as rr's, the worst pair being the first and last buckets (p_0 = L, p_{d−1} = H). */
    @Override
    public double composedEpsilon(long threshold) {
      java.math.BigInteger high = flipped(lowWords + (d - 1) * step, threshold);
      java.math.BigInteger low = flipped(lowWords, threshold);
      java.math.BigInteger all = S.multiply(S);
      return Math.max(Exact.logRatio(high, low), Exact.logRatio(all.subtract(low), all.subtract(high)));
    }
  }
}
