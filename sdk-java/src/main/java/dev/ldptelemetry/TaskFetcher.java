package dev.ldptelemetry;

import dev.ldptelemetry.internal.mechanisms.*;
import dev.ldptelemetry.internal.wire.*;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Task configurations (PROTOCOL §1): fetched when wanted, kept, and revalidated with their
 * ETag once their Cache-Control max-age has passed (a 304 keeps the copy; a sealed task's
 * ETag names its key, so a rotated key is learned). A refused task is counted by reason and
 * asked for again later; the copy in use stays while a revalidation fails.
 */
final class TaskFetcher {
  static final long DEFAULT_MAX_AGE_MILLIS = 60_000;
  static final long MAX_AGE_CAP_MILLIS = 86_400_000;
  static final long RETRY_MILLIS = 30_000;
  static final int TIMEOUT_MILLIS = 10_000;
  private static final Pattern MAX_AGE = Pattern.compile("max-age=(\\d{1,9})", Pattern.CASE_INSENSITIVE);

  private final Client client;
  private final Set<String> wanted = new LinkedHashSet<String>();
  private final Map<String, Long> notBefore = new HashMap<String, Long>();
  private final Map<String, String> etags = new HashMap<String, String>();
  private final Map<String, Long> due = new HashMap<String, Long>();

  TaskFetcher(Client client) {
    this.client = client;
  }

  /** Ask for a task (in the background); a no-op if known or already asked for. */
  void want(String taskId) {
    boolean fresh;
    synchronized (this) {
      if (client.task(taskId) != null && !due.containsKey(taskId)) {
        due.put(taskId, 0L); // a copy from the journal or the app: revalidated at the next tick
      }
      fresh = client.task(taskId) == null && wanted.add(taskId);
    }
    if (fresh) {
      client.soon(new Runnable() {
        @Override
        public void run() {
          TaskFetcher.this.run(false);
        }
      });
    }
  }

  /** Fetch every wanted task and revalidate every due one (`now`: ignore the wait after a failure). */
  void run(boolean now) {
    List<String> ask = new ArrayList<String>();
    List<String> revalidate = new ArrayList<String>();
    long t = client.clock.millis();
    synchronized (this) {
      for (String id : wanted) {
        Long wait = notBefore.get(id);
        if (now || wait == null || t >= wait) ask.add(id);
      }
      for (Map.Entry<String, Long> e : due.entrySet()) {
        if (t >= e.getValue() && !wanted.contains(e.getKey())) revalidate.add(e.getKey());
      }
    }
    for (String id : ask) get(id, null);
    for (String id : revalidate) {
      String etag;
      synchronized (this) {
        etag = etags.get(id);
      }
      get(id, etag);
    }
  }

  private void get(String taskId, String etag) {
    long t = client.clock.millis();
    synchronized (this) {
      notBefore.put(taskId, t + 1000);
      if (etag != null || due.containsKey(taskId)) due.put(taskId, t + RETRY_MILLIS);
    }
    Map<String, String> headers = new HashMap<String, String>();
    headers.put("Accept", "application/json");
    if (etag != null) headers.put("If-None-Match", etag);
    Transport.Response response;
    try {
      response = client.options.transport.send("GET", client.options.endpoint + Uploader.path("/v1/tasks/{task_id}", taskId),
          headers, null, Math.min(TIMEOUT_MILLIS, client.options.timeoutMillis));
    } catch (IOException | RuntimeException error) {
      return; // asked again after notBefore
    }
    long fresh = client.clock.millis() + maxAge(response.header("Cache-Control"));
    if (response.status == 304 && etag != null) {
      synchronized (this) {
        due.put(taskId, fresh);
      }
      return;
    }
    if (response.status != 200) {
      long wait = Uploader.retryAfter(response.header("Retry-After"), client.clock.millis());
      synchronized (this) {
        notBefore.put(taskId, client.clock.millis() + Math.max(1000, Math.min(RETRY_MILLIS, wait)));
      }
      return;
    }
    try {
      Tasks.Task task = Tasks.parse(Json.parse(new String(response.body, Bytes.UTF8)));
      if (!task.id.equals(taskId)) throw new Mechanism.TaskError("the server answered another task");
      client.adopt(task, true);
      synchronized (this) {
        wanted.remove(taskId);
        etags.put(taskId, response.header("ETag"));
        due.put(taskId, fresh);
      }
    } catch (RuntimeException refused) {
      client.refused(refused); // the copy in use (if any) stays
      synchronized (this) {
        notBefore.put(taskId, client.clock.millis() + RETRY_MILLIS);
      }
    }
  }

  static long maxAge(String header) {
    Matcher m = MAX_AGE.matcher(header == null ? "" : header);
    return m.find() ? Math.min(Long.parseLong(m.group(1)) * 1000, MAX_AGE_CAP_MILLIS) : DEFAULT_MAX_AGE_MILLIS;
  }
}
