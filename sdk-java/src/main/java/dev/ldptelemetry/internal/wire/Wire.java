package dev.ldptelemetry.internal.wire;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Reports and batches on the wire (PROTOCOL §2), and the device's HMAC keys (§3.10, §4). */
public final class Wire {
  private Wire() {}

  /** Return one report's compact JSON text: the common fields, `dims` (1.1, if any), then the payload. */
  public static String reportText(String reportId, String fingerprint, long time, Map<String, Object> dims,
      Map<String, Object> payload) {
    Map<String, Object> report = new LinkedHashMap<String, Object>();
    report.put("report_id", reportId);
    report.put("fingerprint", fingerprint);
    report.put("time", time);
    if (dims != null) report.put("dims", dims);
    report.putAll(payload);
    return Json.write(report);
  }

  /** Return a batch body from report texts (the one place a batch is framed). */
  public static String batchBody(List<String> reports) {
    StringBuilder out = new StringBuilder("{\"reports\":[");
    for (int i = 0; i < reports.size(); i++) {
      if (i > 0) out.append(',');
      out.append(reports.get(i));
    }
    return out.append("]}").toString();
  }

  /** Return the start of the time bucket holding `seconds` (floor, also before 1970). */
  public static long floorTime(long seconds, long precision) {
    long q = seconds / precision;
    if (seconds % precision != 0 && seconds < 0) q--;
    return q * precision;
  }

  /** Return the device's key for a task id (§3.10): hh levels and PRRs derive from it. */
  public static byte[] deviceKey(byte[] secret, String taskId) {
    return Bytes.hmac(secret, Bytes.utf8("ldp-telemetry device key\0" + taskId));
  }

  /** Return the memo key of a canonical value in a period of a task (§3.10). */
  public static String memoKey(byte[] secret, String fingerprint, long period, byte[] value) {
    return memoKey(secret, fingerprint, period, value, -1);
  }

  /** As above; a 1.1 task with dimensions binds the report's slice index (≥ 0) after the value. */
  public static String memoKey(byte[] secret, String fingerprint, long period, byte[] value, int slice) {
    byte[] bound = slice < 0 ? value : Bytes.concat(value, Bytes.bigEndian(slice, 4));
    return Bytes.hex(Bytes.hmac(secret, Bytes.concat(Bytes.utf8(fingerprint), Bytes.bigEndian(period, 8), bound)));
  }

  /** Return the key a value's PRRs are recorded under in the privacy ledger (§4). */
  public static String valueKey(byte[] secret, String taskId, byte[] value) {
    return Bytes.hex(Bytes.hmac(secret, Bytes.concat(Bytes.utf8("ldp-telemetry ledger\0" + taskId + "\0"), value)));
  }
}
