package dev.ldptelemetry.internal.device;

import dev.ldptelemetry.internal.wire.*;
import java.io.BufferedReader;
import java.io.File;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * The device's state on disk: append-only segment files of JSON lines in one folder. Each
 * line is a list of operations written with one write() call, so a record (its report, memo
 * and ledger charges) is on disk in full or not at all when the process is killed; a torn
 * last line is ignored when read back. Compaction writes the live state as a snapshot to a
 * new segment (a temporary file, fsync, atomic rename), then deletes the older segments;
 * replaying the operations twice is harmless, so a crash in between loses nothing.
 * Without a folder nothing is written (the state lives as long as the process).
 */
public final class Journal {
  private static final String PREFIX = "journal-";
  private static final String SUFFIX = ".log";
  /** Compact once the active segment holds this many bytes. */
  public static final long COMPACT_BYTES = 4L << 20;

  private final File folder;
  private FileOutputStream out;
  private long sequence;
  private long written;
  private List<Object> batch; // operations of the record in progress
  private final Runnable onError;

  public Journal(File folder, Runnable onError) {
    this.folder = folder;
    this.onError = onError;
  }

  public boolean durable() {
    return folder != null && out != null;
  }

  /** The segments, oldest first. */
  private List<File> segments() {
    List<File> found = new ArrayList<File>();
    File[] files = folder.listFiles();
    if (files != null) {
      for (File f : files) {
        if (f.getName().startsWith(PREFIX) && f.getName().endsWith(SUFFIX)) found.add(f);
      }
    }
    Collections.sort(found, (a, b) -> Long.compare(seq(a), seq(b)));
    return found;
  }

  private static long seq(File f) {
    String name = f.getName();
    try {
      return Long.parseLong(name.substring(PREFIX.length(), name.length() - SUFFIX.length()));
    } catch (NumberFormatException error) {
      return -1;
    }
  }

  /** Read every segment back into `state` (and `tasks`), then compact. */
  public void load(State state, Map<String, Map<String, Object>> tasks) throws IOException {
    if (folder == null) return;
    if (!folder.isDirectory() && !folder.mkdirs()) throw new IOException("cannot create " + folder);
    for (File segment : segments()) {
      sequence = Math.max(sequence, seq(segment));
      BufferedReader reader = new BufferedReader(new InputStreamReader(new FileInputStream(segment), Bytes.UTF8));
      try {
        for (String line = reader.readLine(); line != null; line = reader.readLine()) {
          Object ops;
          try {
            ops = Json.parse(line);
          } catch (Json.ParseError torn) {
            continue; // the line a kill cut short: that record never happened
          }
          try {
            for (Object op : (List<?>) ops) apply((List<?>) op, state, tasks);
          } catch (RuntimeException damaged) {
            onError.run(); // counted; the rest is read: the ledger is kept as far as it is readable
          }
        }
      } finally {
        reader.close();
      }
    }
    compact(state, tasks);
  }

  @SuppressWarnings("unchecked")
  private static void apply(List<?> op, State state, Map<String, Map<String, Object>> tasks) {
    String kind = (String) op.get(0);
    if ("snapshot".equals(kind)) {
      state.queue.clear();
      state.bytes = 0;
      state.budget.clear();
      state.configurations.clear();
      state.drawn.clear();
      state.lifetime = 0;
      tasks.clear();
    } else if ("q".equals(kind)) {
      state.restoreQueued(new State.Pending(str(op, 1), str(op, 2), str(op, 3), num(op, 4)));
    } else if ("rm".equals(kind)) {
      List<String> ids = new ArrayList<String>();
      for (Object id : (List<?>) op.get(1)) ids.add((String) id);
      state.restoreRemoved(ids);
    } else if ("memo".equals(kind)) {
      State.Pending p = new State.Pending(str(op, 1), str(op, 5), str(op, 6), num(op, 7));
      state.restoreMemo(str(op, 1), num(op, 2), num(op, 3), str(op, 4), p);
    } else if ("forget".equals(kind)) {
      state.restoreForgotten(str(op, 1), num(op, 2));
    } else if ("cfg".equals(kind)) {
      List<Object[]> list = new ArrayList<Object[]>();
      for (Object pair : (List<?>) op.get(2)) {
        List<?> p = (List<?>) pair;
        list.add(new Object[] {p.get(0), ((Number) p.get(1)).doubleValue()});
      }
      state.configurations.put(str(op, 1), list);
    } else if ("drawn".equals(kind)) {
      state.restoreDrawn(str(op, 1), ((Number) op.get(2)).doubleValue());
    } else if ("spent".equals(kind)) {
      state.periodStart = num(op, 1);
      state.periodEpsilon = ((Number) op.get(2)).doubleValue();
    } else if ("task".equals(kind)) {
      Map<String, Object> json = (Map<String, Object>) op.get(1);
      tasks.put((String) json.get("task_id"), json);
    }
  }

  private static String str(List<?> op, int i) {
    return (String) op.get(i);
  }

  private static long num(List<?> op, int i) {
    return ((Number) op.get(i)).longValue();
  }

  /** Write the live state as a new snapshot segment and delete the older ones. */
  public void compact(State state, Map<String, Map<String, Object>> tasks) throws IOException {
    if (folder == null) return;
    List<File> old = segments();
    long next = sequence + 1;
    File temporary = new File(folder, PREFIX + next + ".tmp");
    FileOutputStream snapshot = new FileOutputStream(temporary);
    try {
      StringBuilder text = new StringBuilder();
      line(text, Arrays.<Object>asList(Arrays.<Object>asList("snapshot")));
      for (Map<String, Object> json : tasks.values()) line(text, one("task", json));
      for (Map.Entry<String, List<State.Period>> e : state.budget.entrySet()) {
        for (State.Period p : e.getValue()) {
          for (Map.Entry<String, State.Pending> m : p.memo.entrySet()) {
            line(text, one("memo", e.getKey(), p.start, p.end, m.getKey(), m.getValue().id, m.getValue().text,
                m.getValue().madeAt));
          }
        }
      }
      for (Map.Entry<String, List<Object[]>> e : state.configurations.entrySet()) {
        line(text, one("cfg", e.getKey(), pairs(e.getValue())));
      }
      for (Map.Entry<String, Double> e : state.drawn.entrySet()) line(text, one("drawn", e.getKey(), e.getValue()));
      line(text, one("spent", state.periodStart, state.periodEpsilon));
      for (State.Pending p : state.queue.values()) line(text, one("q", p.taskId, p.id, p.text, p.madeAt));
      snapshot.write(Bytes.utf8(text.toString()));
      snapshot.getFD().sync();
    } finally {
      snapshot.close();
    }
    File target = new File(folder, PREFIX + next + SUFFIX);
    if (!temporary.renameTo(target)) throw new IOException("cannot rename " + temporary);
    if (out != null) out.close();
    out = new FileOutputStream(target, true);
    written = target.length();
    sequence = next;
    for (File f : old) {
      if (!f.delete()) throw new IOException("cannot delete " + f);
    }
  }

  public boolean wantsCompaction() {
    return durable() && written > COMPACT_BYTES;
  }

  /** fsync the active segment (a power loss then loses nothing before this call). */
  public void sync() {
    if (out == null) return;
    try {
      out.getFD().sync();
    } catch (IOException error) {
      fail();
    }
  }

  private static List<Object> pairs(List<Object[]> list) {
    List<Object> out = new ArrayList<Object>();
    for (Object[] p : list) out.add(Arrays.asList(p));
    return out;
  }

  private static List<Object> one(Object... op) {
    List<Object> ops = new ArrayList<Object>();
    ops.add(Arrays.asList(op));
    return ops;
  }

  private static void line(StringBuilder text, List<Object> ops) {
    text.append(Json.write(ops)).append('\n');
  }

  public void begin() {
    batch = new ArrayList<Object>();
  }

  public void commit() {
    List<Object> ops = batch;
    batch = null;
    if (ops != null && !ops.isEmpty()) write(ops);
  }

  private void op(Object... op) {
    if (out == null) return;
    if (batch != null) {
      batch.add(Arrays.asList(op));
    } else {
      List<Object> ops = new ArrayList<Object>();
      ops.add(Arrays.asList(op));
      write(ops);
    }
  }

  private void write(List<Object> ops) {
    if (out == null) return;
    byte[] line = Bytes.utf8(Json.write(ops) + "\n");
    try {
      out.write(line); // one write(): in the kernel's hands when it returns, whatever kills the process
      written += line.length;
    } catch (IOException error) {
      fail();
    }
  }

  private void fail() {
    try {
      out.close();
    } catch (IOException ignored) {
      // already failing: the client goes on in memory
    }
    out = null;
    onError.run();
  }

  public void queued(State.Pending p) {
    op("q", p.taskId, p.id, p.text, p.madeAt);
  }

  public void removed(List<String> ids) {
    op("rm", new ArrayList<Object>(ids));
  }

  public void remembered(String taskId, long start, long end, String lookup, State.Pending p) {
    op("memo", taskId, start, end, lookup, p.id, p.text, p.madeAt);
  }

  public void forgotten(String taskId, long before) {
    op("forget", taskId, before);
  }

  public void adopted(String taskId, List<Object[]> list) {
    op("cfg", taskId, pairs(list));
  }

  public void drew(String key, double epsilonInf) {
    op("drawn", key, epsilonInf);
  }

  public void spent(long period, double epsilon) {
    op("spent", period, epsilon);
  }

  public void task(Map<String, Object> json) {
    op("task", json);
  }

  public void close() {
    if (out == null) return;
    try {
      out.getFD().sync();
      out.close();
    } catch (IOException ignored) {
      // closing: nothing left to protect
    }
    out = null;
  }
}
