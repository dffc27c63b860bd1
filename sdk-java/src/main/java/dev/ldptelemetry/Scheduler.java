package dev.ldptelemetry;

import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;

/**
 * Where the client's background work runs: uploads and task fetches. The default is one
 * daemon thread; an Android app may instead pass {@link #MANUAL} and call
 * {@link Client#uploadNow(long)} from a WorkManager worker (README: unique work with a
 * network constraint).
 */
public interface Scheduler {
  /** Run `task` after `delayMillis`, then every `periodMillis` (never concurrently with itself). */
  void every(Runnable task, long delayMillis, long periodMillis);

  /** Run `task` soon, once. */
  void soon(Runnable task);

  /** Stop running anything (waits at most `timeoutMillis` for a run in progress). */
  void shutdown(long timeoutMillis);

  /** Runs nothing by itself: the app calls Client.uploadNow() (e.g. from WorkManager). */
  Scheduler MANUAL = new Scheduler() {
    @Override
    public void every(Runnable task, long delayMillis, long periodMillis) {}

    @Override
    public void soon(Runnable task) {}

    @Override
    public void shutdown(long timeoutMillis) {}
  };

  /** One daemon thread: it never keeps the JVM alive. */
  final class DaemonThread implements Scheduler {
    private final ScheduledExecutorService executor = Executors.newSingleThreadScheduledExecutor(new ThreadFactory() {
      @Override
      public Thread newThread(Runnable runnable) {
        Thread thread = new Thread(runnable, "ldp-telemetry-uploader");
        thread.setDaemon(true);
        return thread;
      }
    });

    @Override
    public void every(Runnable task, long delayMillis, long periodMillis) {
      executor.scheduleWithFixedDelay(task, delayMillis, periodMillis, TimeUnit.MILLISECONDS);
    }

    @Override
    public void soon(Runnable task) {
      try {
        executor.execute(task);
      } catch (java.util.concurrent.RejectedExecutionException closed) {
        // shut down: the client is closed
      }
    }

    @Override
    public void shutdown(long timeoutMillis) {
      executor.shutdownNow();
      try {
        executor.awaitTermination(timeoutMillis, TimeUnit.MILLISECONDS);
      } catch (InterruptedException interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
