package dev.ldptelemetry.internal.mechanisms;

import dev.ldptelemetry.internal.wire.*;
import java.util.Map;

/**
 * Longitudinal tasks (PROTOCOL §3.9): a permanent response per value, drawn from HMAC-DRBG
 * keyed by the device's task key, the task's mechanism fields and the value (nothing is
 * stored), re-randomized with fresh CSPRNG words for each report.
 */
public final class Longitudinal<R> extends Mechanism<R> {
  private static final byte[] CONTEXT = Bytes.utf8("ldp-telemetry permanent response\0");

  public final Permanent<R> permanent;
  /** The instantaneous layer's threshold T_i. */
  public final long threshold;
  /** The canonical JSON of the task's mechanism fields (F of §3.9). */
  public final String identity;
  private final byte[] deviceKey;

  public Longitudinal(Permanent<R> permanent, long threshold, String identity, byte[] deviceKey) {
    this.permanent = permanent;
    this.threshold = threshold;
    this.identity = identity;
    this.deviceKey = deviceKey;
  }

  @Override
  public byte[] canonical(Object value) {
    return permanent.canonical(value);
  }

  /** Return the seed material of a value's permanent response. */
  public byte[] seedMaterial(Object value) {
    return Bytes.concat(deviceKey, CONTEXT, Bytes.utf8(identity), new byte[] {0}, permanent.canonical(value));
  }

  /** Return the device's permanent response for a value (the same every time). */
  public R permanentResponse(Object value) {
    if (deviceKey == null) throw new TaskError("the permanent response belongs to a device");
    return permanent.privatize(value, new Words.Keyed(seedMaterial(value)));
  }

  @Override
  public R privatize(Object value, Words rng) {
    R prr = deviceKey != null ? permanentResponse(value) : permanent.privatize(value, rng);
    return permanent.reflip(prr, threshold, rng);
  }

  @Override
  public Map<String, Object> encode(R report) {
    return permanent.encode(report);
  }

  @Override
  public Map<String, Object> derived() {
    Map<String, Object> out = permanent.derived();
    out.put("T_i", threshold);
    return out;
  }

  @Override
  public double epsilon() {
    return permanent.composedEpsilon(threshold);
  }

  /** Return the permanent layer's ε∞. */
  public double epsilonInf() {
    return permanent.composedEpsilon(0);
  }

  @Override
  public Longitudinal<R> forDevice(byte[] key) {
    return new Longitudinal<R>(permanent, threshold, identity, key);
  }
}
