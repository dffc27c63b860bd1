package dev.ldptelemetry;

import dev.ldptelemetry.internal.wire.*;
import dev.ldptelemetry.internal.device.*;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.URLEncoder;
import java.text.ParseException;
import java.text.SimpleDateFormat;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TimeZone;
import java.util.concurrent.ThreadLocalRandom;
import java.util.zip.GZIPOutputStream;

/**
 * The uploader (PROTOCOL §2, §5), run on the scheduler's thread only: batches of one task's
 * oldest reports, gzipped; a resend is byte for byte the same batch; 200 (or a shuffler's
 * 202) delivers and `report_replayed` counts as delivered; 413 halves the task's batches;
 * 408, 429, 5xx and network errors back off (Retry-After when given, else exponential with
 * jitter, capped); any other 4xx drops the batch, counted; an `outdated_config` rejection
 * refetches the task. Reports stay queued until delivered or past the queue's age bound.
 */
final class Uploader {
  /** The longest Retry-After honoured, PROTOCOL §5 (a proxy's date far ahead must not stall a device for good). */
  static final long MAX_RETRY_AFTER_MILLIS = 600_000L;

  private final Client client;
  private final Map<String, Integer> caps = new HashMap<String, Integer>();
  private int failures;
  /** No request starts before this time (ms): a backoff in progress. */
  volatile long waitUntil;

  Uploader(Client client) {
    this.client = client;
  }

  /** Send batches until the queue is empty, a backoff starts or the deadline passes; true if empty. */
  boolean pass(long deadline) {
    for (;;) {
      if (monotonic() < waitUntil || monotonic() >= deadline) return client.queued() == 0;
      List<State.Pending> batch = nextBatch();
      if (batch.isEmpty()) return true;
      send(batch);
    }
  }

  private List<State.Pending> nextBatch() {
    List<State.Pending> batch = new ArrayList<State.Pending>();
    synchronized (client.lock) {
      long oldest = client.clock.millis() - client.options.maxQueueAgeMillis;
      int expired = client.state.expire(oldest);
      if (expired > 0) client.count(client.dropped, "expired", expired);
      long bytes = 16;
      for (State.Pending p : client.state.queue.values()) {
        if (!batch.isEmpty() && !p.taskId.equals(batch.get(0).taskId)) continue;
        Integer cap = caps.get(p.taskId);
        bytes += p.text.length() + 1;
        if (batch.size() >= (cap == null ? client.options.batchSize : cap)
            || (!batch.isEmpty() && bytes > client.options.maxBatchBytes)) {
          break;
        }
        batch.add(p);
      }
    }
    return batch;
  }

  static byte[] gzip(byte[] body) {
    try {
      ByteArrayOutputStream out = new ByteArrayOutputStream(body.length / 3 + 64);
      GZIPOutputStream zip = new GZIPOutputStream(out);
      zip.write(body);
      zip.close();
      return out.toByteArray();
    } catch (IOException impossible) {
      throw new IllegalStateException(impossible);
    }
  }

  static String path(String template, String taskId) {
    try {
      return template.replace("{task_id}", URLEncoder.encode(taskId, "UTF-8"));
    } catch (java.io.UnsupportedEncodingException impossible) {
      throw new IllegalStateException(impossible);
    }
  }

  private void send(List<State.Pending> batch) {
    String taskId = batch.get(0).taskId;
    List<String> texts = new ArrayList<String>();
    List<String> ids = new ArrayList<String>();
    for (State.Pending p : batch) {
      texts.add(p.text);
      ids.add(p.id);
    }
    Map<String, String> headers = new LinkedHashMap<String, String>();
    headers.put("Content-Type", "application/json");
    headers.put("Content-Encoding", "gzip");
    headers.put("LDP-Protocol", Tasks.PROTOCOL);
    if (client.options.uploadKey != null) headers.put("Authorization", "Bearer " + client.options.uploadKey);
    byte[] body = gzip(Bytes.utf8(Wire.batchBody(texts)));
    Transport.Response response;
    try {
      response = client.options.transport.send("POST", client.options.endpoint + path("/v1/tasks/{task_id}/reports", taskId),
          headers, body, client.options.timeoutMillis);
    } catch (IOException | RuntimeException error) {
      retry(-1);
      return;
    }
    int status = response.status;
    if (status == 200 || status == 202) {
      failures = 0;
      account(taskId, batch, response.body);
      synchronized (client.lock) {
        client.state.remove(ids);
      }
    } else if (status == 413 && batch.size() > 1) {
      caps.put(taskId, batch.size() / 2);
    } else if (status == 408 || status == 429 || status >= 500) {
      retry(retryAfter(response.header("Retry-After"), System.currentTimeMillis()));
    } else {
      client.count(client.dropped, "batch_rejected", batch.size());
      client.failedBatches.incrementAndGet();
      synchronized (client.lock) {
        client.state.remove(ids);
      }
    }
  }

  private void account(String taskId, List<State.Pending> batch, byte[] body) {
    Object answer;
    try {
      answer = Json.parse(new String(body, Bytes.UTF8));
    } catch (RuntimeException notJson) {
      answer = null;
    }
    Map<?, ?> fields = answer instanceof Map ? (Map<?, ?>) answer : new HashMap<Object, Object>();
    Object accepted = fields.get("accepted");
    long delivered = accepted instanceof Number ? ((Number) accepted).longValue() : batch.size();
    Object rejected = fields.get("rejected");
    boolean outdated = false;
    if (rejected instanceof List) {
      for (Object item : (List<?>) rejected) {
        Object reason = item instanceof Map ? ((Map<?, ?>) item).get("reason") : null;
        String name = String.valueOf(reason);
        if ("report_replayed".equals(name)) {
          delivered++;
        } else {
          client.count(client.rejected, name, 1);
        }
        if ("outdated_config".equals(name) || "unknown_seal_key".equals(name)) outdated = true;
      }
    }
    client.sent.addAndGet(delivered);
    if (outdated) client.refetch(taskId);
  }

  private void retry(long millis) {
    client.retries.incrementAndGet();
    long now = monotonic();
    if (now >= waitUntil) failures++;
    long wait = millis;
    if (wait < 0) {
      double base = Math.min(client.options.backoffMaxMillis,
          client.options.backoffMillis * Math.pow(2, Math.min(failures - 1, 30)));
      wait = (long) (base * (0.5 + ThreadLocalRandom.current().nextDouble()));
    }
    waitUntil = Math.max(waitUntil, now + Math.min(wait, MAX_RETRY_AFTER_MILLIS));
  }

  /** Milliseconds of a clock that only moves forward (backoffs and deadlines; never the report's time). */
  static long monotonic() {
    return System.nanoTime() / 1_000_000L;
  }

  /** Return the wait a Retry-After header asks for (delta-seconds or an HTTP date), ms; -1 if none. */
  static long retryAfter(String header, long nowMillis) {
    if (header == null) return -1;
    String value = header.trim();
    if (value.matches("\\d{1,9}")) return Long.parseLong(value) * 1000;
    SimpleDateFormat http = new SimpleDateFormat("EEE, dd MMM yyyy HH:mm:ss zzz", Locale.US);
    http.setTimeZone(TimeZone.getTimeZone("GMT"));
    try {
      return Math.max(0, http.parse(value).getTime() - nowMillis);
    } catch (ParseException error) {
      return -1;
    }
  }

  static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException interrupted) {
      Thread.currentThread().interrupt();
    }
  }
}
