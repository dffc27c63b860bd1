package dev.ldptelemetry;

import dev.ldptelemetry.internal.wire.*;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.DataInputStream;
import java.io.File;
import java.io.FileInputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/** What the jar promises: Java 8 class files, and no API a plain Android API 21 lacks. */
class BuildTest {
  private static final File CLASSES = new File("target/classes/dev/ldptelemetry");
  private static final File SOURCES = new File("src/main/java/dev/ldptelemetry");

  @Test
  void everyClassFileIsJava8() throws IOException {
    List<File> files = under(CLASSES, ".class");
    assertTrue(files.size() > 20);
    for (File f : files) {
      try (DataInputStream in = new DataInputStream(new FileInputStream(f))) {
        assertEquals(0xCAFEBABE, in.readInt());
        in.readUnsignedShort();
        assertEquals(52, in.readUnsignedShort(), f.getName());
      }
    }
  }

  /**
   * APIs added to Android after API 21 (and not desugared by default): java.util.Base64,
   * java.nio.file, java.time, Integer/Long unsigned helpers, Map defaults, streams. The
   * compiler's --release 8 cannot see these; this scan does. X25519 and ChaCha20-Poly1305 are
   * looked up by name at run time (a runtime without them refuses sealed tasks).
   */
  @Test
  void noApiAndroid21Lacks() throws IOException {
    List<String> banned = Arrays.asList("java.util.Base64", "java.nio.file", "java.time", "toUnsignedLong",
        "compareUnsigned", "divideUnsigned", "remainderUnsigned", "parseUnsignedLong", "getOrDefault",
        "putIfAbsent", "computeIfAbsent", ".stream()", "String.join", "Math.floorDiv", "Math.floorMod",
        "java.util.function", "Objects.requireNonNullElse", "StandardCharsets");
    List<String> found = new ArrayList<String>();
    for (File f : under(SOURCES, ".java")) {
      String text = new String(Files.readAllBytes(f.toPath()), Bytes.UTF8);
      for (String api : banned) {
        if (text.contains(api)) found.add(f.getName() + ": " + api);
      }
    }
    assertEquals(new ArrayList<String>(), found);
  }

  @Test
  void everySourceFileIsShort() throws IOException {
    for (File f : under(SOURCES, ".java")) {
      assertTrue(Files.readAllLines(f.toPath()).size() <= 400, f.getName());
    }
  }

  /** The package and its sub-packages by concern: at most 15 source files a folder (as the Python side). */
  @Test
  void noFolderHoldsMoreThan15Sources() {
    List<File> folders = new ArrayList<File>();
    folders.add(SOURCES);
    for (int i = 0; i < folders.size(); i++) {
      int sources = 0;
      for (File f : folders.get(i).listFiles()) {
        if (f.isDirectory()) folders.add(f);
        else if (f.getName().endsWith(".java")) sources++;
      }
      assertTrue(sources <= 15, folders.get(i) + ": " + sources);
    }
    assertTrue(folders.size() >= 4);
  }

  /** Return every file under a folder (its sub-folders too) whose name ends with the suffix. */
  private static List<File> under(File folder, String suffix) {
    List<File> out = new ArrayList<File>();
    File[] entries = folder.listFiles();
    if (entries == null) return out;
    for (File f : entries) {
      if (f.isDirectory()) out.addAll(under(f, suffix));
      else if (f.getName().endsWith(suffix)) out.add(f);
    }
    return out;
  }
}
