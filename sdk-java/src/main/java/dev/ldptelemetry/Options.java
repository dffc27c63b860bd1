package dev.ldptelemetry;

import dev.ldptelemetry.internal.device.*;
import java.io.File;
import java.util.ArrayList;
import java.util.List;

/** What an app configures (checked once, by {@link Client.Builder#build()}). */
final class Options {
  String endpoint;
  File dataDir;
  byte[] secret;
  final List<String> taskIds = new ArrayList<String>();
  final List<String> tasks = new ArrayList<String>();
  String uploadKey;
  final java.util.Map<String, String> dimensions = new java.util.HashMap<String, String>();
  int reportsPerPeriod = 1;
  double republishedEpsilonInf = 0;
  double maxEpsilonInf = 64;
  double maxEpsilonPerPeriod = Double.NaN;
  long epsilonPeriodSeconds = 86_400;
  long maxQueueBytes = 10L << 20;
  long maxQueueAgeMillis = 7L * 86_400_000L;
  int batchSize = 500;
  long maxBatchBytes = 1L << 20;
  long flushIntervalMillis = 30_000;
  long backoffMillis = 500;
  long backoffMaxMillis = 30_000;
  int timeoutMillis = 30_000;
  Transport transport = new Transport.Default();
  Scheduler scheduler;
  Hpke hpke;
  boolean hpkeGiven;
  Clock clock = Clock.SYSTEM;
  java.security.SecureRandom random;

  State.Limits limits() {
    return new State.Limits(reportsPerPeriod, republishedEpsilonInf, maxEpsilonInf, maxEpsilonPerPeriod,
        epsilonPeriodSeconds);
  }

  void check() {
    if (endpoint == null || !endpoint.matches("^https?://[^/].*")) {
      throw new IllegalArgumentException("ldp-telemetry: endpoint must be an http(s) URL");
    }
    endpoint = endpoint.replaceAll("/+$", "");
    if (secret != null && secret.length != 32) throw new IllegalArgumentException("ldp-telemetry: secret must be 32 bytes");
    positive("reportsPerPeriod", reportsPerPeriod);
    cap("republishedEpsilonInf", republishedEpsilonInf);
    cap("maxEpsilonInf", maxEpsilonInf);
    cap("maxEpsilonPerPeriod", maxEpsilonPerPeriod);
    positive("epsilonPeriod", epsilonPeriodSeconds);
    positive("maxQueueBytes", maxQueueBytes);
    positive("maxQueueAge", maxQueueAgeMillis);
    positive("batchSize", batchSize);
    if (batchSize > 5000) throw new IllegalArgumentException("ldp-telemetry: batchSize must be at most 5,000");
    positive("maxBatchBytes", maxBatchBytes);
    positive("flushInterval", flushIntervalMillis);
    positive("backoff", backoffMillis);
    positive("backoffMax", backoffMaxMillis);
    positive("timeout", timeoutMillis);
    if (transport == null) throw new IllegalArgumentException("ldp-telemetry: transport must not be null");
  }

  private static void positive(String name, long value) {
    if (value <= 0) throw new IllegalArgumentException("ldp-telemetry: " + name + " must be positive");
  }

  private static void cap(String name, double value) {
    if (!Double.isNaN(value) && !(value >= 0 && !Double.isInfinite(value))) {
      throw new IllegalArgumentException("ldp-telemetry: " + name + " must be a number >= 0 (NaN: no cap)");
    }
  }
}
