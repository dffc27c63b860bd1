package dev.ldptelemetry.internal.wire;

import java.math.BigDecimal;
import java.math.MathContext;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A small JSON reader and writer, and RFC 8785 (JCS) canonical JSON (PROTOCOL §1.2).
 *
 * <p>Values are {@code null}, {@link Boolean}, {@link String}, {@link Long} (an integer
 * literal that fits), {@link Double} (every other number), {@code List<Object>} and
 * {@code Map<String, Object>} (insertion ordered; a duplicated key keeps the last value, as
 * JSON.parse does). The SDK has no runtime dependency, so this is its own.
 */
public final class Json {
  private Json() {}

  /** Thrown for text that is not one JSON value. */
  public static final class ParseError extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public ParseError(String message) {
      super(message);
    }
  }

  /** Return the value a JSON text holds, or throw ParseError. */
  public static Object parse(String text) {
    Reader reader = new Reader(text);
    reader.space();
    Object value = reader.value(0);
    reader.space();
    if (reader.at != text.length()) throw new ParseError("text after the JSON value");
    return value;
  }

  /** Return the compact JSON of a value, maps in their own order (JSON.stringify's output). */
  public static String write(Object value) {
    StringBuilder out = new StringBuilder();
    write(value, out, false);
    return out.toString();
  }

  /** Return the RFC 8785 canonical JSON of a value (keys sorted by UTF-16 code units). */
  public static String canonical(Object value) {
    StringBuilder out = new StringBuilder();
    write(value, out, true);
    return out.toString();
  }

  @SuppressWarnings("unchecked")
  private static void write(Object value, StringBuilder out, boolean sorted) {
    if (value == null) {
      out.append("null");
    } else if (value instanceof Boolean) {
      out.append(((Boolean) value).booleanValue() ? "true" : "false");
    } else if (value instanceof String) {
      string((String) value, out);
    } else if (value instanceof Long || value instanceof Integer) {
      out.append(((Number) value).longValue());
    } else if (value instanceof Double) {
      out.append(number((Double) value));
    } else if (value instanceof List) {
      out.append('[');
      boolean first = true;
      for (Object item : (List<Object>) value) {
        if (!first) out.append(',');
        first = false;
        write(item, out, sorted);
      }
      out.append(']');
    } else if (value instanceof Map) {
      Map<String, Object> map = (Map<String, Object>) value;
      List<String> keys = new ArrayList<String>(map.keySet());
      // String.compareTo compares UTF-16 code units, which is what RFC 8785 sorts by.
      if (sorted) Collections.sort(keys);
      out.append('{');
      boolean first = true;
      for (String key : keys) {
        if (!first) out.append(',');
        first = false;
        string(key, out);
        out.append(':');
        write(map.get(key), out, sorted);
      }
      out.append('}');
    } else if (value instanceof int[]) {
      List<Object> list = new ArrayList<Object>();
      for (int v : (int[]) value) list.add(Long.valueOf(v));
      write(list, out, sorted);
    } else {
      throw new IllegalArgumentException("not a JSON value: " + value.getClass().getName());
    }
  }

  private static final char[] HEX = "0123456789abcdef".toCharArray();

  /** Write a string as JSON.stringify and RFC 8785 do: only quote, backslash, controls escaped. */
  public static void string(String s, StringBuilder out) {
    out.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"': out.append("\\\""); break;
        case '\\': out.append("\\\\"); break;
        case '\b': out.append("\\b"); break;
        case '\t': out.append("\\t"); break;
        case '\n': out.append("\\n"); break;
        case '\f': out.append("\\f"); break;
        case '\r': out.append("\\r"); break;
        default:
          if (c < 0x20) {
            out.append("\\u00").append(HEX[c >> 4]).append(HEX[c & 15]);
          } else {
            out.append(c);
          }
      }
    }
    out.append('"');
  }

  /**
   * Return ECMAScript's Number.prototype.toString of a finite double: the shortest decimal
   * that reads back as the same double (the nearest one of that length), in ES's layout.
   * Java's Double.toString is not always the shortest before JDK 19, so the digits come from
   * BigDecimal rounding at increasing precision.
   */
  public static String number(double x) {
    if (Double.isNaN(x) || Double.isInfinite(x)) throw new IllegalArgumentException("not finite");
    if (x == 0) return "0";
    if (x < 0) return "-" + number(-x);
    BigDecimal exact = new BigDecimal(x);
    BigDecimal shortest = exact;
    for (int precision = 1; precision <= 17; precision++) {
      BigDecimal rounded = exact.round(new MathContext(precision, RoundingMode.HALF_EVEN));
      if (rounded.doubleValue() == x) {
        shortest = rounded;
        break;
      }
    }
    String digits = shortest.unscaledValue().toString();
    int trailing = digits.length();
    while (trailing > 1 && digits.charAt(trailing - 1) == '0') trailing--;
    int k = trailing;
    // n: the position of the decimal point relative to the digits (ES's n).
    int n = digits.length() - shortest.scale();
    digits = digits.substring(0, k);
    StringBuilder out = new StringBuilder();
    if (k <= n && n <= 21) {
      out.append(digits);
      for (int i = 0; i < n - k; i++) out.append('0');
    } else if (0 < n && n <= 21) {
      out.append(digits, 0, n).append('.').append(digits, n, k);
    } else if (-6 < n && n <= 0) {
      out.append("0.");
      for (int i = 0; i < -n; i++) out.append('0');
      out.append(digits);
    } else {
      out.append(digits.charAt(0));
      if (k > 1) out.append('.').append(digits, 1, k);
      int e = n - 1;
      out.append('e').append(e >= 0 ? "+" : "-").append(Math.abs(e));
    }
    return out.toString();
  }

  /** A recursive-descent reader over one text. */
  private static final class Reader {
    private static final int MAX_DEPTH = 64;
    public final String text;
    public int at;

    public Reader(String text) {
      this.text = text;
    }

    public void space() {
      while (at < text.length()) {
        char c = text.charAt(at);
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return;
        at++;
      }
    }

    private char peek() {
      if (at >= text.length()) throw new ParseError("unexpected end of JSON");
      return text.charAt(at);
    }

    private void expect(String word) {
      if (!text.startsWith(word, at)) throw new ParseError("invalid JSON at " + at);
      at += word.length();
    }

    public Object value(int depth) {
      if (depth > MAX_DEPTH) throw new ParseError("JSON nested too deeply");
      char c = peek();
      switch (c) {
        case '{': return object(depth);
        case '[': return array(depth);
        case '"': return string();
        case 't': expect("true"); return Boolean.TRUE;
        case 'f': expect("false"); return Boolean.FALSE;
        case 'n': expect("null"); return null;
        default: return number();
      }
    }

    private Map<String, Object> object(int depth) {
      Map<String, Object> map = new LinkedHashMap<String, Object>();
      at++;
      space();
      if (peek() == '}') {
        at++;
        return map;
      }
      for (;;) {
        space();
        if (peek() != '"') throw new ParseError("expected a key at " + at);
        String key = string();
        space();
        expect(":");
        space();
        Object value = value(depth + 1);
        map.remove(key); // the last occurrence wins, in its own place
        map.put(key, value);
        space();
        char c = peek();
        at++;
        if (c == '}') return map;
        if (c != ',') throw new ParseError("expected , or } at " + (at - 1));
      }
    }

    private List<Object> array(int depth) {
      List<Object> list = new ArrayList<Object>();
      at++;
      space();
      if (peek() == ']') {
        at++;
        return list;
      }
      for (;;) {
        space();
        list.add(value(depth + 1));
        space();
        char c = peek();
        at++;
        if (c == ']') return list;
        if (c != ',') throw new ParseError("expected , or ] at " + (at - 1));
      }
    }

    private String string() {
      at++;
      StringBuilder out = new StringBuilder();
      for (;;) {
        char c = peek();
        at++;
        if (c == '"') return out.toString();
        if (c < 0x20) throw new ParseError("control character in a string");
        if (c != '\\') {
          out.append(c);
          continue;
        }
        char e = peek();
        at++;
        switch (e) {
          case '"': out.append('"'); break;
          case '\\': out.append('\\'); break;
          case '/': out.append('/'); break;
          case 'b': out.append('\b'); break;
          case 'f': out.append('\f'); break;
          case 'n': out.append('\n'); break;
          case 'r': out.append('\r'); break;
          case 't': out.append('\t'); break;
          case 'u':
            if (at + 4 > text.length()) throw new ParseError("short \\u escape");
            try {
              out.append((char) Integer.parseInt(text.substring(at, at + 4), 16));
            } catch (NumberFormatException error) {
              throw new ParseError("bad \\u escape");
            }
            at += 4;
            break;
          default: throw new ParseError("bad escape");
        }
      }
    }

    private Object number() {
      int start = at;
      if (peek() == '-') at++;
      int digits = at;
      while (at < text.length() && Character.isDigit(text.charAt(at))) at++;
      if (at == digits || (text.charAt(digits) == '0' && at - digits > 1)) {
        throw new ParseError("invalid number at " + start);
      }
      boolean integer = true;
      if (at < text.length() && text.charAt(at) == '.') {
        integer = false;
        at++;
        int fraction = at;
        while (at < text.length() && Character.isDigit(text.charAt(at))) at++;
        if (at == fraction) throw new ParseError("invalid number at " + start);
      }
      if (at < text.length() && (text.charAt(at) == 'e' || text.charAt(at) == 'E')) {
        integer = false;
        at++;
        if (at < text.length() && (text.charAt(at) == '+' || text.charAt(at) == '-')) at++;
        int exponent = at;
        while (at < text.length() && Character.isDigit(text.charAt(at))) at++;
        if (at == exponent) throw new ParseError("invalid number at " + start);
      }
      String literal = text.substring(start, at);
      if (integer && at - digits <= 18) return Long.valueOf(Long.parseLong(literal));
      double value = Double.parseDouble(literal);
      if (Double.isInfinite(value)) throw new ParseError("number out of range");
      return Double.valueOf(value);
    }
  }
}
