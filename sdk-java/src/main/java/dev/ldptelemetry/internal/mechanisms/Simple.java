package dev.ldptelemetry.internal.mechanisms;

import dev.ldptelemetry.internal.wire.*;
import java.math.BigInteger;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** rr and grr (PROTOCOL §3.2, §3.3), and what the domain kinds (grr, oue, ss) share. */
public final class Simple {
  private Simple() {}

  private static final BigInteger S = Exact.SCALE;

  /** Binary randomized response: a yes answers 1 when w &lt; T_yes, a no when w &lt; T_no. */
  public static final class Rr extends Mechanism.Permanent<Integer> {
    public final long yes;
    public final long no;

    public Rr(long yes, long no) {
      if (yes <= no) throw Mechanism.tooSmall();
      this.yes = yes;
      this.no = no;
    }

    public static Rr fromEpsilon(double epsilon) {
      long lie = Words.thresholdAtLeast(1 / (1 + Exact.exp(epsilon)));
      return new Rr(Words.SCALE - lie, lie);
    }

    /** rr from Warner's alpha and beta, computed exactly from the doubles' binary values. */
    public static Rr fromAlphaBeta(double alpha, double beta) {
      if (!(alpha > 0 && alpha < 1 && beta > 0 && beta < 1)) {
        throw new Mechanism.TaskError("alpha and beta must be in (0, 1)");
      }
      BigInteger unit = BigInteger.ONE.shiftLeft(1074);
      BigInteger a = Exact.scaled1074(alpha);
      BigInteger b = Exact.scaled1074(beta);
      BigInteger all = unit.multiply(unit);
      BigInteger no = Exact.ceilDiv(unit.subtract(a).multiply(b).multiply(S), all);
      BigInteger lieYes = Exact.ceilDiv(unit.subtract(a).multiply(unit.subtract(b)).multiply(S), all);
      return new Rr(Words.SCALE - lieYes.longValue(), no.longValue());
    }

    private static boolean answer(Object value) {
      if (value instanceof Boolean) return (Boolean) value;
      if ((value instanceof Integer || value instanceof Long)) {
        long v = ((Number) value).longValue();
        if (v == 0 || v == 1) return v == 1;
      }
      throw new Mechanism.ValueError("randomized response takes a boolean");
    }

    @Override
    public byte[] canonical(Object value) {
      return new byte[] {(byte) (answer(value) ? 1 : 0)};
    }

    @Override
    public Integer privatize(Object value, Words rng) {
      return rng.word() < (answer(value) ? yes : no) ? 1 : 0;
    }

    @Override
    public Map<String, Object> encode(Integer report) {
      return Mechanism.map("bit", report);
    }

    @Override
    public Map<String, Object> derived() {
      return Mechanism.map("T_yes", yes, "T_no", no);
    }

    @Override
    public Integer reflip(Integer report, long threshold, Words rng) {
      return report ^ (rng.word() < threshold ? 1 : 0);
    }

    @Override
    public long irrLimit() {
      return Words.SCALE / 2;
    }

    @Override
    public double composedEpsilon(long threshold) {
      BigInteger y = Mechanism.flipped(yes, threshold);
      BigInteger n = Mechanism.flipped(no, threshold);
      BigInteger all = S.multiply(S);
      return Math.max(Exact.logRatio(y, n), Exact.logRatio(all.subtract(n), all.subtract(y)));
    }
  }

  /** The largest domain a task may have. */
  public static final int MAX_DOMAIN = 4096;

  /** What grr, oue and ss share: the domain; a value is its index i, 4 bytes big-endian. */
  public static final class Domain {
    public final int d;
    private final Map<String, Integer> index = new HashMap<String, Integer>();

    public Domain(List<String> domain) {
      d = domain.size();
      for (int i = 0; i < d; i++) index.put(domain.get(i), i);
      if (d < 2 || d > MAX_DOMAIN || index.size() != d) {
        throw new Mechanism.TaskError("domain must hold 2 to 4,096 distinct strings");
      }
    }

    public int indexOf(Object value) {
      Integer i = value instanceof String ? index.get(value) : null;
      if (i == null) throw new Mechanism.ValueError("the value is not in this task's domain");
      return i;
    }

    public byte[] canonical(Object value) {
      return Bytes.bigEndian(indexOf(value), 4);
    }
  }

  /** Return the value a lying word names: word div T, skipping the truth. */
  public static long otherValue(long truth, long word, long threshold) {
    long other = word / threshold;
    return other + (other >= truth ? 1 : 0);
  }

  /** Generalized randomized response over the task's domain; a report is an index. */
  public static final class Grr extends Mechanism.Permanent<Integer> {
    public final Domain domain;
    public final long other;

    public Grr(double epsilon, List<String> values) {
      domain = new Domain(values);
      other = Words.thresholdAtLeast(1 / (Exact.exp(epsilon) + domain.d - 1));
      if (Words.SCALE - (domain.d - 1) * other <= other) throw Mechanism.tooSmall();
    }

    @Override
    public byte[] canonical(Object value) {
      return domain.canonical(value);
    }

    @Override
    public Integer privatize(Object value, Words rng) {
      return move(domain.indexOf(value), rng.word(), other);
    }

    private int move(int truth, long word, long threshold) {
      return word < (domain.d - 1) * threshold ? (int) otherValue(truth, word, threshold) : truth;
    }

    @Override
    public Map<String, Object> encode(Integer report) {
      return Mechanism.map("index", report);
    }

    @Override
    public Map<String, Object> derived() {
      return Mechanism.map("T", other);
    }

    @Override
    public Integer reflip(Integer report, long threshold, Words rng) {
      return move(report, rng.word(), threshold);
    }

    @Override
    public long ways() {
      return domain.d - 1;
    }

    @Override
    public long irrLimit() {
      return (Words.SCALE + domain.d - 1) / domain.d;
    }

    @Override
    public double composedEpsilon(long threshold) {
      BigInteger d = Exact.big(domain.d);
      BigInteger t = Exact.big(threshold);
      BigInteger o = Exact.big(other);
      BigInteger dm1 = d.subtract(BigInteger.ONE);
      BigInteger keep = S.subtract(dm1.multiply(o));
      BigInteger stay = S.subtract(dm1.multiply(t));
      BigInteger keepNow = keep.multiply(stay).add(dm1.multiply(o).multiply(t));
      BigInteger otherNow = keep.multiply(t).add(o.multiply(stay))
          .add(d.subtract(BigInteger.valueOf(2)).multiply(o).multiply(t));
      return Exact.logRatio(keepNow, otherNow);
    }
  }
}
