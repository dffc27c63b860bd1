package dev.ldptelemetry.internal.mechanisms;

import java.util.Map;

/** A task's typed fields (PROTOCOL §1): what Tasks and the kinds read from a task's JSON. */
public final class Fields {
  private Fields() {}

  /** Return an integer field in [low, high] or throw TaskError: a JSON integer, never `4.0` (§1). */
  public static int integer(Map<String, Object> task, String name, long low, long high) {
    return (int) longField(task, name, low, high);
  }

  public static long longField(Map<String, Object> task, String name, long low, long high) {
    Object value = task.get(name);
    if (value instanceof Long || value instanceof Integer) {
      long v = ((Number) value).longValue();
      if (v >= low && v <= high) return v;
    }
    throw new Mechanism.TaskError("task field " + name + " must be an integer in [" + low + ", " + high + "]");
  }

  /** Return a finite number field or throw TaskError. */
  public static double number(Map<String, Object> task, String name) {
    Object value = task.get(name);
    if (value instanceof Number && !Double.isNaN(((Number) value).doubleValue())
        && !Double.isInfinite(((Number) value).doubleValue())) {
      return ((Number) value).doubleValue();
    }
    throw new Mechanism.TaskError("task field " + name + " must be a finite number");
  }
}
