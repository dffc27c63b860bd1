package dev.ldptelemetry;

import dev.ldptelemetry.internal.mechanisms.*;
import dev.ldptelemetry.internal.wire.*;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Every vector of protocol/vectors.json, bit for bit (PROTOCOL §8). */
class VectorsTest {
  @Test
  void protocolVersionIsOurs() throws IOException {
    assertTrue(Tasks.PROTOCOLS.contains(Vectors.all().get("protocol")));
  }

  @Test
  void canonicalJson() throws IOException {
    for (Map<String, Object> c : Vectors.list("canonical_json")) {
      assertEquals(c.get("canonical"), Json.canonical(Json.parse((String) c.get("json"))));
    }
  }

  @Test
  void splitmixAndRowConstants() throws IOException {
    Map<String, Object> s = Vectors.map(Vectors.all().get("splitmix64"));
    List<Object> words = Vectors.items(s.get("words"));
    long seed = ((Number) s.get("seed")).longValue();
    for (int i = 0; i < words.size(); i++) {
      assertEquals(Vectors.unsignedHex(words.get(i)), Hashing.splitmix64(seed, i + 1));
    }
    Map<String, Object> r = Vectors.map(Vectors.all().get("row_constants"));
    int k = ((Number) r.get("k")).intValue();
    Hashing.Rows rows = new Hashing.Rows(((Number) r.get("seed")).longValue(), k, 2);
    for (int j = 0; j < k; j++) {
      assertEquals(Vectors.unsignedHex(Vectors.items(r.get("a")).get(j)), rows.a(j));
      assertEquals(Vectors.unsignedHex(Vectors.items(r.get("b")).get(j)), rows.b(j));
    }
  }

  @Test
  void keysAndBuckets() throws IOException {
    for (Map<String, Object> c : Vectors.list("keys")) {
      byte[] utf8 = Bytes.utf8((String) c.get("value"));
      assertEquals(c.get("utf8"), Bytes.hex(utf8));
      long seed = ((Number) c.get("seed")).longValue();
      assertEquals(Vectors.unsignedHex(c.get("key")), Hashing.murmur64(utf8, seed), (String) c.get("value"));
    }
    for (Map<String, Object> c : Vectors.list("buckets")) {
      List<Object> expected = Vectors.items(c.get("rows"));
      long seed = ((Number) c.get("seed")).longValue();
      Hashing.Rows rows = new Hashing.Rows(seed, expected.size(), ((Number) c.get("m")).intValue());
      long key = Hashing.murmur64(Bytes.utf8((String) c.get("value")), seed);
      for (int j = 0; j < expected.size(); j++) {
        assertEquals(((Number) expected.get(j)).intValue(), rows.bucket(key, j));
      }
    }
  }

  @Test
  void drbg() throws IOException {
    for (Map<String, Object> c : Vectors.list("drbg")) {
      Words.Keyed stream = new Words.Keyed(Bytes.fromHex((String) c.get("seed_material")));
      for (Object call : Vectors.items(c.get("calls"))) {
        Map<String, Object> m = Vectors.map(call);
        assertEquals(m.get("output"), Bytes.hex(stream.bytes(((Number) m.get("bytes")).intValue())));
      }
    }
  }

  @Test
  @SuppressWarnings({"unchecked", "rawtypes"})
  void everyTask() throws IOException {
    byte[] secret = Bytes.fromHex((String) Vectors.all().get("device_secret"));
    String reportId = Bytes.base64url(Bytes.fromHex((String) Vectors.all().get("report_id")));
    long time = ((Number) Vectors.all().get("time")).longValue();
    int checked = 0;
    for (Map<String, Object> c : Vectors.list("tasks")) {
      Map<String, Object> json = Vectors.map(c.get("task"));
      String id = (String) json.get("task_id");
      Tasks.Task task = Tasks.parse(json);
      assertEquals(c.get("canonical"), Tasks.canonical(json), id);
      assertEquals(c.get("fingerprint"), task.fingerprint, id);
      assertEquals(Json.canonical(c.get("derived")), Json.canonical(task.mechanism.derived()), id);
      // Informative (not fingerprinted): an ln, so libms may differ in the last bit.
      assertEquals(((Number) json.get("effective_epsilon")).doubleValue(), task.epsilon, 1e-12, id);
      if (json.containsKey("effective_epsilon_inf")) {
        assertEquals(((Number) json.get("effective_epsilon_inf")).doubleValue(), task.epsilonInf, 1e-12, id);
      }
      byte[] deviceKey = Wire.deviceKey(secret, id);
      assertEquals(c.get("device_key"), Bytes.hex(deviceKey), id);
      Mechanism device = task.mechanism.forDevice(deviceKey);
      for (Object item : Vectors.items(c.get("reports"))) {
        Map<String, Object> r = Vectors.map(item);
        Object value = r.get("value");
        byte[] canonical = device.canonical(value);
        assertEquals(r.get("canonical"), Bytes.hex(canonical), id);
        int slice = r.containsKey("slice") ? ((Number) r.get("slice")).intValue() : -1;
        assertEquals(r.get("memo_key"), Wire.memoKey(secret, task.fingerprint, time, canonical, slice), id);
        checkHashing(task, device, r, value);
        FixedWords words = new FixedWords(Vectors.items(r.get("words")));
        Map<String, Object> payload = device.encode(device.privatize(value, words));
        assertEquals(Json.write(r.get("report")), Json.write(payload), id + " " + value);
        assertEquals(((Number) r.get("words_used")).intValue(), words.used, id);
        Map<String, Object> dims = null;
        if (task.dimensions != null) { // 1.1 (PROTOCOL §11): the app's values, mapped
          dims = task.dimensions.dims((Map<String, ?>) r.get("dimensions"));
          assertEquals(Json.write(r.get("dims")), Json.write(dims), id);
          assertEquals(((Number) r.get("slice")).intValue(), task.dimensions.slice(dims), id);
        }
        if (r.containsKey("wire")) {
          List<String> texts = new ArrayList<String>();
          texts.add(Wire.reportText(reportId, task.fingerprint, time, dims, payload));
          assertEquals(r.get("wire"), Wire.batchBody(texts), id);
        }
        if (r.containsKey("plaintext")) { // a sealed task's: the padded plaintext (§10)
          assertEquals(r.get("plaintext"), new String(Sealing.padded(payload), Bytes.UTF8), id);
        }
        if (r.containsKey("info")) {
          assertEquals(r.get("info"), Sealing.info(id, task.fingerprint, task.seal.keyId, reportId, time, dims), id);
        }
        checked++;
      }
      if (c.containsKey("prr") && device instanceof Loloha) checkLoloha(Vectors.map(c.get("prr")), (Loloha) device);
      else if (c.containsKey("prr")) checkPermanentResponse(Vectors.map(c.get("prr")), (Longitudinal) device);
    }
    assertTrue(checked >= 40, "reports checked: " + checked);
  }

  @SuppressWarnings({"unchecked", "rawtypes"})
  private static void checkHashing(Tasks.Task task, Mechanism device, Map<String, Object> r, Object value) {
    String id = task.id;
    Mechanism m = device instanceof Longitudinal ? ((Longitudinal) device).permanent : device;
    if (r.containsKey("index") && m instanceof Simple.Grr) {
      assertEquals(((Number) r.get("index")).intValue(), ((Simple.Grr) m).domain.indexOf(value), id);
    }
    if (r.containsKey("bucket")) {
      assertEquals(((Number) r.get("bucket")).intValue(), ((Numeric) m).bucketOf(value), id);
    }
    Sketches.Sketch<?> sketch = null;
    byte[] hashed = null;
    if (m instanceof HeavyHitters) {
      HeavyHitters hh = (HeavyHitters) m;
      int level = ((Number) r.get("level")).intValue();
      assertEquals(level, new java.math.BigInteger(1, Wire.deviceKey(
          Bytes.fromHex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"), id))
          .mod(java.math.BigInteger.valueOf(hh.lengths.size())).intValue(), id);
      sketch = hh.sketches.get(level);
      assertEquals(((Number) r.get("level_seed")).longValue(), sketch.seed, id);
      byte[] item = hh.item(hh.units(value), level);
      assertEquals(r.get("item"), Bytes.hex(item), id);
      hashed = HeavyHitters.hashed(item);
      assertEquals(r.get("hashed"), Bytes.hex(hashed), id);
    } else if (m instanceof Sketches.Sketch) {
      sketch = (Sketches.Sketch<?>) m;
      hashed = Bytes.utf8((String) value);
    } else if (m instanceof Loloha) { // §3.13: the family of `seeds` rows over g buckets
      Loloha loloha = (Loloha) m;
      long key = Hashing.murmur64(Bytes.utf8((String) value), loloha.rows.seed);
      assertEquals(Vectors.unsignedHex(r.get("key")), key, id);
      List<Object> buckets = Vectors.items(r.get("buckets"));
      assertEquals(loloha.seeds, buckets.size(), id);
      for (int j = 0; j < buckets.size(); j++) {
        assertEquals(((Number) buckets.get(j)).intValue(), loloha.rows.bucket(key, j), id);
      }
      return;
    }
    if (sketch == null) return;
    long key = sketch.key(hashed);
    assertEquals(Vectors.unsignedHex(r.get("key")), key, id);
    List<Object> buckets = Vectors.items(r.get("buckets"));
    for (int j = 0; j < buckets.size(); j++) {
      assertEquals(((Number) buckets.get(j)).intValue(), sketch.rows.bucket(key, j), id);
    }
  }

  @SuppressWarnings({"unchecked", "rawtypes"})
  private static void checkPermanentResponse(Map<String, Object> prr, Longitudinal device) {
    assertEquals(prr.get("F"), device.identity);
    byte[] seed = device.seedMaterial(prr.get("value"));
    assertEquals(prr.get("seed_material"), Bytes.hex(seed));
    Words.Keyed stream = new Words.Keyed(seed);
    for (Object call : Vectors.items(prr.get("calls"))) {
      Map<String, Object> m = Vectors.map(call);
      assertEquals(m.get("output"), Bytes.hex(stream.bytes(((Number) m.get("bytes")).intValue())));
    }
    Object response = device.permanentResponse(prr.get("value"));
    assertEquals(Json.write(prr.get("permanent_response")), Json.write(device.permanent.encode(response)));
  }

  /** LOLOHA's prr (§3.13): the device's row from its own DRBG, the bucket, the bucket's permanent response. */
  private static void checkLoloha(Map<String, Object> prr, Loloha device) {
    assertEquals(prr.get("F"), device.buckets.identity);
    Map<String, Object> row = Vectors.map(prr.get("row"));
    byte[] rowSeed = Bytes.fromHex((String) row.get("seed_material"));
    Words.Keyed stream = new Words.Keyed(rowSeed);
    for (Object call : Vectors.items(row.get("calls"))) {
      Map<String, Object> m = Vectors.map(call);
      assertEquals(m.get("output"), Bytes.hex(stream.bytes(((Number) m.get("bytes")).intValue())));
    }
    assertEquals(((Number) row.get("row")).intValue(), device.row);
    int bucket = device.bucketOf(prr.get("value"));
    assertEquals(((Number) prr.get("bucket")).intValue(), bucket);
    String name = Integer.toString(bucket);
    assertEquals(prr.get("seed_material"), Bytes.hex(device.buckets.seedMaterial(name)));
    Words.Keyed bucketStream = new Words.Keyed(device.buckets.seedMaterial(name));
    for (Object call : Vectors.items(prr.get("calls"))) {
      Map<String, Object> m = Vectors.map(call);
      assertEquals(m.get("output"), Bytes.hex(bucketStream.bytes(((Number) m.get("bytes")).intValue())));
    }
    Object response = device.buckets.permanentResponse(name);
    assertEquals(Json.write(prr.get("permanent_response")), Json.write(device.encode(new int[] {device.row, (Integer) response})));
  }

  /** 1.1's padding vectors (when the file has them): §10's padded plaintext per payload shape. */
  @Test
  void padding() throws IOException {
    List<Map<String, Object>> cases = Vectors.list("padding");
    if (cases == null) return; // a 1.0 file: none
    for (Map<String, Object> c : cases) {
      byte[] padded = Sealing.padded(Vectors.map(c.get("payload")));
      assertEquals(((Number) c.get("padded_length")).intValue(), padded.length, String.valueOf(c.get("task")));
      assertEquals(c.get("plaintext"), new String(padded, Bytes.UTF8));
    }
  }

  @Test
  void sealedOpenVectorInfo() {
    String info = Sealing.info("vector-task", "0123456789abcdef0123456789abcdef", "vector-key-1",
        "AAECAwQFBgcICQoLDA0ODw", 1700006400L);
    assertEquals("{\"fingerprint\":\"0123456789abcdef0123456789abcdef\",\"key_id\":\"vector-key-1\","
        + "\"label\":\"ldp-telemetry/seal/1\",\"report_id\":\"AAECAwQFBgcICQoLDA0ODw\","
        + "\"task_id\":\"vector-task\",\"time\":1700006400}", info);
    Map<String, Object> payload = Mechanism.map("row", 3, "bits", "gQBg");
    byte[] padded = Sealing.padded(payload);
    assertEquals(48, padded.length);
    assertArrayEquals(Bytes.utf8("{\"row\":3,\"bits\":\"gQBg\"}                         "), padded);
  }
}
