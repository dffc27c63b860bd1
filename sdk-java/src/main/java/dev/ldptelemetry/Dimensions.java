package dev.ldptelemetry;

import dev.ldptelemetry.internal.mechanisms.*;
import dev.ldptelemetry.internal.wire.*;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * A task's public dimensions (protocol 1.1, PROTOCOL §11): each a closed list of values plus
 * the implicit "other". A report carries them in the clear as `dims`: they are NOT protected
 * by local differential privacy. The "other" rule maps whatever the app gives to a listed
 * value (compared as exact strings) or "other", so a free-form string never leaves the device.
 */
final class Dimensions {
  static final String OTHER = "other";
  private static final Pattern NAME = Pattern.compile("^[a-z][a-z0-9_]{0,31}$");

  final List<String> names = new ArrayList<String>();
  final List<List<String>> values = new ArrayList<List<String>>();

  /** Return a task's dimensions (null: it declares none), or throw TaskError. */
  static Dimensions of(Object declared) {
    if (declared == null) return null;
    if (!(declared instanceof List) || ((List<?>) declared).isEmpty() || ((List<?>) declared).size() > 3) {
      throw new Mechanism.TaskError("dimensions must be a list of 1 to 3 dimensions");
    }
    Dimensions out = new Dimensions();
    for (Object item : (List<?>) declared) {
      if (!(item instanceof Map) || ((Map<?, ?>) item).size() != 2) {
        throw new Mechanism.TaskError("a dimension must be {\"name\", \"values\"}");
      }
      Object name = ((Map<?, ?>) item).get("name");
      Object list = ((Map<?, ?>) item).get("values");
      if (!(name instanceof String) || !NAME.matcher((String) name).matches() || out.names.contains(name)) {
        throw new Mechanism.TaskError("dimension names must match ^[a-z][a-z0-9_]{0,31}$ and be distinct");
      }
      if (!(list instanceof List) || ((List<?>) list).isEmpty() || ((List<?>) list).size() > 63) {
        throw new Mechanism.TaskError("a dimension lists 1 to 63 values");
      }
      List<String> strings = new ArrayList<String>();
      Set<Object> seen = new HashSet<Object>();
      for (Object v : (List<?>) list) {
        if (!(v instanceof String) || !valid((String) v) || !seen.add(v)) {
          throw new Mechanism.TaskError("dimension values must be distinct strings of 1 to 64 characters, "
              + "without control characters, and not \"other\"");
        }
        strings.add((String) v);
      }
      out.names.add((String) name);
      out.values.add(strings);
    }
    return out;
  }

  private static boolean valid(String v) {
    int length = v.codePointCount(0, v.length());
    if (length < 1 || length > 64 || OTHER.equals(v) || !Bytes.wellFormed(v)) return false;
    for (int i = 0; i < v.length(); i++) {
      char c = v.charAt(i);
      if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) return false;
    }
    return true;
  }

  /** Return `dims`: every declared name, in order, mapped to a listed value or "other". */
  Map<String, Object> dims(Map<String, ?> given) {
    Map<String, Object> out = new LinkedHashMap<String, Object>();
    for (int j = 0; j < names.size(); j++) {
      Object v = given == null ? null : given.get(names.get(j));
      out.put(names.get(j), v instanceof String && values.get(j).contains(v) ? v : OTHER);
    }
    return out;
  }

  /** Return `dims` from the client's values and this call's (which win, name by name; either may be null). */
  Map<String, Object> dims(Map<String, String> client, Map<String, String> call) {
    Map<String, String> all = new java.util.HashMap<String, String>();
    if (client != null) all.putAll(client);
    if (call != null) all.putAll(call);
    return dims(all);
  }

  /** Return the slice index of `dims` (mixed radix, the first dimension most significant). */
  int slice(Map<String, Object> dims) {
    int index = 0;
    for (int j = 0; j < names.size(); j++) {
      int at = values.get(j).indexOf(dims.get(names.get(j)));
      index = index * (values.get(j).size() + 1) + (at < 0 ? values.get(j).size() : at);
    }
    return index;
  }
}
