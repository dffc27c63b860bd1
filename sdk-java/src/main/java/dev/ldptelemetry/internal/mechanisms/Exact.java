package dev.ldptelemetry.internal.mechanisms;

import java.math.BigInteger;

/**
 * Exact arithmetic where the reference computes with fractions (PROTOCOL §3.2, §3.9): a ratio
 * of big integers correctly rounded to a double (as Python's int / int), then its ln.
 * Transcendentals use StrictMath (fdlibm): the same bits on every JVM and Android.
 */
public final class Exact {
  private Exact() {}

  public static final BigInteger SCALE = BigInteger.ONE.shiftLeft(32);

  public static BigInteger big(long x) {
    return BigInteger.valueOf(x);
  }

  /** Return num / den (positive) correctly rounded to the nearest double, ties to even. */
  public static double ratio(BigInteger num, BigInteger den) {
    int shift = Math.max(0, 56 - (num.bitLength() - den.bitLength()));
    BigInteger scaled = num.shiftLeft(shift);
    BigInteger[] qr = scaled.divideAndRemainder(den);
    BigInteger q = qr[0];
    boolean sticky = qr[1].signum() != 0;
    int drop = q.bitLength() - 53;
    long mantissa;
    if (drop <= 0) {
      mantissa = q.longValue();
      drop = 0;
    } else {
      BigInteger rest = q.and(BigInteger.ONE.shiftLeft(drop).subtract(BigInteger.ONE));
      mantissa = q.shiftRight(drop).longValue();
      BigInteger half = BigInteger.ONE.shiftLeft(drop - 1);
      int against = rest.compareTo(half);
      if (against > 0 || (against == 0 && sticky) || (against == 0 && (mantissa & 1) == 1)) {
        mantissa++;
      }
    }
    return Math.scalb((double) mantissa, drop - shift);
  }

  /** Return ln(num / den) from the correctly rounded ratio. */
  public static double logRatio(BigInteger num, BigInteger den) {
    return StrictMath.log(ratio(num, den));
  }

  /** Return round-half-even of x (Python's round()). */
  public static double roundHalfEven(double x) {
    return Math.rint(x);
  }

  /** Return x · 2^1074 (x ≥ 0 finite) as an exact integer. */
  public static BigInteger scaled1074(double x) {
    long bits = Double.doubleToRawLongBits(x);
    int biased = (int) ((bits >>> 52) & 0x7ff);
    long fraction = bits & ((1L << 52) - 1);
    if (biased == 0) return big(fraction);
    return big(fraction | (1L << 52)).shiftLeft(biased - 1);
  }

  /** Return ceil(a / b) of positive integers. */
  public static BigInteger ceilDiv(BigInteger a, BigInteger b) {
    return a.add(b).subtract(BigInteger.ONE).divide(b);
  }

  public static double exp(double x) {
    return StrictMath.exp(x);
  }

  public static double log(double x) {
    return StrictMath.log(x);
  }
}
