package dev.ldptelemetry;

import dev.ldptelemetry.internal.mechanisms.*;
import dev.ldptelemetry.internal.wire.*;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Exact privacy: each one-word mechanism's output is a function of its word, constant on
 * intervals between its thresholds. The code is run at both ends of every interval (so an
 * off-by-one at a threshold fails), the words per output are counted from the intervals, and
 * every likelihood ratio between two values is checked against e^ε_eff (ε_eff at most the ε
 * asked). Enumerated, not sampled.
 */
class PrivacyTest {
  private static final long S = Words.SCALE;

  /** Words that give `first` then (sw's rejection) whatever follows. */
  private static Words words(long... given) {
    List<Object> list = new ArrayList<Object>();
    for (long w : given) list.add(w);
    return new FixedWords(list);
  }

  /** Return output → number of words (of `total`) giving it, checking each interval at both ends. */
  private static Map<Object, Long> enumerate(Mechanism<?> m, Object value, long[] cuts, long total, long redraw) {
    Map<Object, Long> counts = new HashMap<Object, Long>();
    long start = 0;
    for (int i = 0; i <= cuts.length; i++) {
      long end = i < cuts.length ? cuts[i] : total;
      if (end <= start) continue;
      String first = output(m, value, words(start, redraw));
      String last = output(m, value, words(end - 1, redraw));
      assertEquals(first, last, "not constant on [" + start + ", " + end + ")");
      Long before = counts.get(first);
      counts.put(first, (before == null ? 0 : before) + end - start);
      start = end;
    }
    return counts;
  }

  @SuppressWarnings({"unchecked", "rawtypes"})
  private static String output(Mechanism m, Object value, Words w) {
    return Json.write(m.encode(m.privatize(value, w)));
  }

  /** Check every ratio P(o|a)/P(o|b) ≤ e^ε_eff, exactly, and ε_eff ≤ the ε asked. */
  private static void checkRatios(List<Map<Object, Long>> byValue, double epsilonEff, double asked) {
    assertTrue(epsilonEff <= asked + 1e-12, epsilonEff + " > " + asked);
    BigInteger[] bound = ratioBound(epsilonEff);
    for (Map<Object, Long> a : byValue) {
      for (Map<Object, Long> b : byValue) {
        for (Map.Entry<Object, Long> e : a.entrySet()) {
          Long other = b.get(e.getKey());
          assertTrue(other != null && other > 0, "an output one value never gives: " + e.getKey());
          // a / other ≤ num / den, as integers.
          assertTrue(BigInteger.valueOf(e.getValue()).multiply(bound[1])
              .compareTo(BigInteger.valueOf(other).multiply(bound[0])) <= 0, e.getKey() + " exceeds e^eps");
        }
      }
    }
  }

  /** e^ε (with a relative 1e-12 for the ln's last bit) as a fraction num/den. */
  private static BigInteger[] ratioBound(double epsilon) {
    java.math.BigDecimal e = new java.math.BigDecimal(Math.exp(epsilon) * (1 + 1e-12));
    return new BigInteger[] {e.unscaledValue(), BigInteger.TEN.pow(Math.max(0, e.scale()))};
  }

  @Test
  void randomizedResponse() {
    Simple.Rr rr = Simple.Rr.fromEpsilon(1.3);
    List<Map<Object, Long>> all = new ArrayList<Map<Object, Long>>();
    for (boolean v : new boolean[] {true, false}) {
      all.add(enumerate(rr, v, new long[] {Math.min(rr.no, rr.yes), Math.max(rr.no, rr.yes)}, S, 0));
    }
    checkRatios(all, rr.epsilon(), 1.3);
    Simple.Rr warner = Simple.Rr.fromAlphaBeta(0.5, 0.25);
    assertEquals(2_684_354_560L, warner.yes);
    assertEquals(536_870_912L, warner.no);
  }

  @Test
  void generalizedRandomizedResponse() {
    Simple.Grr grr = new Simple.Grr(2.0, Arrays.asList("a", "b", "c", "d", "e"));
    long[] cuts = new long[5];
    for (int k = 1; k <= 4; k++) cuts[k - 1] = k * grr.other;
    cuts[4] = S;
    List<Map<Object, Long>> all = new ArrayList<Map<Object, Long>>();
    for (String v : Arrays.asList("a", "b", "c", "d", "e")) all.add(enumerate(grr, v, cuts, S, 0));
    for (Map<Object, Long> counts : all) assertEquals(5, counts.size());
    checkRatios(all, grr.epsilon(), 2.0);
  }

  @Test
  void squareWaveAndOneBit() {
    Numeric.SquareWave sw = new Numeric.SquareWave(1.5, 0, 10, 6, false);
    List<Long> cuts = new ArrayList<Long>();
    long lie = (sw.d - 1) * sw.far;
    for (long k = 1; k <= sw.d - 1; k++) cuts.add(k * sw.far);
    for (long k = 1; k <= 2 * sw.w + 1; k++) cuts.add(lie + k * sw.near);
    long[] c = new long[cuts.size()];
    for (int i = 0; i < c.length; i++) c[i] = cuts.get(i);
    assertEquals(sw.used, c[c.length - 1]);
    List<Map<Object, Long>> all = new ArrayList<Map<Object, Long>>();
    for (int bucket = 0; bucket < sw.d; bucket++) {
      Map<Object, Long> counts = enumerate(sw, bucket * 10.0 / 6 + 0.01, c, sw.used, 0);
      assertEquals(sw.d + 2 * sw.w, counts.size());
      all.add(counts);
    }
    checkRatios(all, sw.epsilon(), 1.5);
    // A word at or above U is drawn again: the next one decides.
    assertEquals(Json.write(sw.encode(sw.privatize(5.0, words(0)))), Json.write(sw.encode(sw.privatize(5.0, words(S - 1, 0)))));
    Numeric.OneBit bit = new Numeric.OneBit(1.0, 0, 10, 4);
    List<Map<Object, Long>> bits = new ArrayList<Map<Object, Long>>();
    for (int bucket = 0; bucket < 4; bucket++) {
      bits.add(enumerate(bit, bucket * 2.5 + 0.1, new long[] {bit.lowWords + bucket * bit.step}, S, 0));
    }
    checkRatios(bits, bit.epsilon(), 1.0);
  }

  @Test
  void sketchBitsFlipExactlyBelowTheirThreshold() {
    Sketches.Cms cms = Sketches.Cms.fromEpsilon(3.0, 1, 16, 5);
    long[] below = new long[17];
    long[] at = new long[17];
    Arrays.fill(below, cms.flip - 1);
    Arrays.fill(at, cms.flip);
    below[0] = at[0] = 0; // the row
    Sketches.Bits ones = cms.privatize("x", words(below));
    Sketches.Bits zeros = cms.privatize("x", words(at));
    int bucket = cms.rows.bucket(cms.key(Bytes.utf8("x")), 0);
    for (int pos = 0; pos < 16; pos++) {
      int one = (ones.bits[pos >> 3] >> (7 - (pos & 7))) & 1;
      int zero = (zeros.bits[pos >> 3] >> (7 - (pos & 7))) & 1;
      assertEquals(pos == bucket ? 0 : 1, one);
      assertEquals(pos == bucket ? 1 : 0, zero);
    }
    // Two values' reports differ before noise in at most 2 positions, each with odds (2^32 − T)/T.
    double perBit = Math.log((double) (S - cms.flip) / cms.flip);
    assertEquals(2 * perBit, cms.epsilon(), 1e-9);
    assertTrue(cms.epsilon() <= 3.0 + 1e-12);
    Sketches.Hcms hcms = Sketches.Hcms.fromEpsilon(2.0, 1, 8, 5);
    List<Map<Object, Long>> all = new ArrayList<Map<Object, Long>>();
    for (String v : Arrays.asList("x", "y", "z", "w")) {
      Map<Object, Long> counts = new HashMap<Object, Long>();
      for (int col = 0; col < 8; col++) {
        for (long[] cut : new long[][] {{0, hcms.flip}, {hcms.flip, S}}) {
          Sketches.Sign first = hcms.privatize(v, words(0, col, cut[0]));
          Sketches.Sign last = hcms.privatize(v, words(0, col, cut[1] - 1));
          assertEquals(first.bit, last.bit);
          String key = col + ":" + first.bit;
          Long before = counts.get(key);
          counts.put(key, (before == null ? 0 : before) + cut[1] - cut[0]);
        }
      }
      all.add(counts);
    }
    checkRatios(all, hcms.epsilon(), 2.0);
  }

  @Test
  void unaryEncodingAndSubsets() {
    Sets.Oue oue = new Sets.Oue(1.0, Arrays.asList("a", "b", "c"));
    assertTrue(oue.epsilon() <= 1.0 + 1e-12);
    // bit j ≠ i set below `other`; bit i set below keep = 2^31 whatever r_i was.
    assertEquals("4A", Bytes.base64url(oue.privatize("a", words(S - 1, oue.other - 1, oue.other - 1, (S >> 1) - 1))));
    assertEquals("YA", Bytes.base64url(oue.privatize("a", words(0, oue.other - 1, oue.other - 1, S >> 1))));
    assertEquals("AA", Bytes.base64url(oue.privatize("a", words(0, oue.other, oue.other, S >> 1))));
    Sets.Ss ss = new Sets.Ss(1.0, Arrays.asList("a", "b", "c", "d", "e", "f", "g", "h", "i", "j"));
    assertTrue(ss.epsilon() <= 1.0 + 1e-12);
    int[] in = ss.privatize("c", words(ss.exclude, 0, 0, 0, 0));
    int[] out = ss.privatize("c", words(ss.exclude - 1, 0, 0, 0, 0));
    assertTrue(Arrays.binarySearch(in, 2) >= 0 && in.length == ss.size);
    assertTrue(Arrays.binarySearch(out, 2) < 0 && out.length == ss.size);
  }
}
