package dev.ldptelemetry;

import dev.ldptelemetry.internal.mechanisms.*;
import dev.ldptelemetry.internal.wire.*;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Checks a fixture the reference implementation wrote (tests/sdk_java/test_cross.py, the same
 * as sdk-js's): device and memo keys, T_i, whole reports drawn from a fixed HMAC-DRBG stream,
 * permanent responses and sealed padded lengths, from the device secret the Python SDK keeps
 * (data_dir/device.key). Prints one line per case; exits 1 on any difference.
 */
public final class CrossDriver {
  private CrossDriver() {}

  @SuppressWarnings({"unchecked", "rawtypes"})
  public static void main(String[] args) throws Exception {
    Map<String, Object> fixture = (Map<String, Object>) Json.parse(new String(Files.readAllBytes(Paths.get(args[0])), Bytes.UTF8));
    byte[] secret = Files.readAllBytes(new File((String) fixture.get("data_dir"), "device.key").toPath());
    byte[] seed = Bytes.fromHex((String) fixture.get("stream_seed"));
    long period = ((Number) fixture.get("period")).longValue();
    List<String> failures = new ArrayList<String>();
    int cases = 0;
    for (Object item : (List<Object>) fixture.get("cases")) {
      Map<String, Object> c = (Map<String, Object>) item;
      Tasks.Task task = Tasks.parse(c.get("task"));
      byte[] key = Wire.deviceKey(secret, task.id);
      String where = task.id;
      check(failures, where + " device key", c.get("device_key"), Bytes.hex(key));
      Mechanism mechanism = task.mechanism.forDevice(key);
      if (c.get("threshold") != null) {
        check(failures, where + " T_i", ((Number) c.get("threshold")).longValue(), ((Longitudinal) mechanism).threshold);
      }
      for (Object v : (List<Object>) c.get("values")) {
        Map<String, Object> expected = (Map<String, Object>) v;
        Object value = expected.get("value");
        String at = where + " " + Json.write(value);
        check(failures, at + " memo key", expected.get("memo_key"),
            Wire.memoKey(secret, task.fingerprint, period, mechanism.canonical(value)));
        Map<String, Object> payload = mechanism.encode(mechanism.privatize(value, new Words.Keyed(seed)));
        check(failures, at + " report", Json.canonical(expected.get("report")), Json.canonical(payload));
        check(failures, at + " padded", ((Number) expected.get("padded")).longValue(), (long) Sealing.padded(payload).length);
        if (expected.get("permanent") != null) {
          Longitudinal layer = (Longitudinal) mechanism;
          check(failures, at + " permanent", Json.canonical(expected.get("permanent")),
              Json.canonical(layer.permanent.encode(layer.permanentResponse(value))));
        }
      }
      cases++;
    }
    System.out.println("{\"cases\":" + cases + ",\"failures\":" + Json.write(new ArrayList<Object>(failures)) + "}");
    System.exit(failures.isEmpty() ? 0 : 1);
  }

  private static void check(List<String> failures, String what, Object expected, Object actual) {
    if (!expected.equals(actual)) failures.add(what + ": expected " + expected + ", got " + actual);
  }
}
