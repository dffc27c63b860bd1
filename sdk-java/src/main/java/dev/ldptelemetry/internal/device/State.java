package dev.ldptelemetry.internal.device;

import dev.ldptelemetry.internal.mechanisms.*;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The device's state and its rules (PROTOCOL §4): the budget (per task id and period at most
 * N reports; the same value in the same period re-queues the report already made, found by an
 * HMAC memo key), the privacy ledger (permanent configurations adopted per task id, PRRs drawn
 * within the lifetime cap, the ε of one device period), and the queue of undelivered reports.
 * A refused record draws no noise and changes nothing. Every change is written to the
 * journal before admit() returns. Not thread-safe by itself: the client holds its lock.
 */
public final class State {
  /** One encoded report waiting for upload. */
  public static final class Pending {
    public final String taskId;
    public final String id;
    public final String text;
    /** When it was made (ms since the epoch): reports older than the queue's age bound are dropped. */
    public final long madeAt;

    public Pending(String taskId, String id, String text, long madeAt) {
      this.taskId = taskId;
      this.id = id;
      this.text = text;
      this.madeAt = madeAt;
    }
  }

  /** A period of one task id: what was reported in it, by memo key. */
  public static final class Period {
    public final long start;
    public final long end;
    public final Map<String, Pending> memo = new LinkedHashMap<String, Pending>();

    public Period(long start, long end) {
      this.start = start;
      this.end = end;
    }
  }

  /** The caps the app sets (NaN lifts one). */
  public static final class Limits {
    public final int reportsPerPeriod;
    public final double republishedEpsilonInf;
    public final double maxEpsilonInf;
    public final double maxEpsilonPerPeriod;
    public final long epsilonPeriod;

    public Limits(int reportsPerPeriod, double republished, double maxInf, double perPeriod, long epsilonPeriod) {
      this.reportsPerPeriod = reportsPerPeriod;
      this.republishedEpsilonInf = republished;
      this.maxEpsilonInf = maxInf;
      this.maxEpsilonPerPeriod = perPeriod;
      this.epsilonPeriod = epsilonPeriod;
    }
  }

  /** What a new report of a record spends: its ε in a device period, maybe a new PRR. */
  public static final class Charge {
    public final double epsilon;
    public final long period;
    /** Longitudinal tasks: (C, ε∞, value key K); else null. */
    public final String configuration;
    public final double epsilonInf;
    public final String valueKey;

    public Charge(double epsilon, long period, String configuration, double epsilonInf, String valueKey) {
      this.epsilon = epsilon;
      this.period = period;
      this.configuration = configuration;
      this.epsilonInf = epsilonInf;
      this.valueKey = valueKey;
    }
  }

  /** Makes the report once a record is admitted (privatizing draws noise only then). */
  public interface Maker {
    public Pending make() throws Exception;
  }

  private static final double TOLERANCE = 1e-9; // a sum equal to its cap is not refused by rounding

  public static boolean within(double spent, double cost, double cap) {
    return Double.isNaN(cap) || spent + cost <= cap + TOLERANCE;
  }

  public final LinkedHashMap<String, Pending> queue = new LinkedHashMap<String, Pending>();
  public final Map<String, List<Period>> budget = new HashMap<String, List<Period>>();
  public final Map<String, List<Object[]>> configurations = new HashMap<String, List<Object[]>>();
  public final Map<String, Double> drawn = new HashMap<String, Double>();
  public long periodStart;
  public double periodEpsilon;
  public double lifetime;
  public long bytes;
  public final long maxBytes;
  public final Journal journal;

  public State(long maxBytes, Journal journal) {
    this.maxBytes = maxBytes;
    this.journal = journal;
  }

  /** Apply the device rules (PROTOCOL §4, in its order) to a record; return the admission. */
  public String admit(String taskId, long start, long end, String lookup, Charge charge, Limits limits, Maker maker)
      throws Exception {
    List<Period> periods = budget.get(taskId);
    if (periods == null) periods = new ArrayList<Period>();
    for (Period p : periods) {
      Pending earlier = p.start == start && p.end == end ? p.memo.get(lookup) : null;
      if (earlier != null) return enqueue(earlier) ? "reused" : "queue_full";
    }
    Boolean adopt = adopts(taskId, charge, limits);
    if (adopt == null) return "config_changed";
    // Periods overlapping this one, whatever the task's configuration was then.
    int spent = 0;
    for (Period p : periods) {
      if (p.start < end && p.end > start) spent += p.memo.size();
    }
    if (spent >= limits.reportsPerPeriod) return "budget_exhausted";
    double inPeriod = periodStart == charge.period ? periodEpsilon : 0;
    if (!within(inPeriod, charge.epsilon, limits.maxEpsilonPerPeriod)) return "epsilon_exhausted";
    String drawKey = charge.configuration == null ? null
        : taskId + "\0" + charge.configuration + "\0" + charge.valueKey;
    boolean newPrr = drawKey != null && !drawn.containsKey(drawKey);
    if (newPrr && !within(lifetime, charge.epsilonInf, limits.maxEpsilonInf)) return "epsilon_inf_exhausted";
    if (bytes >= maxBytes) return "queue_full"; // before privatizing: no noise drawn for nothing
    Pending pending = maker.make();
    if (!hasRoom(pending)) return "queue_full";
    journal.begin();
    enqueue(pending);
    remember(taskId, start, end, lookup, pending, periods);
    if (adopt && charge.configuration != null) {
      List<Object[]> list = configurations.get(taskId);
      list = list == null ? new ArrayList<Object[]>() : new ArrayList<Object[]>(list);
      list.add(new Object[] {charge.configuration, charge.epsilonInf});
      configurations.put(taskId, list);
      journal.adopted(taskId, list);
    }
    if (newPrr) {
      drawn.put(drawKey, charge.epsilonInf);
      lifetime += charge.epsilonInf;
      journal.drew(drawKey, charge.epsilonInf);
    }
    periodStart = charge.period;
    periodEpsilon = inPeriod + charge.epsilon;
    journal.spent(periodStart, periodEpsilon);
    journal.commit();
    return "new";
  }

  /** Return whether a record adopts its configuration: true, false (known) or null (refused). */
  private Boolean adopts(String taskId, Charge charge, Limits limits) {
    // Decided from the task's configurations only, never from the value.
    List<Object[]> adopted = configurations.get(taskId);
    if (charge.configuration == null) return adopted != null && !adopted.isEmpty() ? null : Boolean.FALSE;
    if (adopted == null || adopted.isEmpty()) return Boolean.TRUE;
    double later = 0;
    for (int i = 0; i < adopted.size(); i++) {
      if (charge.configuration.equals(adopted.get(i)[0])) return Boolean.FALSE;
      if (i > 0) later += (Double) adopted.get(i)[1];
    }
    return within(later, charge.epsilonInf, limits.republishedEpsilonInf) ? Boolean.TRUE : null;
  }

  private void remember(String taskId, long start, long end, String lookup, Pending pending, List<Period> periods) {
    List<Period> kept = new ArrayList<Period>();
    for (Period p : periods) {
      if (p.end > start) kept.add(p);
    }
    if (kept.size() < periods.size()) journal.forgotten(taskId, start);
    Period period = null;
    for (Period p : kept) {
      if (p.start == start && p.end == end) period = p;
    }
    if (period == null) kept.add(period = new Period(start, end));
    period.memo.put(lookup, pending);
    budget.put(taskId, kept);
    journal.remembered(taskId, start, end, lookup, pending);
  }

  private boolean hasRoom(Pending pending) {
    return queue.containsKey(pending.id) || bytes + pending.text.length() <= maxBytes;
  }

  /** Queue a report (a no-op if queued); false if it does not fit. */
  public boolean enqueue(Pending pending) {
    if (queue.containsKey(pending.id)) return true;
    if (!hasRoom(pending)) return false;
    queue.put(pending.id, pending);
    bytes += pending.text.length();
    journal.queued(pending);
    return true;
  }

  /** Forget delivered (or definitively refused) reports. */
  public void remove(List<String> ids) {
    List<String> removed = new ArrayList<String>();
    for (String id : ids) {
      Pending pending = queue.remove(id);
      if (pending != null) {
        bytes -= pending.text.length();
        removed.add(id);
      }
    }
    if (!removed.isEmpty()) journal.removed(removed);
  }

  /** Drop reports made before `oldest` (ms); return how many. */
  public int expire(long oldest) {
    List<String> old = new ArrayList<String>();
    for (Iterator<Pending> it = queue.values().iterator(); it.hasNext(); ) {
      Pending p = it.next();
      if (p.madeAt < oldest) old.add(p.id);
    }
    remove(old);
    return old.size();
  }

  // Restoring (from the journal): no journal writes.

  public void restoreQueued(Pending pending) {
    if (queue.put(pending.id, pending) == null) bytes += pending.text.length();
  }

  public void restoreRemoved(List<String> ids) {
    for (String id : ids) {
      Pending pending = queue.remove(id);
      if (pending != null) bytes -= pending.text.length();
    }
  }

  public void restoreMemo(String taskId, long start, long end, String lookup, Pending pending) {
    List<Period> periods = budget.get(taskId);
    if (periods == null) budget.put(taskId, periods = new ArrayList<Period>());
    Period period = null;
    for (Period p : periods) {
      if (p.start == start && p.end == end) period = p;
    }
    if (period == null) periods.add(period = new Period(start, end));
    period.memo.put(lookup, pending);
  }

  public void restoreForgotten(String taskId, long before) {
    List<Period> periods = budget.get(taskId);
    if (periods == null) return;
    for (Iterator<Period> it = periods.iterator(); it.hasNext(); ) {
      if (it.next().end <= before) it.remove();
    }
  }

  public void restoreDrawn(String key, double epsilonInf) {
    Double before = drawn.put(key, epsilonInf);
    lifetime += epsilonInf - (before == null ? 0 : before);
  }

  /** Drop every queued report (the budget and the privacy ledger stay); return how many. */
  public int clear() {
    List<String> ids = new ArrayList<String>(queue.keySet());
    remove(ids);
    return ids.size();
  }
}
