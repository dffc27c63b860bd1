package dev.ldptelemetry.internal.mechanisms;

import dev.ldptelemetry.internal.wire.*;
import java.math.BigInteger;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** oue and ss (PROTOCOL §3.11, §3.12): a report names a set of domain values. */
public final class Sets {
  private Sets() {}

  /** Optimized unary encoding: d bits, bit i kept with 2^31, the others set with `other`. */
  public static final class Oue extends Mechanism<byte[]> {
    public final Simple.Domain domain;
    public final long keep = Words.SCALE / 2;
    public final long other;

    public Oue(double epsilon, List<String> values) {
      domain = new Simple.Domain(values);
      other = Words.thresholdAtLeast(1 / (Exact.exp(epsilon) + 1));
      if (Words.SCALE - other <= other) throw Mechanism.tooSmall();
    }

    @Override
    public byte[] canonical(Object value) {
      return domain.canonical(value);
    }

    /** Draw d words (bit j: r_j &lt; other), then one for bit i (r &lt; keep); r_i goes unused. */
    @Override
    public byte[] privatize(Object value, Words rng) {
      int i = domain.indexOf(value);
      long[] words = rng.words(domain.d);
      words[i] = rng.word() < keep ? 0 : Words.SCALE - 1;
      return Sketches.packBelow(words, other);
    }

    @Override
    public Map<String, Object> encode(byte[] bits) {
      return Mechanism.map("bits", Bytes.base64url(bits));
    }

    @Override
    public Map<String, Object> derived() {
      return Mechanism.map("keep", keep, "other", other);
    }

    @Override
    public double epsilon() {
      return Exact.logRatio(Exact.SCALE.subtract(Exact.big(other)), Exact.big(other));
    }
  }

  /** Subset selection: ω of the d values, holding i unless the first word is below `exclude`. */
  public static final class Ss extends Mechanism<int[]> {
    public final Simple.Domain domain;
    public final int size;
    public final long exclude;

    public Ss(double epsilon, List<String> values) {
      domain = new Simple.Domain(values);
      int d = domain.d;
      double e = Exact.exp(epsilon);
      size = (int) Math.min(d - 1, Math.max(1, Math.floor(d / (e + 1) + 0.5)));
      exclude = Words.thresholdAtLeast((double) (d - size) / (size * e + d - size));
      if ((Words.SCALE - exclude) * (d - size) <= exclude * size) throw Mechanism.tooSmall();
    }

    @Override
    public byte[] canonical(Object value) {
      return domain.canonical(value);
    }

    /** Draw the include word, then the others by Floyd's algorithm; the indices sorted. */
    @Override
    public int[] privatize(Object value, Words rng) {
      int i = domain.indexOf(value);
      boolean include = rng.word() >= exclude;
      Set<Integer> chosen = new HashSet<Integer>();
      int[] out = new int[size];
      int n = 0;
      for (int j = domain.d - 1 - size + (include ? 1 : 0); j < domain.d - 1; j++) {
        int t = (int) rng.below(j + 1);
        int c = chosen.contains(t) ? j : t;
        chosen.add(c);
        out[n++] = c >= i ? c + 1 : c;
      }
      if (include) out[n++] = i;
      Arrays.sort(out);
      return out;
    }

    @Override
    public Map<String, Object> encode(int[] indices) {
      return Mechanism.map("indices", indices);
    }

    @Override
    public Map<String, Object> derived() {
      return Mechanism.map("subset_size", size, "exclude", exclude);
    }

    @Override
    public double epsilon() {
      BigInteger num = Exact.SCALE.subtract(Exact.big(exclude)).multiply(Exact.big(domain.d - size));
      return Exact.logRatio(num, Exact.big(exclude * size));
    }
  }
}
