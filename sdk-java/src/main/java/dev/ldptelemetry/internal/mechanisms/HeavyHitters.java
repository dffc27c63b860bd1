package dev.ldptelemetry.internal.mechanisms;

import dev.ldptelemetry.internal.wire.*;
import java.io.ByteArrayOutputStream;
import java.math.BigInteger;
import java.text.Normalizer;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * hh: heavy hitters by prefix levels over CMS (PROTOCOL §3.7). A device's level is fixed per
 * task (its device key mod G); it reports its value's prefix of that level's length, with
 * the byte 0xFF appended when the value is shorter, as one CMS report.
 */
public final class HeavyHitters extends Mechanism<HeavyHitters.Level> {
  /** An hh report: the level and its CMS report. */
  public static final class Level {
    public final int level;
    public final Sketches.Bits sketch;

    public Level(int level, Sketches.Bits sketch) {
      this.level = level;
      this.sketch = sketch;
    }
  }

  public final List<Long> lengths = new ArrayList<Long>();
  public final List<Sketches.Cms> sketches = new ArrayList<Sketches.Cms>();
  private final Set<Integer> symbols; // null: the bytes alphabet
  private final int level; // -1: not bound to a device

  public HeavyHitters(Map<String, Object> task, double epsilon) {
    Object alphabet = task.get("alphabet");
    int maxLength = Fields.integer(task, "max_length", 1, 255);
    int first = Fields.integer(task, "first", 1, maxLength);
    int step = Fields.integer(task, "step", 1, maxLength);
    for (long length = first; length < maxLength; length += step) lengths.add(length);
    lengths.add((long) maxLength);
    if ("bytes".equals(alphabet)) {
      symbols = null;
    } else if (alphabet instanceof String) {
      symbols = new HashSet<Integer>();
      String s = (String) alphabet;
      for (int i = 0; i < s.length(); i += Character.charCount(s.codePointAt(i))) {
        symbols.add(s.codePointAt(i));
      }
    } else {
      throw new TaskError("alphabet must be 'bytes' or a string of symbols");
    }
    int k = Fields.integer(task, "k", 1, 1 << 20);
    int m = Fields.integer(task, "m", 2, 1 << 16);
    long seed = Fields.longField(task, "hash_seed", 0, 0xffffffffL);
    for (int g = 0; g < lengths.size(); g++) {
      long levelSeed = g == 0 ? seed : Hashing.splitmix64(seed, g + 1) & 0xffffffffL;
      sketches.add(Sketches.Cms.fromEpsilon(epsilon, k, m, levelSeed));
    }
    level = -1;
  }

  private HeavyHitters(HeavyHitters task, int level) {
    lengths.addAll(task.lengths);
    sketches.addAll(task.sketches);
    symbols = task.symbols;
    this.level = level;
  }

  /** Return the value's symbols (each as UTF-8 bytes) after NFC normalization. */
  public List<byte[]> units(Object value) {
    String text = Sketches.text(value);
    String normal = Normalizer.normalize(text, Normalizer.Form.NFC);
    List<byte[]> units = new ArrayList<byte[]>();
    if (symbols == null) {
      for (byte b : Bytes.utf8(normal)) units.add(new byte[] {b});
    } else {
      for (int i = 0; i < normal.length(); ) {
        int cp = normal.codePointAt(i);
        if (!symbols.contains(cp)) throw new ValueError("the value has symbols outside the alphabet");
        int next = i + Character.charCount(cp);
        units.add(Bytes.utf8(normal.substring(i, next)));
        i = next;
      }
    }
    long maxLength = lengths.get(lengths.size() - 1);
    if (units.isEmpty() || units.size() > maxLength) {
      throw new ValueError("the value must have 1 to " + maxLength + " symbols");
    }
    return units;
  }

  @Override
  public byte[] canonical(Object value) {
    return Bytes.concat(units(value).toArray(new byte[0][]));
  }

  /** Return the prefix of a level (+ 0xFF when shorter): the item (PROTOCOL §3.7). */
  public byte[] item(List<byte[]> units, int level) {
    long length = lengths.get(level);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (int i = 0; i < units.size() && i < length; i++) out.write(units.get(i), 0, units.get(i).length);
    if (units.size() < length) out.write(0xff);
    return out.toByteArray();
  }

  /** Return what MurmurHash3 reads: the item read as Latin-1, encoded as UTF-8. */
  public static byte[] hashed(byte[] item) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (byte b : item) {
      int v = b & 255;
      if (v < 0x80) {
        out.write(v);
      } else {
        out.write(0xc0 | (v >> 6));
        out.write(0x80 | (v & 0x3f));
      }
    }
    return out.toByteArray();
  }

  @Override
  public Level privatize(Object value, Words rng) {
    List<byte[]> units = units(value);
    int at = level >= 0 ? level : (int) rng.below(lengths.size());
    return new Level(at, sketches.get(at).privatizeBytes(hashed(item(units, at)), rng));
  }

  @Override
  public Map<String, Object> encode(Level report) {
    return map("level", report.level, "row", report.sketch.row, "bits", Bytes.base64url(report.sketch.bits));
  }

  @Override
  public Map<String, Object> derived() {
    List<Object> seeds = new ArrayList<Object>();
    for (Sketches.Cms s : sketches) seeds.add(s.seed);
    return map("T", sketches.get(0).flip, "levels", new ArrayList<Object>(lengths), "level_seeds", seeds);
  }

  @Override
  public double epsilon() {
    return sketches.get(0).composedEpsilon(0);
  }

  @Override
  public HeavyHitters forDevice(byte[] deviceKey) {
    int at = new BigInteger(1, deviceKey).mod(BigInteger.valueOf(lengths.size())).intValue();
    return new HeavyHitters(this, at);
  }
}
