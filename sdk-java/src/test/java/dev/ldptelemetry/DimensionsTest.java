package dev.ldptelemetry;

import dev.ldptelemetry.internal.mechanisms.*;
import dev.ldptelemetry.internal.wire.*;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Protocol 1.1's public dimensions (PROTOCOL §11) on the device: checked, mapped, sent in the clear. */
class DimensionsTest {
  static Map<String, Object> dimension(String name, String... values) {
    return Mechanism.map("name", name, "values", Arrays.asList((Object[]) values));
  }

  static final List<Object> DECLARED = Arrays.<Object>asList(dimension("platform", "android", "ios", "web"),
      dimension("app_version", "5.1", "5.2", "5.3"), dimension("city", "Z\u00fcrich", "Gen\u00e8ve"));
  static final Map<String, Object> GRR = FakeCollector.task("task_id", "fruit", "mechanism", "grr", "epsilon", 2.0,
      "domain", Arrays.asList("apple", "pear"), "dimensions", DECLARED, "min_slice_size", 100L);

  final FakeCollector collector = new FakeCollector();

  private static Map<String, String> values(String... pairs) {
    Map<String, String> out = new HashMap<String, String>();
    for (int i = 0; i < pairs.length; i += 2) out.put(pairs[i], pairs[i + 1]);
    return out;
  }

  @Test
  void theOtherRuleAndSlices() {
    Dimensions d = Tasks.parse(GRR).dimensions;
    Map<String, Object> listed = d.dims(values("platform", "ios", "app_version", "5.2", "city", "Z\u00fcrich"));
    assertEquals("{\"platform\":\"ios\",\"app_version\":\"5.2\",\"city\":\"Z\u00fcrich\"}", Json.write(listed));
    assertEquals(15, d.slice(listed));
    // Exact strings: no case folding, no normalization; undeclared names dropped; missing ones "other".
    Map<String, Object> other = d.dims(values("platform", "iOS", "city", "Zu\u0308rich", "country", "de"));
    assertEquals("{\"platform\":\"other\",\"app_version\":\"other\",\"city\":\"other\"}", Json.write(other));
    assertEquals(47, d.slice(other));
  }

  @Test
  void tasksThatDeclareDimensionsWrongAreRefused() {
    List<Object> four = Arrays.<Object>asList(dimension("a", "x"), dimension("b", "x"), dimension("c", "x"),
        dimension("d", "x"));
    for (Object declared : Arrays.<Object>asList(four, Arrays.asList(dimension("Platform", "x")),
        Arrays.asList(dimension("p", "other")), Arrays.asList(dimension("p", "x", "x")),
        Arrays.asList(dimension("p", "a\nb")), Arrays.asList(dimension("p", "x"), dimension("p", "y")),
        Arrays.asList())) {
      assertThrows(Mechanism.TaskError.class, () -> Dimensions.of(declared), String.valueOf(declared));
    }
    Map<String, Object> withoutSliceSize = new HashMap<String, Object>(GRR);
    withoutSliceSize.remove("min_slice_size");
    withoutSliceSize.put("fingerprint", Tasks.fingerprintOf(withoutSliceSize));
    assertThrows(Mechanism.TaskError.class, () -> Tasks.parse(withoutSliceSize));
    Map<String, Object> oldVersion = new HashMap<String, Object>(GRR);
    oldVersion.put("protocol", "1.0");
    oldVersion.put("fingerprint", Tasks.fingerprintOf(oldVersion));
    assertThrows(Mechanism.TaskError.class, () -> Tasks.parse(oldVersion));
    Map<String, Object> belowBatch = new HashMap<String, Object>(GRR);
    belowBatch.put("min_slice_size", 0L);
    belowBatch.put("fingerprint", Tasks.fingerprintOf(belowBatch));
    assertThrows(Mechanism.TaskError.class, () -> Tasks.parse(belowBatch));
  }

  @Test
  void recordSendsTheMappedDimensionsAndTheMemoKeepsThem() {
    Client client = Client.builder("http://collector.test").transport(collector).scheduler(Scheduler.MANUAL)
        .task(Json.write(GRR)).dimensions(values("platform", "ios", "app_version", "5.9")).build();
    assertTrue(client.record("fruit", "apple", values("app_version", "5.2", "build", "5.2.1-beta")));
    String text = client.state.queue.values().iterator().next().text;
    assertTrue(text.contains("\"time\":") && text.indexOf("\"dims\":") > text.indexOf("\"time\":"), text);
    assertTrue(text.contains("\"dims\":{\"platform\":\"ios\",\"app_version\":\"5.2\",\"city\":\"other\"},\"index\":"), text);
    assertFalse(text.contains("beta"));
    // The same value and dimensions again in the period: the same report, as it was.
    assertTrue(client.record("fruit", "apple", values("app_version", "5.2")));
    assertEquals(text, client.state.queue.values().iterator().next().text);
    // Other dimensions: the memo key binds the slice (§3.10), so it would be a new report, never
    // the earlier one with its dims; and one report per period is the limit, dims or not (§11).
    assertFalse(client.record("fruit", "apple", values("platform", "web")));
    assertFalse(client.record("fruit", "pear", values("platform", "web")));
    assertEquals(Long.valueOf(2), client.stats().dropped.get("budget_exhausted"));
    assertEquals(1, client.state.queue.size());
    assertTrue(client.flush(5000));
    assertEquals(1, collector.counted.size());
  }

  @Test
  void aSealedReportCarriesItsDimensionsInTheClearAndBindsThem() throws Exception {
    byte[] sk = new byte[32];
    for (int i = 0; i < 32; i++) sk[i] = (byte) i;
    Map<String, Object> sealed = FakeCollector.task("task_id", "s", "mechanism", "rr", "epsilon", 1.0, "sealed", true,
        "dimensions", Arrays.<Object>asList(dimension("platform", "android", "ios")), "min_slice_size", 50L);
    sealed.put("seal", Mechanism.map("kem", 32, "kdf", 1, "aead", 3, "key_id", "k1",
        "public_key", Bytes.base64url(JdkHpke.publicOf(sk))));
    Client client = Client.builder("http://collector.test").transport(collector).scheduler(Scheduler.MANUAL)
        .task(Json.write(sealed)).build();
    assertTrue(client.record("s", true, values("platform", "android")));
    Map<?, ?> report = (Map<?, ?>) Json.parse(client.state.queue.values().iterator().next().text);
    assertEquals("[report_id, fingerprint, time, dims, key_id, sealed]", report.keySet().toString());
    Map<String, Object> dims = Mechanism.map("platform", "android");
    String info = Sealing.info("s", (String) report.get("fingerprint"), "k1", (String) report.get("report_id"),
        ((Number) report.get("time")).longValue(), dims);
    byte[] ct = Bytes.fromBase64url((String) report.get("sealed"));
    JdkHpke hpke = JdkHpke.createOrNull();
    String plain = new String(hpke.open(sk, ct, Bytes.utf8(info), new byte[0]), Bytes.UTF8);
    assertTrue(plain.startsWith("{\"bit\":"), plain);
    String moved = Sealing.info("s", (String) report.get("fingerprint"), "k1", (String) report.get("report_id"),
        ((Number) report.get("time")).longValue(), Mechanism.map("platform", "ios"));
    assertThrows(java.security.GeneralSecurityException.class, () -> hpke.open(sk, ct, Bytes.utf8(moved), new byte[0]));
  }
}
