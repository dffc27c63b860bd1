package dev.ldptelemetry;

import dev.ldptelemetry.internal.mechanisms.*;
import dev.ldptelemetry.internal.wire.*;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.zip.GZIPInputStream;

/** An in-memory collector behind the Transport interface: tasks with ETags, reports counted once. */
final class FakeCollector implements Transport {
  final Map<String, String> tasks = new HashMap<String, String>();
  final Set<String> counted = Collections.synchronizedSet(new HashSet<String>());
  final List<String> requests = Collections.synchronizedList(new ArrayList<String>());
  final List<Integer> batchSizes = Collections.synchronizedList(new ArrayList<Integer>());
  /** Answers to give before behaving (a status, with Retry-After "1" for 503). */
  final List<Integer> failFirst = Collections.synchronizedList(new ArrayList<Integer>());
  volatile int maxBatch = Integer.MAX_VALUE;
  volatile long stallMillis;
  volatile String rejectAs;

  void put(Map<String, Object> task) {
    tasks.put((String) task.get("task_id"), Json.write(task));
  }

  @Override
  public Response send(String method, String url, Map<String, String> headers, byte[] body, int timeoutMillis)
      throws IOException {
    requests.add(method + " " + url + (headers.containsKey("If-None-Match") ? " etag" : ""));
    if (stallMillis > 0) {
      try {
        Thread.sleep(stallMillis);
      } catch (InterruptedException interrupted) {
        throw new IOException("interrupted");
      }
      throw new IOException("timed out");
    }
    String path = url.replaceFirst("^https?://[^/]+", "");
    Map<String, String> answer = new HashMap<String, String>();
    if ("GET".equals(method)) {
      String id = path.substring("/v1/tasks/".length());
      String json = tasks.get(id);
      if (json == null) return new Response(404, answer, new byte[0]);
      String etag = "\"" + ((Map<?, ?>) Json.parse(json)).get("fingerprint") + "\"";
      answer.put("etag", etag);
      answer.put("cache-control", "public, max-age=60");
      if (etag.equals(headers.get("If-None-Match"))) return new Response(304, answer, new byte[0]);
      return new Response(200, answer, Bytes.utf8(json));
    }
    if (!failFirst.isEmpty()) {
      int status = failFirst.remove(0);
      if (status == 503) answer.put("retry-after", "1");
      return new Response(status, answer, new byte[0]);
    }
    if (!"gzip".equals(headers.get("Content-Encoding")) || !"1.0".equals(headers.get("LDP-Protocol"))) {
      return new Response(415, answer, new byte[0]);
    }
    Map<?, ?> batch = (Map<?, ?>) Json.parse(new String(gunzip(body), Bytes.UTF8));
    List<?> reports = (List<?>) batch.get("reports");
    if (reports.size() > maxBatch) return new Response(413, answer, new byte[0]);
    batchSizes.add(reports.size());
    int accepted = 0;
    List<Object> rejected = new ArrayList<Object>();
    for (Object r : reports) {
      String id = (String) ((Map<?, ?>) r).get("report_id");
      Map<String, Object> rejection = new LinkedHashMap<String, Object>();
      rejection.put("report_id", id);
      if (rejectAs != null) {
        rejection.put("reason", rejectAs);
        rejected.add(rejection);
      } else if (counted.add(id)) {
        accepted++;
      } else {
        rejection.put("reason", "report_replayed");
        rejected.add(rejection);
      }
    }
    Map<String, Object> out = new LinkedHashMap<String, Object>();
    out.put("accepted", (long) accepted);
    out.put("rejected", rejected);
    return new Response(200, answer, Bytes.utf8(Json.write(out)));
  }

  static byte[] gunzip(byte[] body) throws IOException {
    GZIPInputStream in = new GZIPInputStream(new ByteArrayInputStream(body));
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    byte[] buffer = new byte[8192];
    for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) out.write(buffer, 0, n);
    return out.toByteArray();
  }

  /** Return a served task: the fields given plus protocol, derived and fingerprint, as a collector computes them. */
  static Map<String, Object> task(Object... fields) {
    Map<String, Object> task = Mechanism.map(fields);
    if (!task.containsKey("time_precision")) task.put("time_precision", 86400L);
    if (!task.containsKey("min_batch_size")) task.put("min_batch_size", 1L);
    Object spec = task.get("longitudinal");
    boolean lifetime = spec instanceof Map && (((Map<?, ?>) spec).containsKey("variant") || "1bit".equals(task.get("method")));
    task.put("protocol", task.containsKey("dimensions") || lifetime ? "1.1" : "1.0");
    Mechanism<?> built = Tasks.build(task);
    Map<String, Object> derived = built.derived();
    if (Long.valueOf(-1).equals(derived.get("T_i"))) { // epsilon_1: the collector's bisection (§3.9)
      Longitudinal<?> layered = built instanceof Loloha ? ((Loloha) built).buckets : (Longitudinal<?>) built;
      double epsilon1 = ((Number) ((Map<?, ?>) spec).get("epsilon_1")).doubleValue();
      long low = 1;
      long high = layered.permanent.irrLimit();
      while (low < high) {
        long middle = (low + high) >>> 1;
        if (layered.permanent.composedEpsilon(middle) <= epsilon1) high = middle;
        else low = middle + 1;
      }
      derived.put("T_i", low);
    }
    task.put("derived", derived);
    task.put("fingerprint", Tasks.fingerprintOf(task));
    return task;
  }
}
