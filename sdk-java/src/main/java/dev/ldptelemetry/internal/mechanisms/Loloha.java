package dev.ldptelemetry.internal.mechanisms;

import dev.ldptelemetry.internal.wire.*;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * LOLOHA (PROTOCOL §3.13, protocol 1.1): a grr task's values hashed to one of g buckets by
 * the device's row of a public family of `seeds` rows; the permanent response is GRR over
 * the g buckets at ε∞ (one per bucket, from the DRBG), re-randomized per report at T_i.
 */
public final class Loloha extends Mechanism<int[]> {
  private static final byte[] ROW_CONTEXT = Bytes.utf8("ldp-telemetry hash row\0");
  public static final int MAX_G = 256;

  public final Simple.Domain domain;
  public final int g;
  public final int seeds;
  public final Hashing.Rows rows;
  /** GRR over the g buckets, and its per-bucket permanent layer (T_i, F, the device key). */
  public final Longitudinal<Integer> buckets;
  /** The device's row (-1: not a device's copy). */
  public final int row;

  public Loloha(Simple.Domain domain, int g, int seeds, long hashSeed, Longitudinal<Integer> buckets, int row) {
    this.domain = domain;
    this.g = g;
    this.seeds = seeds;
    this.rows = new Hashing.Rows(hashSeed, seeds, g);
    this.buckets = buckets;
    this.row = row;
  }

  /** Return GRR over the g buckets at ε∞: its values are the bucket numbers as strings. */
  public static Simple.Grr bucketGrr(double epsilonInf, int g) {
    List<String> names = new ArrayList<String>();
    for (int b = 0; b < g; b++) names.add(Integer.toString(b));
    return new Simple.Grr(epsilonInf, names);
  }

  /** Return OLOLOHA's g: the least V(g) over 2 … 256, the smallest on ties (§3.13, in doubles). */
  public static int optimalG(double epsilonInf, double epsilon1) {
    double a = Exact.exp(epsilonInf);
    double b = Exact.exp(epsilon1);
    int best = 2;
    double least = Double.POSITIVE_INFINITY;
    for (int g = 2; g <= MAX_G; g++) {
      double p1 = a / (a + g - 1);
      double q1 = 1 / (a + g - 1);
      double t = (p1 - b * q1) / (b * (p1 - q1) - (1 - g * p1));
      double p = p1 + t * (1 - g * p1);
      double v = (1.0 / g) * (1 - 1.0 / g) / ((p - 1.0 / g) * (p - 1.0 / g));
      if (v < least) {
        least = v;
        best = g;
      }
    }
    return best;
  }

  /** Return the bucket of a value at the device's row (§3.13: MurmurHash3 with hash_seed, then h_row). */
  public int bucketOf(Object value) {
    if (row < 0) throw new TaskError("the row belongs to a device");
    domain.canonical(value); // a value outside the domain is refused
    return rows.bucket(Hashing.murmur64(Bytes.utf8((String) value), rows.seed), row);
  }

  @Override
  public byte[] canonical(Object value) {
    return domain.canonical(value);
  }

  /** The privacy ledger's V (§4): the bucket, so values sharing it share one entry. */
  public byte[] ledgerValue(Object value) {
    return Bytes.bigEndian(bucketOf(value), 4);
  }

  /** Return V of a record's ledger entry: LOLOHA's bucket at the device's row, else the canonical value. */
  public static byte[] ledgerValue(Mechanism<?> mechanism, byte[] secret, String taskId, Object value, byte[] canonical) {
    if (!(mechanism instanceof Loloha)) return canonical;
    return ((Loloha) mechanism).forDevice(Wire.deviceKey(secret, taskId)).ledgerValue(value);
  }

  @Override
  public int[] privatize(Object value, Words rng) {
    return new int[] {row, buckets.privatize(Integer.toString(bucketOf(value)), rng)};
  }

  @Override
  public Map<String, Object> encode(int[] report) {
    return map("row", report[0], "index", report[1]);
  }

  @Override
  public Map<String, Object> derived() {
    Map<String, Object> out = map("g", g);
    out.putAll(buckets.derived());
    return out;
  }

  @Override
  public double epsilon() {
    return buckets.epsilon();
  }

  public double epsilonInf() {
    return buckets.epsilonInf();
  }

  /** Return the seed material of a device's row: device_key ‖ "ldp-telemetry hash row" ‖ 0x00 ‖ F. */
  public static byte[] rowSeed(byte[] deviceKey, String identity) {
    return Bytes.concat(deviceKey, ROW_CONTEXT, Bytes.utf8(identity));
  }

  @Override
  public Loloha forDevice(byte[] deviceKey) {
    int drawn = (int) new Words.Keyed(rowSeed(deviceKey, buckets.identity)).below(seeds);
    return new Loloha(domain, g, seeds, rows.seed, buckets.forDevice(deviceKey), drawn);
  }
}
