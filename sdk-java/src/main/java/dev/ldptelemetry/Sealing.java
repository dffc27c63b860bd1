package dev.ldptelemetry;

import dev.ldptelemetry.internal.mechanisms.*;
import dev.ldptelemetry.internal.wire.*;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * Sealed reports (PROTOCOL §10): the served key, the `info` a seal binds, the padded
 * plaintext, and the sealed report's text. The HPKE itself is an {@link Hpke} provider.
 */
final class Sealing {
  private Sealing() {}

  static final String INFO_LABEL = "ldp-telemetry/seal/1";
  private static final Pattern KEY_ID = Pattern.compile("^[A-Za-z0-9_-]{1,32}$");
  private static final int PAD_BLOCK = 16;
  /** Every number, true, false or null counts this wide in the padded length. */
  static final int MAX_SCALAR_CHARS = 24;

  /** The collector's public key a sealed task serves as `seal`. */
  static final class Key {
    final String keyId;
    final byte[] publicKey;

    Key(String keyId, byte[] publicKey) {
      this.keyId = keyId;
      this.publicKey = publicKey;
    }

    /** Return the key a task's `seal` object serves, or throw TaskError (never seal to anything else). */
    static Key of(Object seal, String taskId) {
      if (!(seal instanceof Map)) {
        throw new Mechanism.TaskError("task " + taskId + " is sealed but served without the collector's key");
      }
      Map<?, ?> fields = (Map<?, ?>) seal;
      List<String> names = new ArrayList<String>();
      for (Object name : fields.keySet()) names.add((String) name);
      Collections.sort(names);
      if (!names.toString().equals("[aead, kdf, kem, key_id, public_key]")) {
        throw new Mechanism.TaskError("task " + taskId + ": seal must be {kem, kdf, aead, key_id, public_key}");
      }
      if (!is(fields.get("kem"), 0x20) || !is(fields.get("kdf"), 1) || !is(fields.get("aead"), 3)) {
        throw new Mechanism.TaskError("task " + taskId + ": seal names an HPKE suite other than "
            + "X25519/HKDF-SHA256/ChaCha20-Poly1305");
      }
      Object keyId = fields.get("key_id");
      if (!(keyId instanceof String) || !KEY_ID.matcher((String) keyId).matches()) {
        throw new Mechanism.TaskError("task " + taskId + ": seal.key_id is not 1-32 of A-Z a-z 0-9 - _");
      }
      Object text = fields.get("public_key");
      byte[] key = text instanceof String ? Bytes.fromBase64url((String) text) : null;
      if (key == null || key.length != 32) {
        throw new Mechanism.TaskError("task " + taskId + ": seal.public_key is not 32 bytes of base64url");
      }
      return new Key((String) keyId, key);
    }

    private static boolean is(Object value, long expected) {
      return value instanceof Number && ((Number) value).doubleValue() == expected;
    }
  }

  /** Return HPKE's `info`: the RFC 8785 JSON of the envelope the seal binds. */
  static String info(String taskId, String fingerprint, String keyId, String reportId, long time) {
    return info(taskId, fingerprint, keyId, reportId, time, null);
  }

  /** Return `info` binding a report's `dims` too (1.1, PROTOCOL §10 step 3). */
  static String info(String taskId, String fingerprint, String keyId, String reportId, long time,
      Map<String, Object> dims) {
    Map<String, Object> envelope = new LinkedHashMap<String, Object>();
    if (dims != null) envelope.put("dims", dims);
    envelope.put("fingerprint", fingerprint);
    envelope.put("key_id", keyId);
    envelope.put("label", INFO_LABEL);
    envelope.put("report_id", reportId);
    envelope.put("task_id", taskId);
    envelope.put("time", time);
    return Json.canonical(envelope);
  }

  /** Return the plaintext of a payload: its compact JSON padded with spaces (§10 step 2). */
  static byte[] padded(Map<String, Object> payload) {
    byte[] text = Bytes.utf8(Json.write(payload));
    int length = (widest(payload) + PAD_BLOCK - 1) / PAD_BLOCK * PAD_BLOCK;
    byte[] out = new byte[Math.max(length, text.length)];
    System.arraycopy(text, 0, out, 0, text.length);
    for (int i = text.length; i < out.length; i++) out[i] = ' ';
    return out;
  }

  /** Return the length of a value's JSON with every scalar 24 characters wide. */
  static int widest(Object value) {
    if (value instanceof String) return Bytes.utf8(Json.write(value)).length;
    if (value instanceof int[]) {
      int[] list = (int[]) value;
      return 2 + MAX_SCALAR_CHARS * list.length + Math.max(list.length - 1, 0);
    }
    if (value instanceof List) {
      List<?> list = (List<?>) value;
      int sum = 2 + Math.max(list.size() - 1, 0);
      for (Object v : list) sum += widest(v);
      return sum;
    }
    if (value instanceof Map) {
      Map<?, ?> map = (Map<?, ?>) value;
      int sum = 2 + Math.max(map.size() - 1, 0);
      for (Map.Entry<?, ?> e : map.entrySet()) sum += widest(e.getKey()) + 1 + widest(e.getValue());
      return sum;
    }
    return MAX_SCALAR_CHARS;
  }

  /**
   * Refuse a sealed task whose reports cannot be sealed here: no HPKE on this runtime (and none
   * given), or a key HPKE refuses (a low-order point). Checked when the task is adopted.
   */
  static void checkSealable(Hpke hpke, Key key) {
    if (hpke == null) {
      throw new Mechanism.TaskError("sealing_unavailable", "a sealed task, and no HPKE on this runtime: refused");
    }
    try {
      hpke.sealBase(key.publicKey, new byte[0], new byte[0]);
    } catch (java.security.GeneralSecurityException | RuntimeException error) {
      throw new Mechanism.TaskError("seal_key_refused", "the task's seal key cannot be sealed to: refused");
    }
  }

  /** Return a sealed report's text: the envelope, key_id and base64url(enc ‖ ct). */
  static String reportText(Hpke hpke, String taskId, Key key, String reportId, String fingerprint, long time,
      Map<String, Object> dims, Map<String, Object> payload) throws java.security.GeneralSecurityException {
    byte[] info = Bytes.utf8(info(taskId, fingerprint, key.keyId, reportId, time, dims));
    byte[] sealed = hpke.sealBase(key.publicKey, info, padded(payload));
    Map<String, Object> report = new LinkedHashMap<String, Object>();
    report.put("report_id", reportId);
    report.put("fingerprint", fingerprint);
    report.put("time", time);
    if (dims != null) report.put("dims", dims);
    report.put("key_id", key.keyId);
    report.put("sealed", Bytes.base64url(sealed));
    return Json.write(report);
  }
}
