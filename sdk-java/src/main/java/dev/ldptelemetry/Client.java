package dev.ldptelemetry;

import dev.ldptelemetry.internal.mechanisms.*;
import dev.ldptelemetry.internal.wire.*;
import dev.ldptelemetry.internal.device.*;
import java.io.Closeable;
import java.io.File;
import java.io.IOException;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The SDK's entry point. {@link #record(String, Object)} privatizes on the caller's thread
 * with SecureRandom, writes the encoded report to the durable queue and returns: it never
 * touches the network, never waits on it and never throws. Tasks are fetched, revalidated
 * (ETag) and reports uploaded by the {@link Scheduler} (a daemon thread by default). Only a
 * bad configuration throws, from {@link Builder#build()}. Thread-safe.
 */
public final class Client implements Closeable {
  /** Return a builder for a client of the collector at `endpoint` (an http(s) URL). */
  public static Builder builder(String endpoint) { return new Builder(endpoint); }

  final Object lock = new Object();
  final Options options;
  final Clock clock;
  final State state;
  private final Journal journal;
  private final State.Limits limits;
  private final Words words;
  private final SecureRandom ids;
  private final byte[] secret;
  private final Map<String, Tasks.Task> tasks = new HashMap<String, Tasks.Task>();
  private final Map<String, Map<String, Object>> taskJson = new LinkedHashMap<String, Map<String, Object>>();
  private final Map<String, byte[]> deviceKeys = new HashMap<String, byte[]>();
  final TaskFetcher fetcher;
  private final Uploader uploader;
  private final ReentrantLock uploading = new ReentrantLock();
  private final AtomicBoolean uploadAsked = new AtomicBoolean();
  private final Scheduler scheduler;
  private volatile boolean enabled = true;
  private volatile boolean closed;
  final AtomicLong sent = new AtomicLong();
  final AtomicLong retries = new AtomicLong();
  final AtomicLong failedBatches = new AtomicLong();
  final Map<String, Long> dropped = new TreeMap<String, Long>();
  final Map<String, Long> rejected = new TreeMap<String, Long>();
  final Map<String, Long> refusedTasks = new TreeMap<String, Long>();

  Client(Options options) {
    this.options = options;
    this.clock = options.clock;
    this.limits = options.limits();
    ids = options.random != null ? options.random : Secrets.defaultRandom();
    words = new Words.Secure(ids);
    journal = new Journal(options.dataDir, new Runnable() {
      @Override
      public void run() {
        count(dropped, "storage_error", 1);
      }
    });
    state = new State(options.maxQueueBytes, journal);
    byte[] key = options.secret;
    try {
      // The secret first: a journal that cannot be read must not cost the device its secret.
      if (key == null && options.dataDir != null) {
        if (!options.dataDir.isDirectory() && !options.dataDir.mkdirs()) throw new IOException("no data folder");
        key = Secrets.loadSecret(new File(options.dataDir, "secret"), ids);
      }
      journal.load(state, taskJson);
    } catch (IOException | RuntimeException error) {
      // An unreadable folder: go on in memory, counted (the app's data is not ours to delete).
      count(dropped, "storage_error", 1);
    }
    if (key == null) {
      key = new byte[32];
      ids.nextBytes(key);
    }
    secret = key;
    for (Map<String, Object> json : taskJson.values()) adoptQuietly(json, false);
    for (String json : options.tasks) adoptQuietly(Json.parse(json), true);
    fetcher = new TaskFetcher(this);
    uploader = new Uploader(this);
    scheduler = options.scheduler != null ? options.scheduler : new Scheduler.DaemonThread();
    for (String id : options.taskIds) fetcher.want(id);
    scheduler.every(new Runnable() {
      @Override
      public void run() {
        tick(false);
      }
    }, 0, options.flushIntervalMillis);
  }

  private void adoptQuietly(Object json, boolean given) {
    try {
      adopt(Tasks.parse(json), given);
    } catch (RuntimeException refused) {
      refused(refused);
    }
  }

  void refused(RuntimeException error) {
    count(refusedTasks, error instanceof Mechanism.TaskError ? ((Mechanism.TaskError) error).reason : "invalid_task", 1);
  }

  /** Use a checked task from now on (a sealed one only if reports can be sealed here). */
  void adopt(Tasks.Task task, boolean save) {
    if (task.seal != null) Sealing.checkSealable(options.hpke, task.seal);
    synchronized (lock) {
      tasks.put(task.id, task);
      Map<String, Object> before = taskJson.put(task.id, task.json);
      if (save && (before == null || !Json.canonical(before).equals(Json.canonical(task.json)))) journal.task(task.json);
    }
  }

  Tasks.Task task(String taskId) {
    synchronized (lock) {
      return tasks.get(taskId);
    }
  }

  /** Forget a task's copy and fetch it again (its reports were answered outdated_config). */
  void refetch(String taskId) {
    synchronized (lock) {
      tasks.remove(taskId);
    }
    fetcher.want(taskId);
  }

  void count(Map<String, Long> counter, String reason, long n) {
    synchronized (counter) {
      Long before = counter.get(reason);
      counter.put(reason, (before == null ? 0 : before) + n);
    }
  }

  int queued() {
    synchronized (lock) {
      return state.queue.size();
    }
  }

  /**
   * Privatize `value` for task `taskId` and queue the report; true if queued (or the
   * period's report for the same value re-queued). The value must fit the task's kind: a
   * Boolean for rr, a domain String for grr, oue and ss, a String for cms, hcms, olh and hh, a
   * Number for numeric. Never throws; a refusal is counted in {@link #stats()} by reason.
   */
  public boolean record(String taskId, Object value) {
    return record(taskId, value, null);
  }

  /**
   * As {@link #record(String, Object)}, with dimension values for this call (over the
   * client's, name by name). A task that declares dimensions (protocol 1.1) sends each
   * declared one IN THE CLEAR, not protected by local differential privacy: a listed value,
   * or "other" for anything else; names it does not declare are dropped.
   */
  public boolean record(String taskId, Object value, Map<String, String> dimensions) {
    if (!enabled) return false;
    if (closed) return drop("closed");
    try {
      Tasks.Task task = taskId == null ? null : task(taskId);
      if (task == null) {
        if (taskId != null) fetcher.want(taskId);
        return drop("task_unavailable");
      }
      long now = clock.millis() / 1000;
      long period = Wire.floorTime(now, task.timePrecision);
      byte[] canonical = task.mechanism.canonical(value);
      final Map<String, Object> dims = task.dimensions == null ? null : task.dimensions.dims(options.dimensions, dimensions);
      // 1.1: the memo key binds the slice (§3.10), so other dims make a new report, never the old one.
      String lookup = Wire.memoKey(secret, task.fingerprint, period, canonical, dims == null ? -1 : task.dimensions.slice(dims));
      State.Charge charge = new State.Charge(task.epsilon, Wire.floorTime(now, limits.epsilonPeriod),
          task.configuration, task.epsilonInf,
          task.configuration == null ? null
              : Wire.valueKey(secret, task.id, Loloha.ledgerValue(task.mechanism, secret, task.id, value, canonical)));
      String admission;
      synchronized (lock) {
        admission = state.admit(task.id, period, period + task.timePrecision, lookup, charge, limits,
            () -> privatize(task, period, value, dims));
      }
      if ("new".equals(admission) || "reused".equals(admission)) {
        if (queued() >= options.batchSize && uploadAsked.compareAndSet(false, true)) {
          scheduler.soon(this::uploadInBackground); // at most one waiting: a stalled upload must not pile them up
        }
        return true;
      }
      return drop(admission);
    } catch (Mechanism.ValueError error) {
      return drop("invalid_value");
    } catch (Exception | LinkageError | AssertionError error) {
      return drop(error instanceof java.security.GeneralSecurityException ? "seal_failed" : "internal_error");
    }
  }

  @SuppressWarnings({"unchecked", "rawtypes"})
  private State.Pending privatize(Tasks.Task task, long period, Object value, Map<String, Object> dims)
      throws Exception {
    byte[] deviceKey = deviceKeys.get(task.id);
    if (deviceKey == null) deviceKeys.put(task.id, deviceKey = Wire.deviceKey(secret, task.id));
    Mechanism mechanism = task.mechanism.forDevice(deviceKey);
    Map<String, Object> payload = mechanism.encode(mechanism.privatize(value, words));
    byte[] raw = new byte[16];
    ids.nextBytes(raw);
    String id = Bytes.base64url(raw);
    String text = task.seal == null ? Wire.reportText(id, task.fingerprint, period, dims, payload)
        : Sealing.reportText(options.hpke, task.id, task.seal, id, task.fingerprint, period, dims, payload);
    return new State.Pending(task.id, id, text, clock.millis());
  }

  private boolean drop(String reason) {
    count(dropped, reason, 1);
    return false;
  }

  /** Fetch tasks that are wanted or due, upload what is queued, compact the journal. */
  private void tick(boolean now) {
    try {
      fetcher.run(now);
      uploadInBackground();
      synchronized (lock) {
        if (journal.wantsCompaction()) journal.compact(state, taskJson);
        journal.sync();
      }
    } catch (Throwable error) {
      count(dropped, "internal_error", 0);
    }
  }

  /** Run something on the scheduler's thread soon. */
  void soon(Runnable task) {
    if (scheduler != null) scheduler.soon(task);
  }

  private void uploadInBackground() {
    uploadAsked.set(false);
    if (!enabled || closed || !uploading.tryLock()) return;
    try {
      uploader.pass(Uploader.monotonic() + options.flushIntervalMillis);
    } finally {
      uploading.unlock();
    }
  }

  /** Return true once these tasks are known, false after the timeout (fetches on this thread). */
  public boolean waitForTasks(long timeoutMillis, String... taskIds) {
    long deadline = System.currentTimeMillis() + timeoutMillis;
    for (String id : taskIds) fetcher.want(id);
    for (;;) {
      boolean all = true;
      for (String id : taskIds) all &= task(id) != null;
      if (all) return true;
      if (System.currentTimeMillis() >= deadline) return false;
      fetcher.run(true);
      Uploader.sleep(50);
    }
  }

  /**
   * Upload everything queued on the caller's thread; true if the queue emptied within the
   * timeout. What an Android WorkManager worker calls (with {@link Scheduler#MANUAL}).
   */
  public boolean uploadNow(long timeoutMillis) {
    long deadline = Uploader.monotonic() + timeoutMillis;
    try {
      if (!uploading.tryLock(timeoutMillis, TimeUnit.MILLISECONDS)) return false;
    } catch (InterruptedException interrupted) {
      Thread.currentThread().interrupt();
      return false;
    }
    try {
      fetcher.run(false);
      for (;;) {
        if (uploader.pass(deadline)) return true;
        if (Uploader.monotonic() >= deadline) return false;
        Uploader.sleep(Math.min(50, Math.max(1, Math.min(uploader.waitUntil, deadline) - Uploader.monotonic())));
      }
    } catch (RuntimeException error) {
      return false;
    } finally {
      synchronized (lock) {
        journal.sync();
      }
      uploading.unlock();
    }
  }

  /** Send everything queued; true if the queue emptied within the timeout. */
  public boolean flush(long timeoutMillis) {
    if (closed || !enabled) return !closed && queued() == 0;
    return uploadNow(timeoutMillis);
  }

  /** Flush, then stop; true if nothing queued was left. What is left stays on disk for the next start. */
  public boolean close(long timeoutMillis) {
    if (closed) return true;
    boolean flushed = flush(timeoutMillis);
    closed = true;
    scheduler.shutdown(1000);
    synchronized (lock) {
      journal.close();
    }
    return flushed;
  }

  /** Close with a 5 s flush. */
  @Override
  public void close() {
    close(5000);
  }

  /** Turn recording on or off; off deletes every queued report (counted as dropped "disabled"). */
  public void setEnabled(boolean on) {
    enabled = on;
    if (!on) {
      int n;
      synchronized (lock) {
        n = state.clear();
      }
      count(dropped, "disabled", n);
    }
  }

  /** Return the counters and the privacy ledger per task id (see {@link Stats}). */
  public Stats stats() {
    Map<String, Double> drawn;
    synchronized (lock) { drawn = new TreeMap<String, Double>(state.drawn); }
    return new Stats(sent.get(), retries.get(), failedBatches.get(), queued(), Stats.copy(dropped), Stats.copy(rejected),
        Stats.copy(refusedTasks), drawn);
  }

  /** Builds a client; every option has a default (README). */
  public static final class Builder {
    private final Options o = new Options();

    Builder(String endpoint) {
      o.endpoint = endpoint;
    }

    /** The folder where the secret, the ledger and the queue live (none: memory only, a new device per process). */
    public Builder dataDir(File folder) { o.dataDir = folder; return this; }
    /** A 32-byte device secret to use instead of the one kept in the data folder. */
    public Builder secret(byte[] secret) { o.secret = secret == null ? null : secret.clone(); return this; }
    /** Task ids to fetch at once (others are fetched when first recorded, that record dropped). */
    public Builder taskIds(String... ids) { o.taskIds.addAll(Arrays.asList(ids)); return this; }
    /** A task's JSON as served, used as given (checked like a fetched one). */
    public Builder task(String json) { o.tasks.add(json); return this; }
    public Builder uploadKey(String key) { o.uploadKey = key; return this; }
    /** Dimension values for every record (1.1 tasks; sent in the clear, not protected by LDP). */
    public Builder dimensions(Map<String, String> values) { o.dimensions.putAll(values); return this; }
    /** Reports per task id per period (default 1). */
    public Builder reportsPerPeriod(int n) { o.reportsPerPeriod = n; return this; }
    /** ε∞ a task id may spend on configurations after its first (default 0; NaN: no cap). */
    public Builder republishedEpsilonInf(double cap) { o.republishedEpsilonInf = cap; return this; }
    /** Lifetime ε∞ over every permanent response (default 64; NaN: no cap). */
    public Builder maxEpsilonInf(double cap) { o.maxEpsilonInf = cap; return this; }
    /** ε of all new reports in one device period (default NaN: no cap). */
    public Builder maxEpsilonPerPeriod(double cap) { o.maxEpsilonPerPeriod = cap; return this; }
    public Builder epsilonPeriodSeconds(long seconds) { o.epsilonPeriodSeconds = seconds; return this; }
    /** The queue's bound in bytes (default 10 MiB): records beyond it are refused, counted queue_full. */
    public Builder maxQueueBytes(long bytes) { o.maxQueueBytes = bytes; return this; }
    /** Reports older than this are dropped, counted expired (default 7 days: the collector's window). */
    public Builder maxQueueAgeMillis(long millis) { o.maxQueueAgeMillis = millis; return this; }
    public Builder batchSize(int n) { o.batchSize = n; return this; }
    public Builder flushIntervalMillis(long millis) { o.flushIntervalMillis = millis; return this; }
    /** First backoff and its cap (default 0.5 s and 30 s), jittered ×[0.5, 1.5). */
    public Builder backoffMillis(long first, long max) { o.backoffMillis = first; o.backoffMaxMillis = max; return this; }
    public Builder timeoutMillis(int millis) { o.timeoutMillis = millis; return this; }
    public Builder transport(Transport transport) { o.transport = transport; return this; }
    public Builder scheduler(Scheduler scheduler) { o.scheduler = scheduler; return this; }
    /** The HPKE of sealed tasks (default: the runtime's, if it has X25519 and ChaCha20-Poly1305). */
    public Builder hpke(Hpke hpke) { o.hpke = hpke; o.hpkeGiven = true; return this; }
    public Builder clock(Clock clock) { o.clock = clock; return this; }
    /** The CSPRNG of noise, report ids and the secret (default: the JCA's "DRBG", else new SecureRandom()). */
    public Builder secureRandom(SecureRandom random) { o.random = random; return this; }

    /** Return the started client; throws IllegalArgumentException for a bad option (and only then). */
    public Client build() {
      o.check();
      if (!o.hpkeGiven) o.hpke = JdkHpke.createOrNull();
      for (String json : o.tasks) {
        try {
          Json.parse(json);
        } catch (Json.ParseError error) {
          throw new IllegalArgumentException("ldp-telemetry: a task given is not JSON", error);
        }
      }
      return new Client(o);
    }
  }
}
