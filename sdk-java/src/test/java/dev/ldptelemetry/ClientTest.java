package dev.ldptelemetry;

import dev.ldptelemetry.internal.mechanisms.*;
import dev.ldptelemetry.internal.wire.*;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.util.Arrays;
import java.util.Collections;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The client's device rules (§4), durability and uploads, against an in-memory collector. */
class ClientTest {
  static final Map<String, Object> CMS = FakeCollector.task("task_id", "words", "mechanism", "cms", "epsilon", 4.0,
      "k", 8L, "m", 64L, "hash_seed", 7L);
  final FakeCollector collector = new FakeCollector();
  final AtomicLong now = new AtomicLong(1_764_028_800_000L);
  @TempDir File dir;

  Client.Builder builder() {
    return Client.builder("http://collector.test").transport(collector).scheduler(Scheduler.MANUAL)
        .clock(now::get).backoffMillis(1, 5);
  }

  Client client(Map<String, Object> task) {
    return builder().task(Json.write(task)).build();
  }

  @Test
  void recordQueuesAndFlushDelivers() {
    Client client = client(CMS);
    assertTrue(client.record("words", "hello"));
    assertEquals(1, client.stats().queued);
    assertTrue(client.flush(5000));
    Stats stats = client.stats();
    assertEquals(1, stats.sent);
    assertEquals(0, stats.queued);
    assertEquals(1, collector.counted.size());
  }

  @Test
  void theBudgetResendsTheSameReportAndRefusesAnother() {
    Client client = client(CMS);
    assertTrue(client.record("words", "hello"));
    String first = client.state.queue.values().iterator().next().text;
    assertTrue(client.flush(5000));
    assertTrue(client.record("words", "hello")); // the memo: same report, same id
    assertEquals(first, client.state.queue.values().iterator().next().text);
    assertFalse(client.record("words", "other"));
    assertEquals(Long.valueOf(1), client.stats().dropped.get("budget_exhausted"));
    assertTrue(client.flush(5000));
    assertEquals(2, client.stats().sent); // the resend was answered report_replayed: delivered
    assertEquals(1, collector.counted.size());
    now.addAndGet(86_400_000L); // the next period
    assertTrue(client.record("words", "other"));
  }

  @Test
  void recordNeverThrows() {
    Client client = client(CMS);
    assertFalse(client.record("words", 42));
    assertFalse(client.record("words", null));
    assertFalse(client.record("words", "\ud800"));
    assertFalse(client.record(null, "x"));
    assertFalse(client.record("unknown", "x"));
    Map<String, Long> dropped = client.stats().dropped;
    assertEquals(Long.valueOf(3), dropped.get("invalid_value"));
    assertEquals(Long.valueOf(2), dropped.get("task_unavailable"));
  }

  static Map<String, Object> rrLongitudinal(double flip) {
    return FakeCollector.task("task_id", "habit", "mechanism", "rr",
        "longitudinal", Mechanism.map("epsilon_inf", 2.0, "flip", flip));
  }

  @Test
  void aRepublishedPermanentLayerIsRefusedUnlessAllowed() {
    Client client = builder().task(Json.write(rrLongitudinal(0.1))).reportsPerPeriod(10).build();
    assertTrue(client.record("habit", true));
    Map<String, Object> republished = rrLongitudinal(0.2);
    client.adopt(Tasks.parse(republished), true);
    assertFalse(client.record("habit", false));
    assertEquals(Long.valueOf(1), client.stats().dropped.get("config_changed"));
    Client allowing = builder().task(Json.write(rrLongitudinal(0.1))).reportsPerPeriod(10)
        .republishedEpsilonInf(2.5).build();
    assertTrue(allowing.record("habit", true));
    allowing.adopt(Tasks.parse(republished), true);
    assertTrue(allowing.record("habit", false));
  }

  @Test
  void lifetimeAndPeriodCaps() {
    Client lifetime = builder().task(Json.write(rrLongitudinal(0.1))).reportsPerPeriod(10).maxEpsilonInf(3).build();
    assertTrue(lifetime.record("habit", true));
    assertFalse(lifetime.record("habit", false)); // a second PRR would pass ε∞ = 3
    assertEquals(Long.valueOf(1), lifetime.stats().dropped.get("epsilon_inf_exhausted"));
    // The ledger in stats(), as the Python SDK's: one PRR drawn, the task's own ε∞ (the refused record drew none).
    double epsilonInf = Tasks.parse(rrLongitudinal(0.1)).epsilonInf;
    assertEquals(Collections.singletonMap("habit", 1L), lifetime.stats().permanentResponses);
    assertEquals(Collections.singletonMap("habit", epsilonInf), lifetime.stats().epsilonInf);
    assertEquals(2.0, epsilonInf, 1e-6);
    assertTrue(lifetime.stats().toString().contains(",\"permanent_responses\":{\"habit\":1},\"epsilon_inf\":{\"habit\":"));
    Client period = builder().task(Json.write(CMS)).reportsPerPeriod(10).maxEpsilonPerPeriod(6).build();
    assertTrue(period.record("words", "a"));
    assertFalse(period.record("words", "b")); // 4 + 4 > 6
    assertEquals(Long.valueOf(1), period.stats().dropped.get("epsilon_exhausted"));
    assertTrue(period.stats().permanentResponses.isEmpty()); // no permanent layer, nothing in the ledger
  }

  @Test
  void theQueueAndTheLedgerSurviveARestart() throws IOException {
    Client first = builder().dataDir(dir).task(Json.write(CMS)).reportsPerPeriod(2).build();
    assertTrue(first.record("words", "hello"));
    String text = first.state.queue.values().iterator().next().text;
    // No close(): as if the process were killed. A torn line at the end is ignored.
    File[] segments = dir.listFiles((d, name) -> name.startsWith("journal-"));
    try (FileOutputStream torn = new FileOutputStream(segments[0], true)) {
      torn.write(Bytes.utf8("[[\"q\",\"words\",\"half"));
    }
    Client second = builder().dataDir(dir).reportsPerPeriod(2).build(); // the task comes from the journal
    assertEquals(1, second.stats().queued);
    assertEquals(text, second.state.queue.values().iterator().next().text);
    assertTrue(second.record("words", "hello")); // the memo survived: the same report
    assertEquals(1, second.stats().queued);
    assertTrue(second.record("words", "b"));
    assertFalse(second.record("words", "c"));
    assertEquals(Long.valueOf(1), second.stats().dropped.get("budget_exhausted"));
    assertTrue(second.flush(5000));
    assertEquals(2, collector.counted.size());
    assertTrue(second.close(1000));
    Client third = builder().dataDir(dir).reportsPerPeriod(2).build();
    assertEquals(0, third.stats().queued);
    assertFalse(third.record("words", "d")); // the budget outlives delivery
    assertEquals(1, dir.listFiles((d, name) -> name.startsWith("journal-")).length);
    assertTrue(new File(dir, "secret").length() == 32);
  }

  @Test
  void aDamagedLineIsCountedAndTheRestOfTheStateRestored() throws IOException {
    Client first = builder().dataDir(dir).task(Json.write(CMS)).build();
    assertTrue(first.record("words", "hello"));
    byte[] secret = java.nio.file.Files.readAllBytes(new File(dir, "secret").toPath());
    File[] segments = dir.listFiles((d, name) -> name.startsWith("journal-"));
    try (FileOutputStream damaged = new FileOutputStream(segments[0], true)) {
      damaged.write(Bytes.utf8("[[\"q\",1,2,3,4]]\n")); // JSON, but not an operation
    }
    Client second = builder().dataDir(dir).task(Json.write(CMS)).build();
    assertEquals(Long.valueOf(1), second.stats().dropped.get("storage_error"));
    assertEquals(1, second.stats().queued); // what was readable is restored
    assertTrue(second.record("words", "hello")); // the memo too: the same report
    assertFalse(second.record("words", "other")); // and the budget
    assertTrue(java.util.Arrays.equals(secret, java.nio.file.Files.readAllBytes(new File(dir, "secret").toPath())));
  }

  @Test
  void boundsDropWhatDoesNotFitAndCountIt() {
    Client client = builder().task(Json.write(CMS)).reportsPerPeriod(1000).maxQueueBytes(1000).build();
    int queued = 0;
    for (int i = 0; i < 20; i++) queued += client.record("words", "v" + i) ? 1 : 0;
    assertTrue(queued > 0 && queued < 20);
    assertEquals(Long.valueOf(20 - queued), client.stats().dropped.get("queue_full"));
    now.addAndGet(8L * 86_400_000L); // older than 7 days
    assertTrue(client.flush(1000));
    assertEquals(Long.valueOf(queued), client.stats().dropped.get("expired"));
    assertEquals(0, collector.counted.size());
  }

  @Test
  void tooLargeHalvesRetriesBackOffAndOutdatedRefetches() {
    collector.put(CMS);
    Client client = builder().taskIds("words").reportsPerPeriod(100).build();
    assertTrue(client.waitForTasks(5000, "words"));
    for (int i = 0; i < 10; i++) assertTrue(client.record("words", "v" + i));
    collector.maxBatch = 3;
    collector.failFirst.addAll(Arrays.asList(503, 500));
    assertTrue(client.flush(10_000));
    assertEquals(10, collector.counted.size());
    assertTrue(client.stats().retries >= 2);
    for (int size : collector.batchSizes) assertTrue(size <= 3);
    assertEquals(1000, Uploader.retryAfter("1", 0));
    assertEquals(2000, Uploader.retryAfter("Thu, 01 Jan 1970 00:00:03 GMT", 1000));
    collector.rejectAs = "outdated_config";
    assertTrue(client.record("words", "late"));
    assertTrue(client.flush(5000));
    assertEquals(Long.valueOf(1), client.stats().rejected.get("outdated_config"));
    assertNull(client.task("words")); // forgotten until fetched again
    assertTrue(client.waitForTasks(5000, "words"));
  }

  @Test
  void knownTasksAreRevalidatedWithTheirEtag() {
    collector.put(CMS);
    Client client = builder().taskIds("words").build();
    assertTrue(client.waitForTasks(5000, "words"));
    now.addAndGet(61_000);
    client.fetcher.run(false);
    assertTrue(collector.requests.contains("GET http://collector.test/v1/tasks/words etag"), collector.requests.toString());
    assertTrue(client.task("words") != null);
  }

  @Test
  void aStalledCollectorNeverBlocksRecord() throws Exception {
    collector.put(CMS);
    collector.stallMillis = 3000;
    Client client = Client.builder("http://collector.test").transport(collector).task(Json.write(CMS))
        .reportsPerPeriod(100_000).batchSize(10).flushIntervalMillis(50).build(); // the daemon thread
    Thread.sleep(200); // an upload is stuck in the transport by now
    long worst = 0;
    for (int i = 0; i < 2000; i++) {
      long start = System.nanoTime();
      assertTrue(client.record("words", "v" + i));
      worst = Math.max(worst, System.nanoTime() - start);
    }
    assertTrue(worst < 500_000_000L, "worst record took " + worst / 1e6 + " ms");
    assertFalse(client.flush(300)); // bounded by its timeout
    assertTrue(client.stats().queued == 2000);
  }

  @Test
  void aSealedTaskWithoutHpkeIsRefusedAndCounted() {
    Map<String, Object> sealed = FakeCollector.task("task_id", "s", "mechanism", "rr", "epsilon", 1.0, "sealed", true);
    sealed.put("seal", Mechanism.map("kem", 32, "kdf", 1, "aead", 3, "key_id", "k1",
        "public_key", "j0DFrbaPJWJK5bIU6nZ6bslNgp09e14a0bpvPiE4KF8"));
    Client without = builder().task(Json.write(sealed)).hpke(null).build();
    assertEquals(Long.valueOf(1), without.stats().refusedTasks.get("sealing_unavailable"));
    assertFalse(without.record("s", true));
    Client with = builder().task(Json.write(sealed)).build();
    assertTrue(with.record("s", true));
    String text = with.state.queue.values().iterator().next().text;
    assertTrue(text.contains("\"key_id\":\"k1\",\"sealed\":"), text);
  }

  @Test
  void tasksThatMustBeRefused() {
    Map<String, Object> unknownField = FakeCollector.task("task_id", "t", "mechanism", "rr", "epsilon", 1.0);
    unknownField.put("lifetime", Arrays.asList());
    Map<String, Object> wrongDerived = FakeCollector.task("task_id", "t", "mechanism", "rr", "epsilon", 1.0);
    wrongDerived.put("derived", Mechanism.map("T_yes", 3L, "T_no", 1L));
    Map<String, Object> wrongPrint = FakeCollector.task("task_id", "t", "mechanism", "rr", "epsilon", 1.0);
    wrongPrint.put("fingerprint", "00000000000000000000000000000000");
    Map<String, Object> newer = FakeCollector.task("task_id", "t", "mechanism", "rr", "epsilon", 1.0);
    newer.put("protocol", "2.0");
    Client client = builder().task(Json.write(unknownField)).task(Json.write(wrongDerived))
        .task(Json.write(wrongPrint)).task(Json.write(newer)).build();
    Map<String, Long> refused = client.stats().refusedTasks;
    assertEquals(Long.valueOf(1), refused.get("invalid_task"));
    assertEquals(Long.valueOf(1), refused.get("derived_mismatch"));
    assertEquals(Long.valueOf(1), refused.get("unsupported_protocol"));
    assertEquals(4, refused.values().stream().mapToLong(Long::longValue).sum(), refused.toString());
    assertFalse(client.record("t", true));
  }
}
