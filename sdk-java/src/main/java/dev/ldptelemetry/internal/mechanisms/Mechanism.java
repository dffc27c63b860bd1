package dev.ldptelemetry.internal.mechanisms;

import java.math.BigInteger;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A built mechanism as one device uses it (PROTOCOL §3): the canonical bytes of a value, its
 * privatized report drawn from a source of words, the report's payload fields, and the
 * integers the task publishes in `derived` (§1.3).
 */
public abstract class Mechanism<R> {
  /** Return the bytes that identify a valid value (what memo keys hash); throw ValueError. */
  public abstract byte[] canonical(Object value);

  /** Return the privatized report of a value. */
  public abstract R privatize(Object value, Words rng);

  /** Return the report's payload fields, in wire order. */
  public abstract Map<String, Object> encode(R report);

  /** Return the integers the task publishes for this mechanism, as `derived` names them. */
  public abstract Map<String, Object> derived();

  /** Return the ε of one report, from the implemented thresholds. */
  public abstract double epsilon();

  /** Return the mechanism as the device with this key uses it (hh's level, PRRs). */
  public Mechanism<R> forDevice(byte[] deviceKey) {
    return this;
  }

  /** A value that does not fit the task (never carries the value itself). */
  public static final class ValueError extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public ValueError(String message) {
      super(message);
    }
  }

  /** A task this SDK cannot use (unknown kind, a bad field, a fingerprint it cannot reproduce). */
  public static final class TaskError extends RuntimeException {
    private static final long serialVersionUID = 1L;
    public final String reason;

    public TaskError(String message) {
      this("invalid_task", message);
    }

    public TaskError(String reason, String message) {
      super(message);
      this.reason = reason;
    }
  }

  public static TaskError tooSmall() {
    return new TaskError("epsilon is too small to implement with 32-bit thresholds");
  }

  public static final BigInteger S = Exact.SCALE;

  /** Return P(1) · 2^64 after a bit that is 1 with p/2^32 flips with t/2^32. */
  public static BigInteger flipped(long p, long t) {
    BigInteger bp = Exact.big(p);
    BigInteger bt = Exact.big(t);
    return bp.multiply(S.subtract(bt)).add(S.subtract(bp).multiply(bt));
  }

  public static Map<String, Object> map(Object... pairs) {
    Map<String, Object> out = new LinkedHashMap<String, Object>();
    for (int i = 0; i < pairs.length; i += 2) {
      Object v = pairs[i + 1];
      if (v instanceof Integer) v = Long.valueOf((Integer) v);
      out.put((String) pairs[i], v);
    }
    return out;
  }

  /** A mechanism that can be a longitudinal task's permanent layer (§3.9). */
  public abstract static class Permanent<R> extends Mechanism<R> {
    /** Return the report re-randomized with threshold T. */
    public abstract R reflip(R report, long threshold, Words rng);

    /** Return the threshold at which a report no longer depends on the value. */
    public abstract long irrLimit();

    /** Return the ε of one report with the instantaneous threshold T (0: the PRR's own). */
    public abstract double composedEpsilon(long threshold);

    /** Return the ways a flip spreads over (grr: d − 1; else 1). */
    public long ways() {
      return 1;
    }

    /** Return the instantaneous threshold of a flip probability, 0 &lt; T &lt; limit. */
    public long irrThreshold(double flip) {
      long threshold = flip > 0 ? Words.thresholdAtLeast(flip / ways()) : 0;
      if (!(threshold > 0 && threshold < irrLimit())) {
        throw new TaskError("longitudinal flip is out of range");
      }
      return threshold;
    }

    @Override
    public double epsilon() {
      return composedEpsilon(0);
    }
  }
}
