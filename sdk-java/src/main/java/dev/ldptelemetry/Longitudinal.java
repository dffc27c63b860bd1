package dev.ldptelemetry;

import java.util.Map;

/**
 * Longitudinal tasks (PROTOCOL §3.9): a permanent response per value, drawn from HMAC-DRBG
 * keyed by the device's task key, the task's mechanism fields and the value (nothing is
 * stored), re-randomized with fresh CSPRNG words for each report.
 */
final class Longitudinal<R> extends Mechanism<R> {
  private static final byte[] CONTEXT = Bytes.utf8("ldp-telemetry permanent response\0");

  final Permanent<R> permanent;
  /** The instantaneous layer's threshold T_i. */
  final long threshold;
  /** The canonical JSON of the task's mechanism fields (F of §3.9). */
  final String identity;
  private final byte[] deviceKey;

  Longitudinal(Permanent<R> permanent, long threshold, String identity, byte[] deviceKey) {
    this.permanent = permanent;
    this.threshold = threshold;
    this.identity = identity;
    this.deviceKey = deviceKey;
  }

  @Override
  byte[] canonical(Object value) {
    return permanent.canonical(value);
  }

  /** Return the seed material of a value's permanent response. */
  byte[] seedMaterial(Object value) {
    return Bytes.concat(deviceKey, CONTEXT, Bytes.utf8(identity), new byte[] {0}, permanent.canonical(value));
  }

  /** Return the device's permanent response for a value (the same every time). */
  R permanentResponse(Object value) {
    if (deviceKey == null) throw new TaskError("the permanent response belongs to a device");
    return permanent.privatize(value, new Words.Keyed(seedMaterial(value)));
  }

  @Override
  R privatize(Object value, Words rng) {
    R prr = deviceKey != null ? permanentResponse(value) : permanent.privatize(value, rng);
    return permanent.reflip(prr, threshold, rng);
  }

  @Override
  Map<String, Object> encode(R report) {
    return permanent.encode(report);
  }

  @Override
  Map<String, Object> derived() {
    Map<String, Object> out = permanent.derived();
    out.put("T_i", threshold);
    return out;
  }

  @Override
  double epsilon() {
    return permanent.composedEpsilon(threshold);
  }

  /** Return the permanent layer's ε∞. */
  double epsilonInf() {
    return permanent.composedEpsilon(0);
  }

  @Override
  Longitudinal<R> forDevice(byte[] key) {
    return new Longitudinal<R>(permanent, threshold, identity, key);
  }
}
