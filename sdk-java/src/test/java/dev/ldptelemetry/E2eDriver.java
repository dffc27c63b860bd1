package dev.ldptelemetry;

import dev.ldptelemetry.internal.wire.*;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Simulated devices for tests/sdk_java (not a JUnit test): `java E2eDriver plan.json` with
 * {"mode", "endpoint", "values": {task id: [value per device]}, "dimensions": [{name: value}
 * per device] (optional), "dir", "count"}. Prints JSON.
 *
 * <ul>
 *   <li>devices: device i records values[task][i] for every task with a client of its own
 *       (own secret and budget), then closes; device 0 fetches the tasks, the others are given them.
 *   <li>kill-record: one client with a data folder records `count` values of one task, prints
 *       "recorded", then waits to be killed while its uploads run.
 *   <li>restart: the same folder, closed with a long flush: prints its stats.
 *   <li>stall: records `count` values while the collector never answers; prints the slowest record.
 * </ul>
 */
public final class E2eDriver {
  private E2eDriver() {}

  @SuppressWarnings("unchecked")
  public static void main(String[] args) throws Exception {
    Map<String, Object> plan = (Map<String, Object>) Json.parse(new String(Files.readAllBytes(Paths.get(args[0])), Bytes.UTF8));
    String mode = (String) plan.get("mode");
    String endpoint = (String) plan.get("endpoint");
    if ("devices".equals(mode)) {
      System.out.println(devices(endpoint, (Map<String, Object>) plan.get("values"), (List<Object>) plan.get("dimensions")));
    } else if ("kill-record".equals(mode) || "restart".equals(mode) || "stall".equals(mode)) {
      single(mode, endpoint, plan);
    }
  }

  @SuppressWarnings("unchecked")
  private static String devices(String endpoint, Map<String, Object> values, List<Object> dimensions) throws Exception {
    List<String> ids = new ArrayList<String>(values.keySet());
    int devices = ((List<Object>) values.get(ids.get(0))).size();
    Client first = Client.builder(endpoint).scheduler(Scheduler.MANUAL).taskIds(ids.toArray(new String[0])).build();
    if (!first.waitForTasks(30_000, ids.toArray(new String[0]))) throw new IllegalStateException("tasks not fetched");
    List<String> tasks = new ArrayList<String>();
    Transport http = new Transport.Default();
    for (String id : ids) {
      tasks.add(new String(http.send("GET", endpoint + "/v1/tasks/" + id, new TreeMap<String, String>(), null, 10_000).body, Bytes.UTF8));
    }
    List<Stats> all = new ArrayList<Stats>();
    all.add(device(first, ids, values, dimensions, 0));
    ExecutorService pool = Executors.newFixedThreadPool(8);
    List<Future<Stats>> futures = new ArrayList<Future<Stats>>();
    for (int i = 1; i < devices; i++) {
      final int device = i;
      futures.add(pool.submit(() -> {
        Client.Builder builder = Client.builder(endpoint).scheduler(Scheduler.MANUAL);
        for (String json : tasks) builder.task(json);
        // Odd devices give their dimensions once to the client, even ones on every record.
        if (dimensions != null && device % 2 == 1) builder.dimensions(given(dimensions, device));
        return device(builder.build(), ids, values, dimensions, device);
      }));
    }
    for (Future<Stats> f : futures) all.add(f.get());
    pool.shutdown();
    long sent = 0;
    long queued = 0;
    Map<String, Object> dropped = new TreeMap<String, Object>();
    Map<String, Object> rejected = new TreeMap<String, Object>();
    for (Stats s : all) {
      sent += s.sent;
      queued += s.queued;
      add(dropped, s.dropped);
      add(rejected, s.rejected);
      add(rejected, s.refusedTasks);
    }
    return "{\"sent\":" + sent + ",\"queued\":" + queued + ",\"dropped\":" + Json.write(dropped) + ",\"rejected\":"
        + Json.write(rejected) + "}";
  }

  private static void add(Map<String, Object> total, Map<String, Long> counts) {
    for (Map.Entry<String, Long> e : counts.entrySet()) {
      Object before = total.get(e.getKey());
      total.put(e.getKey(), (before == null ? 0L : (Long) before) + e.getValue());
    }
  }

  @SuppressWarnings("unchecked")
  private static Map<String, String> given(List<Object> dimensions, int device) {
    Map<String, String> out = new TreeMap<String, String>();
    for (Map.Entry<String, Object> e : ((Map<String, Object>) dimensions.get(device)).entrySet()) {
      out.put(e.getKey(), (String) e.getValue());
    }
    return out;
  }

  @SuppressWarnings("unchecked")
  private static Stats device(Client client, List<String> ids, Map<String, Object> values, List<Object> dimensions, int i) {
    for (String id : ids) {
      Object value = ((List<Object>) values.get(id)).get(i);
      boolean perCall = dimensions != null && i % 2 == 0;
      if (!(perCall ? client.record(id, value, given(dimensions, i)) : client.record(id, value))) throw new IllegalStateException("device " + i + " " + id + ": " + client.stats());
    }
    if (!client.close(60_000)) throw new IllegalStateException("device " + i + " not flushed: " + client.stats());
    return client.stats();
  }

  private static void single(String mode, String endpoint, Map<String, Object> plan) throws Exception {
    String task = (String) plan.get("task");
    int count = ((Number) plan.get("count")).intValue();
    Client.Builder builder = Client.builder(endpoint).reportsPerPeriod(1_000_000).flushIntervalMillis(20)
        .batchSize(7).backoffMillis(20, 200);
    if (plan.get("dir") != null) builder.dataDir(new File((String) plan.get("dir")));
    // stall: the task is given (the collector never answers); else fetched.
    if ("stall".equals(mode)) builder.task((String) plan.get("task_json")).timeoutMillis(60_000);
    else builder.taskIds(task).timeoutMillis(2000);
    Client client = builder.build();
    if ("restart".equals(mode)) {
      boolean flushed = client.close(120_000);
      System.out.println("{\"flushed\":" + flushed + ",\"stats\":" + client.stats() + "}");
      return;
    }
    if ("kill-record".equals(mode) && !client.waitForTasks(30_000, task)) throw new IllegalStateException("no task");
    long[] times = new long[count];
    for (int i = 0; i < count; i++) {
      long start = System.nanoTime();
      if (!client.record(task, "value-" + i)) throw new IllegalStateException("not recorded: " + client.stats());
      times[i] = System.nanoTime() - start;
      if ("kill-record".equals(mode) && i % 50 == 0) Thread.sleep(5); // uploads interleave with records
    }
    if ("stall".equals(mode)) {
      // The first record loads and compiles the SDK's classes with nothing queued for an upload
      // to hold (the worst of the 2,000 in 2 of 2 runs beside busy loops): reported apart.
      long warm = 0;
      for (int i = 1; i < count; i++) warm = Math.max(warm, times[i]);
      System.out.println("{\"worst_ms\":" + warm / 1e6 + ",\"first_ms\":" + times[0] / 1e6
          + ",\"queued\":" + client.stats().queued + "}");
      System.out.flush();
      long flushStart = System.nanoTime();
      boolean flushed = client.flush(500);
      System.out.println("{\"flush_returned_ms\":" + (System.nanoTime() - flushStart) / 1e6 + ",\"flushed\":" + flushed + "}");
      return;
    }
    System.out.println("{\"recorded\":" + count + ",\"stats\":" + client.stats() + "}");
    System.out.flush();
    Thread.sleep(600_000); // killed here, uploads in flight
  }
}
