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

  Stats(long sent, long retries, long failedBatches, long queued, Map<String, Long> dropped,
      Map<String, Long> rejected, Map<String, Long> refusedTasks) {
    this.sent = sent;
    this.retries = retries;
    this.failedBatches = failedBatches;
    this.queued = queued;
    this.dropped = dropped;
    this.rejected = rejected;
    this.refusedTasks = refusedTasks;
  }

  @Override
  public String toString() {
    return "{\"sent\":" + sent + ",\"retries\":" + retries + ",\"failed_batches\":" + failedBatches
        + ",\"queued\":" + queued + ",\"dropped\":" + Json.write(new LinkedHashMap<String, Object>(dropped))
        + ",\"rejected\":" + Json.write(new LinkedHashMap<String, Object>(rejected))
        + ",\"refused_tasks\":" + Json.write(new LinkedHashMap<String, Object>(refusedTasks)) + "}";
  }

  static Map<String, Long> copy(Map<String, Long> counter) {
    synchronized (counter) {
      return Collections.unmodifiableMap(new TreeMap<String, Long>(counter));
    }
  }
}
