package dev.ldptelemetry;

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
    File[] files = CLASSES.listFiles((dir, name) -> name.endsWith(".class"));
    assertTrue(files != null && files.length > 20);
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
    for (File f : SOURCES.listFiles()) {
      String text = new String(Files.readAllBytes(f.toPath()), Bytes.UTF8);
      for (String api : banned) {
        if (text.contains(api)) found.add(f.getName() + ": " + api);
      }
    }
    assertEquals(new ArrayList<String>(), found);
  }

  @Test
  void everySourceFileIsShort() throws IOException {
    for (File f : SOURCES.listFiles()) {
      assertTrue(Files.readAllLines(f.toPath()).size() <= 400, f.getName());
    }
  }
}
