package dev.ldptelemetry;

import dev.ldptelemetry.internal.mechanisms.*;
import dev.ldptelemetry.internal.wire.*;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * A task as served by GET /v1/tasks/{id} (PROTOCOL §1): checked field by field, its derived
 * integers recomputed and compared, fingerprinted, and built into its mechanism.
 */
final class Tasks {
  private Tasks() {}

  /** The protocol version this SDK sends (every 1.1 upload also follows 1.0's rules). */
  static final String PROTOCOL = "1.0";
  /** The task versions it implements: 1.1 is 1.0 plus public dimensions (PROTOCOL §11). */
  static final Set<String> PROTOCOLS = new HashSet<String>(Arrays.asList("1.0", "1.1"));

  /** Served beside a task but not fingerprinted (§1.2). */
  static final Set<String> UNHASHED = new HashSet<String>(Arrays.asList(
      "fingerprint", "effective_epsilon", "effective_epsilon_inf", "upload_key_required", "archive",
      "attack_success", "selection", "seal"));
  /** Fields that are not the mechanism's own (not in F of §3.9); `sealed` as the reference. */
  static final Set<String> COMMON = new HashSet<String>(Arrays.asList(
      "task_id", "mechanism", "time_precision", "min_batch_size", "protocol", "derived", "sealed",
      "dimensions", "min_slice_size"));
  /**
   * Each kind's own fields (§1.1): a task holding another kind's field (`k` on an rr task), a
   * field §1.1 does not list, or the creation answer's `upload_key` is refused.
   */
  static final Map<String, Set<String>> OWN = new LinkedHashMap<String, Set<String>>();

  static {
    own("rr", "epsilon", "alpha", "beta", "longitudinal");
    own("grr", "epsilon", "domain", "longitudinal");
    own("cms", "epsilon", "k", "m", "hash_seed", "longitudinal");
    own("hcms", "epsilon", "k", "m", "hash_seed", "longitudinal");
    own("olh", "epsilon", "k", "hash_seed");
    own("hh", "epsilon", "k", "m", "hash_seed", "alphabet", "max_length", "first", "step");
    own("numeric", "epsilon", "lo", "hi", "buckets", "scale", "method", "longitudinal");
    own("oue", "epsilon", "domain");
    own("ss", "epsilon", "domain");
  }

  private static void own(String kind, String... fields) {
    Set<String> known = new HashSet<String>(Arrays.asList(fields));
    known.addAll(UNHASHED);
    known.addAll(COMMON);
    OWN.put(kind, known);
  }

  /** A LOLOHA task's longitudinal object holds exactly these (served filled in, §3.13). */
  static final Set<String> LOLOHA = new HashSet<String>(Arrays.asList(
      "variant", "epsilon_inf", "epsilon_1", "g", "seeds", "hash_seed"));

  private static final Pattern TASK_ID = Pattern.compile("^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$");

  /** A checked task this SDK can privatize for. */
  static final class Task {
    final String id;
    final String fingerprint;
    final long timePrecision;
    final Mechanism<?> mechanism;
    /** The ε of one report, and the permanent layer's ε∞ (NaN: not longitudinal). */
    final double epsilon;
    final double epsilonInf;
    /** The permanent configuration C the privacy ledger records (§4), null if not longitudinal. */
    final String configuration;
    /** The collector's key reports are sealed to (§10), null for a plain task. */
    final Sealing.Key seal;
    /** The task's public dimensions (1.1), null if it declares none. */
    final Dimensions dimensions;
    /** The task's JSON as served. */
    final Map<String, Object> json;

    Task(String id, String fingerprint, long timePrecision, Mechanism<?> mechanism, double epsilon,
        double epsilonInf, String configuration, Sealing.Key seal, Dimensions dimensions, Map<String, Object> json) {
      this.id = id;
      this.fingerprint = fingerprint;
      this.timePrecision = timePrecision;
      this.mechanism = mechanism;
      this.epsilon = epsilon;
      this.epsilonInf = epsilonInf;
      this.configuration = configuration;
      this.seal = seal;
      this.dimensions = dimensions;
      this.json = json;
    }
  }

  /** Return an integer field in [low, high] or throw TaskError: a JSON integer, never `4.0` (§1). */
  static int integer(Map<String, Object> task, String name, long low, long high) {
    return Fields.integer(task, name, low, high);
  }

  static long longField(Map<String, Object> task, String name, long low, long high) {
    return Fields.longField(task, name, low, high);
  }

  /** Return a finite number field or throw TaskError. */
  static double number(Map<String, Object> task, String name) {
    return Fields.number(task, name);
  }

  private static List<String> domainOf(Map<String, Object> task) {
    Object domain = task.get("domain");
    if (!(domain instanceof List)) throw new Mechanism.TaskError("domain must be a list of strings");
    List<String> out = new ArrayList<String>();
    for (Object v : (List<?>) domain) {
      if (!(v instanceof String)) throw new Mechanism.TaskError("domain must be a list of strings");
      out.add((String) v);
    }
    return out;
  }

  /** Return the mechanism a task's fields define at ε (the permanent layer's for a longitudinal task). */
  static Mechanism<?> kind(Map<String, Object> task, String kind, double epsilon) {
    if ("rr".equals(kind)) {
      if (task.containsKey("alpha") || task.containsKey("beta")) {
        return Simple.Rr.fromAlphaBeta(number(task, "alpha"), number(task, "beta"));
      }
      return Simple.Rr.fromEpsilon(epsilon);
    }
    if ("grr".equals(kind)) return new Simple.Grr(epsilon, domainOf(task));
    if ("oue".equals(kind)) return new Sets.Oue(epsilon, domainOf(task));
    if ("ss".equals(kind)) return new Sets.Ss(epsilon, domainOf(task));
    if ("hh".equals(kind)) return new HeavyHitters(task, epsilon);
    if ("cms".equals(kind) || "hcms".equals(kind) || "olh".equals(kind)) {
      int k = integer(task, "k", 1, 1 << 20);
      long seed = longField(task, "hash_seed", 0, 0xffffffffL);
      if ("olh".equals(kind)) return Sketches.Olh.fromEpsilon(epsilon, k, seed);
      int m = integer(task, "m", 2, 1 << 16);
      return "cms".equals(kind) ? Sketches.Cms.fromEpsilon(epsilon, k, m, seed)
          : Sketches.Hcms.fromEpsilon(epsilon, k, m, seed);
    }
    if ("numeric".equals(kind)) {
      double lo = number(task, "lo");
      double hi = number(task, "hi");
      int d = integer(task, "buckets", 2, 1024);
      Object method = task.get("method");
      Object scale = task.get("scale");
      if (!"linear".equals(scale) && !"log".equals(scale)) throw new Mechanism.TaskError("scale must be linear or log");
      if ("1bit".equals(method)) {
        if (!"linear".equals(scale)) throw new Mechanism.TaskError("1bit needs the linear scale");
        return new Numeric.OneBit(epsilon, lo, hi, d);
      }
      if (!"sw".equals(method)) throw new Mechanism.TaskError("numeric method must be sw or 1bit");
      return new Numeric.SquareWave(epsilon, lo, hi, d, "log".equals(scale));
    }
    throw new Mechanism.TaskError("a mechanism this SDK does not know");
  }

  /** Return the canonical form a fingerprint hashes: the task without its unhashed fields. */
  static String canonical(Map<String, Object> task) {
    Map<String, Object> hashed = new LinkedHashMap<String, Object>();
    for (Map.Entry<String, Object> e : task.entrySet()) {
      if (!UNHASHED.contains(e.getKey())) hashed.put(e.getKey(), e.getValue());
    }
    return Json.canonical(hashed);
  }

  /** Return the fingerprint of a task's JSON: SHA-256 of its canonical form, 32 hex digits. */
  static String fingerprintOf(Map<String, Object> task) {
    return Bytes.hex(Bytes.sha256(Bytes.utf8(canonical(task)))).substring(0, 32);
  }


  /** Return the mechanism a task's fields define (T_i of an epsilon_1 task as published). */
  @SuppressWarnings({"unchecked", "rawtypes"})
  static Mechanism<?> build(Map<String, Object> task) {
    String kindName = String.valueOf(task.get("mechanism"));
    Object spec = task.get("longitudinal");
    Mechanism<?> mechanism;
    if (spec == null) {
      double epsilon = task.containsKey("alpha") ? Double.NaN : number(task, "epsilon");
      mechanism = kind(task, kindName, epsilon);
    } else {
      if (!(spec instanceof Map) || task.containsKey("epsilon")) {
        throw new Mechanism.TaskError("longitudinal must be an object, and such a task takes no epsilon");
      }
      Map<String, Object> longitudinal = (Map<String, Object>) spec;
      // LOLOHA (§3.13, 1.1): grr's values hashed to g buckets; the permanent layer is GRR over them.
      boolean loloha = longitudinal.containsKey("variant");
      if (loloha && (!"grr".equals(kindName) || !LOLOHA.equals(longitudinal.keySet())
          || !"loloha".equals(longitudinal.get("variant")))) {
        throw new Mechanism.TaskError("a longitudinal variant is grr's loloha, with every field of §3.13");
      }
      double epsilonInf = number(longitudinal, "epsilon_inf");
      int g = !loloha ? 0 : "optimal".equals(longitudinal.get("g"))
          ? Loloha.optimalG(epsilonInf, number(longitudinal, "epsilon_1")) : integer(longitudinal, "g", 2, Loloha.MAX_G);
      Mechanism<?> layer = loloha ? Loloha.bucketGrr(epsilonInf, g) : kind(task, kindName, epsilonInf);
      if (!(layer instanceof Mechanism.Permanent) || layer instanceof Sketches.Olh || layer instanceof Numeric.SquareWave) {
        throw new Mechanism.TaskError("this mechanism takes no longitudinal option");
      }
      Mechanism.Permanent<?> permanent = (Mechanism.Permanent<?>) layer;
      long threshold;
      if (longitudinal.containsKey("flip")) {
        threshold = permanent.irrThreshold(number(longitudinal, "flip"));
      } else {
        double epsilon1 = number(longitudinal, "epsilon_1");
        // ε₁ ends in an ln: T_i is published, not searched for again (§3.9); a device checks it
        // lies in [1, limit) and that its own ε₁ for it is at most epsilon_1 (+ 10⁻⁹, §4's slack).
        Object derived = task.get("derived");
        Map<String, Object> published = derived instanceof Map ? (Map<String, Object>) derived : null;
        threshold = published == null ? -1 : longField(published, "T_i", 1, permanent.irrLimit() - 1);
        if (threshold > 0 && !(permanent.composedEpsilon(threshold) <= epsilon1 + 1e-9)) {
          throw new Mechanism.TaskError("derived_mismatch", "the published T_i gives a report an ε₁ above epsilon_1");
        }
      }
      Map<String, Object> fields = new LinkedHashMap<String, Object>();
      for (Map.Entry<String, Object> e : task.entrySet()) {
        if (!COMMON.contains(e.getKey()) && !UNHASHED.contains(e.getKey())) fields.put(e.getKey(), e.getValue());
      }
      Longitudinal<?> layered = new Longitudinal(permanent, threshold, Json.canonical(fields), null);
      mechanism = !loloha ? layered : new Loloha(new Simple.Domain(domainOf(task)), g,
          integer(longitudinal, "seeds", 1, 65536), longField(longitudinal, "hash_seed", 0, 0xffffffffL),
          (Longitudinal<Integer>) layered, -1);
    }
    return mechanism;
  }

  /** Return the task a served JSON object defines, or throw TaskError saying why not. */
  @SuppressWarnings({"unchecked", "rawtypes"})
  static Task parse(Object json) {
    if (!(json instanceof Map)) throw new Mechanism.TaskError("a task must be a JSON object");
    Map<String, Object> task = (Map<String, Object>) json;
    Object id = task.get("task_id");
    if (!(id instanceof String) || !TASK_ID.matcher((String) id).matches()) {
      throw new Mechanism.TaskError("task_id is not a valid task id");
    }
    Object protocol = task.get("protocol");
    if (!PROTOCOLS.contains(protocol)) {
      throw new Mechanism.TaskError("unsupported_protocol", "task " + id + " is for protocol "
          + protocol + "; this SDK implements 1.0 and 1.1");
    }
    Set<String> known = OWN.get(String.valueOf(task.get("mechanism")));
    if (known == null) throw new Mechanism.TaskError("task " + id + " has a mechanism this SDK does not know");
    for (String field : task.keySet()) {
      if (!known.contains(field)) {
        throw new Mechanism.TaskError("task " + id + " has a field its mechanism does not take: " + field);
      }
    }
    Object sealed = task.containsKey("sealed") ? task.get("sealed") : Boolean.FALSE;
    if (!(sealed instanceof Boolean)) throw new Mechanism.TaskError("sealed must be true or false");
    if (!(Boolean) sealed && task.get("seal") != null) throw new Mechanism.TaskError("only a sealed task carries a seal key");
    Sealing.Key seal = (Boolean) sealed ? Sealing.Key.of(task.get("seal"), (String) id) : null;
    String kindName = String.valueOf(task.get("mechanism"));
    Mechanism<?> mechanism = build(task);
    Map<String, Object> d = new LinkedHashMap<String, Object>();
    d.put("d", task.get("derived"));
    Map<String, Object> ours = new LinkedHashMap<String, Object>();
    ours.put("d", mechanism.derived());
    if (!task.containsKey("derived") || !Json.canonical(d).equals(Json.canonical(ours))) {
      throw new Mechanism.TaskError("derived_mismatch", "task " + id
          + " publishes derived integers other than its parameters give here: refused");
    }
    String fingerprint = fingerprintOf(task);
    if (!fingerprint.equals(task.get("fingerprint"))) {
      throw new Mechanism.TaskError("fingerprint_mismatch", "task " + id + ": its fingerprint cannot be reproduced");
    }
    long timePrecision = longField(task, "time_precision", 1, 366L * 86400);
    long minBatch = longField(task, "min_batch_size", 1, 1000000000L);
    // 1.1 exactly when the task declares dimensions (§11), is LOLOHA (§3.13) or a longitudinal 1bit (§3.9).
    Dimensions dimensions = Dimensions.of(task.get("dimensions"));
    boolean lifetime = mechanism instanceof Loloha
        || mechanism instanceof Longitudinal && ((Longitudinal<?>) mechanism).permanent instanceof Numeric.OneBit;
    if ((dimensions != null || lifetime) != "1.1".equals(protocol) || (dimensions != null) != task.containsKey("min_slice_size")) {
      throw new Mechanism.TaskError("task " + id + ": protocol 1.1 goes with dimensions (and min_slice_size), "
          + "LOLOHA or a longitudinal 1bit; 1.0 without");
    }
    if (dimensions != null) longField(task, "min_slice_size", minBatch, 1000000000L);
    String configuration = null;
    double epsilonInf = Double.NaN;
    Longitudinal<?> l = mechanism instanceof Loloha ? ((Loloha) mechanism).buckets
        : mechanism instanceof Longitudinal ? (Longitudinal<?>) mechanism : null;
    if (l != null) {
      configuration = Bytes.hex(Bytes.sha256(Bytes.utf8(kindName + "\0" + l.identity))).substring(0, 32);
      epsilonInf = l.epsilonInf();
    }
    return new Task((String) id, fingerprint, timePrecision, mechanism, mechanism.epsilon(), epsilonInf,
        configuration, seal, dimensions, task);
  }
}
