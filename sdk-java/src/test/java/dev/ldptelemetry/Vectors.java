package dev.ldptelemetry;

import dev.ldptelemetry.internal.wire.*;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.List;
import java.util.Map;

/** protocol/vectors.json, read with the SDK's own JSON reader (which it thereby tests too). */
final class Vectors {
  private Vectors() {}

  private static Map<String, Object> all;

  @SuppressWarnings("unchecked")
  static synchronized Map<String, Object> all() throws IOException {
    if (all == null) {
      // -Dldp.vectors=PATH reads another copy (a branch's), else the repository's.
      String path = System.getProperty("ldp.vectors", "../protocol/vectors.json");
      byte[] raw = Files.readAllBytes(Paths.get(path));
      all = (Map<String, Object>) Json.parse(new String(raw, Bytes.UTF8));
    }
    return all;
  }

  @SuppressWarnings("unchecked")
  static List<Map<String, Object>> list(String name) throws IOException {
    return (List<Map<String, Object>>) all().get(name);
  }

  @SuppressWarnings("unchecked")
  static Map<String, Object> map(Object value) {
    return (Map<String, Object>) value;
  }

  @SuppressWarnings("unchecked")
  static List<Object> items(Object value) {
    return (List<Object>) value;
  }

  static long unsignedHex(Object value) {
    return Long.parseUnsignedLong((String) value, 16);
  }
}
