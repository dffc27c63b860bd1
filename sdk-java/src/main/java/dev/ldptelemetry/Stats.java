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
      Map<String, Long> rejected, Map<String, Long> refusedTasks, Map<String, Long> permanentResponses,
      Map<String, Double> epsilonInf) {
    this.sent = sent;
    this.retries = retries;
    this.failedBatches = failedBatches;
    this.queued = queued;
    this.dropped = dropped;
    this.rejected = rejected;
    this.refusedTasks = refusedTasks;
    this.permanentResponses = Collections.unmodifiableMap(permanentResponses);
    this.epsilonInf = Collections.unmodifiableMap(epsilonInf);
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
