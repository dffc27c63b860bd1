package dev.ldptelemetry;

import dev.ldptelemetry.internal.wire.*;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.TreeMap;
import java.util.Map;

/** The client's counters at one moment. */
public final class Stats {
  public final long sent;
  public final long retries;
  public final long failedBatches;
  public final long queued;
  public final Map<String, Long> dropped;
  public final Map<String, Long> rejected;
  public final Map<String, Long> refusedTasks;
  /**
   * The privacy ledger per task id, for the device's life (the Python SDK's permanent_responses and
   * epsilon_inf): permanent responses drawn (values, or LOLOHA's hashed buckets) and the ε∞ they
   * spent; maxEpsilonInf caps their sum over every task.
   */
  public final Map<String, Long> permanentResponses;
  public final Map<String, Double> epsilonInf;

  Stats(long sent, long retries, long failedBatches, long queued, Map<String, Long> dropped,
      Map<String, Long> rejected, Map<String, Long> refusedTasks, Map<String, Double> drawn) {
    this.sent = sent;
    this.retries = retries;
    this.failedBatches = failedBatches;
    this.queued = queued;
    this.dropped = dropped;
    this.rejected = rejected;
    this.refusedTasks = refusedTasks;
    Map<String, Long> responses = new TreeMap<String, Long>();
    Map<String, Double> spent = new TreeMap<String, Double>();
    for (Map.Entry<String, Double> e : drawn.entrySet()) {
      String taskId = e.getKey().substring(0, e.getKey().indexOf('\0')); // task id \0 configuration \0 value key
      Long count = responses.get(taskId);
      Double sum = spent.get(taskId);
      responses.put(taskId, count == null ? 1L : count + 1);
      spent.put(taskId, sum == null ? e.getValue() : sum + e.getValue());
    }
    this.permanentResponses = Collections.unmodifiableMap(responses);
    this.epsilonInf = Collections.unmodifiableMap(spent);
  }

  @Override
  public String toString() {
    return "{\"sent\":" + sent + ",\"retries\":" + retries + ",\"failed_batches\":" + failedBatches
        + ",\"queued\":" + queued + ",\"dropped\":" + Json.write(new LinkedHashMap<String, Object>(dropped))
        + ",\"rejected\":" + Json.write(new LinkedHashMap<String, Object>(rejected))
        + ",\"refused_tasks\":" + Json.write(new LinkedHashMap<String, Object>(refusedTasks))
        + ",\"permanent_responses\":" + Json.write(new LinkedHashMap<String, Object>(permanentResponses))
        + ",\"epsilon_inf\":" + Json.write(new LinkedHashMap<String, Object>(epsilonInf)) + "}";
  }

  static Map<String, Long> copy(Map<String, Long> counter) {
    synchronized (counter) {
      return Collections.unmodifiableMap(new TreeMap<String, Long>(counter));
    }
  }
}
