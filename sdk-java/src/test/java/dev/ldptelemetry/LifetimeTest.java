package dev.ldptelemetry;

import dev.ldptelemetry.internal.mechanisms.*;
import dev.ldptelemetry.internal.wire.*;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Protocol 1.1's longitudinal variants on the device: LOLOHA (§3.13) and the one-bit mean's (§3.9). */
class LifetimeTest {
  static final byte[] SECRET = Bytes.fromHex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");
  static final Map<String, Object> LOLOHA = FakeCollector.task("task_id", "colour", "mechanism", "grr",
      "domain", Arrays.asList("a", "b", "c", "d", "e", "f", "g", "h"), "longitudinal", Mechanism.map("variant", "loloha",
          "epsilon_inf", 2.0, "epsilon_1", 1.0, "g", 2L, "seeds", 8L, "hash_seed", 7L));

  @Test
  void aDeviceDrawsAtMostGPermanentResponsesWhateverItsValuesDo() {
    Tasks.Task task = Tasks.parse(LOLOHA);
    Loloha device = ((Loloha) task.mechanism).forDevice(Wire.deviceKey(new byte[32], "colour"));
    Set<Integer> buckets = new HashSet<Integer>();
    for (String v : Arrays.asList("a", "b", "c", "d", "e", "f", "g", "h")) buckets.add(device.bucketOf(v));
    assertTrue(buckets.size() <= 2);
    // The ledger's entries are the buckets: recording all 8 values (one per period) spends at most g·ε∞.
    FakeCollector collector = new FakeCollector();
    Client client = Client.builder("http://collector.test").transport(collector).scheduler(Scheduler.MANUAL)
        .task(Json.write(LOLOHA)).reportsPerPeriod(100).maxEpsilonInf(2 * task.epsilonInf + 1e-6).build();
    for (String v : Arrays.asList("a", "b", "c", "d", "e", "f", "g", "h")) assertTrue(client.record("colour", v), v);
    assertEquals(null, client.stats().dropped.get("epsilon_inf_exhausted"));
    Client tight = Client.builder("http://collector.test").transport(collector).scheduler(Scheduler.MANUAL)
        .task(Json.write(LOLOHA)).reportsPerPeriod(100).maxEpsilonInf(task.epsilonInf + 1e-6).secret(SECRET).build();
    // Room for one permanent response: the values of the first value's bucket, at this device's row.
    Loloha own = ((Loloha) task.mechanism).forDevice(Wire.deviceKey(SECRET, "colour"));
    int recorded = 0;
    int sharing = 0;
    for (String v : Arrays.asList("a", "b", "c", "d", "e", "f", "g", "h")) {
      recorded += tight.record("colour", v) ? 1 : 0;
      sharing += own.bucketOf(v) == own.bucketOf("a") ? 1 : 0;
    }
    assertEquals(sharing, recorded);
    assertEquals(Long.valueOf(8 - sharing), tight.stats().dropped.getOrDefault("epsilon_inf_exhausted", 0L));
  }

  @Test
  void lolohasRowIsTheDevicesAndItsReportIsRowAndIndex() {
    Loloha device = ((Loloha) Tasks.parse(LOLOHA).mechanism).forDevice(new byte[32]);
    assertTrue(device.row >= 0 && device.row < 8);
    Map<String, Object> payload = device.encode(device.privatize("c", new FixedWords(Arrays.<Object>asList(0L))));
    assertEquals(device.row, ((Number) payload.get("row")).intValue());
    assertTrue(((Number) payload.get("index")).intValue() < 2);
  }

  @Test
  void onlyTheOneBitMeanTakesLongitudinal() {
    Map<String, Object> oneBit = FakeCollector.task("task_id", "latency", "mechanism", "numeric", "lo", 0.0, "hi", 100.0,
        "buckets", 16L, "scale", "linear", "method", "1bit", "longitudinal", Mechanism.map("epsilon_inf", 2.0, "flip", 0.1));
    Tasks.Task task = Tasks.parse(oneBit);
    assertTrue(task.epsilon < task.epsilonInf);
    assertEquals("1.1", oneBit.get("protocol"));
    assertThrows(Mechanism.TaskError.class, () -> FakeCollector.task("task_id", "sw", "mechanism", "numeric", "lo", 0.0,
        "hi", 100.0, "buckets", 16L, "scale", "linear", "method", "sw", "longitudinal",
        Mechanism.map("epsilon_inf", 2.0, "flip", 0.1)));
    assertFalse(Tasks.parse(oneBit).mechanism instanceof Loloha);
  }
}
