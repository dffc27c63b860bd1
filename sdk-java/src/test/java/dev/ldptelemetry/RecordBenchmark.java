package dev.ldptelemetry;

import dev.ldptelemetry.internal.wire.*;
import java.io.File;
import java.nio.file.Files;
import java.util.Arrays;
import java.util.Map;

/**
 * Measures record() (a benchmark, not a test): a cms task with k = 2,048 and m = 1,024, each
 * call timed with System.nanoTime() on the caller's thread, distinct values (no budget
 * limit), uploads off (Scheduler.MANUAL, so the numbers are record's own); also the thread's
 * CPU time per call, which a busy machine's scheduling does not inflate. Run after
 * `mvn -o test-compile` from sdk-java/:
 * java -cp target/classes:target/test-classes dev.ldptelemetry.RecordBenchmark [records]
 */
public final class RecordBenchmark {
  private RecordBenchmark() {}

  public static void main(String[] args) throws Exception {
    int records = args.length > 0 ? Integer.parseInt(args[0]) : 50_000;
    Map<String, Object> task = FakeCollector.task("task_id", "words", "mechanism", "cms", "epsilon", 4.0,
        "k", 2048L, "m", 1024L, "hash_seed", 3651556171L);
    File folder = Files.createTempDirectory("ldp-bench").toFile();
    boolean seenMemory = false;
    String[] randoms = {"DRBG", "NativePRNG"};
    for (String where : new String[] {"memory", "disk", "memory"}) {
      String random = randoms[where.equals("memory") && seenMemory ? 1 : 0];
      seenMemory |= where.equals("memory");
      Client.Builder builder = Client.builder("http://127.0.0.1:9").task(Json.write(task))
          .scheduler(Scheduler.MANUAL).reportsPerPeriod(Integer.MAX_VALUE).maxQueueBytes(1L << 40);
      if (where.equals("disk")) builder.dataDir(new File(folder, "device"));
      builder.secureRandom(java.security.SecureRandom.getInstance(random)); // DRBG: the default
      Client client = builder.build();
      for (int i = 0; i < 20_000; i++) client.record("words", "warm-" + i); // JIT warm-up
      long[] nanos = new long[records];
      long[] cpu = new long[records];
      java.lang.management.ThreadMXBean threads = java.lang.management.ManagementFactory.getThreadMXBean();
      for (int i = 0; i < records; i++) {
        String value = "value-" + i;
        long cpuStart = threads.getCurrentThreadCpuTime();
        long start = System.nanoTime();
        if (!client.record("words", value)) throw new IllegalStateException(client.stats().toString());
        nanos[i] = System.nanoTime() - start;
        cpu[i] = threads.getCurrentThreadCpuTime() - cpuStart;
      }
      Arrays.sort(nanos);
      Arrays.sort(cpu);
      System.out.printf("cms k=2048 m=1024, %s queue, SecureRandom %s, %d records: p50 %.1f us, p99 %.1f us,"
          + " max %.1f us; CPU time p50 %.1f us, p99 %.1f us%n", where, random, records, nanos[records / 2] / 1e3,
          nanos[(int) (records * 0.99)] / 1e3, nanos[records - 1] / 1e3,
          cpu[records / 2] / 1e3, cpu[(int) (records * 0.99)] / 1e3);
    }
  }
}
