package dev.ldptelemetry;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.URL;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;

/**
 * How the SDK speaks HTTP: one request, one answer. The default is HttpURLConnection (on
 * every JVM and Android); an app may pass its own (e.g. OkHttp) through
 * {@link Client.Builder#transport(Transport)}. Called from the uploader's thread only.
 */
public interface Transport {
  /** An HTTP answer: status, headers (names in lower case) and body. */
  final class Response {
    public final int status;
    public final Map<String, String> headers;
    public final byte[] body;

    public Response(int status, Map<String, String> headers, byte[] body) {
      this.status = status;
      this.headers = headers;
      this.body = body;
    }

    /** Return a header's value (name in any case), or null. */
    public String header(String name) {
      return headers.get(name.toLowerCase(Locale.ROOT));
    }
  }

  /** Send one request (body null: GET) and return the answer; throw IOException on a network error. */
  Response send(String method, String url, Map<String, String> headers, byte[] body, int timeoutMillis)
      throws IOException;

  /** HttpURLConnection, with the timeout on connecting and on every read. */
  final class Default implements Transport {
    @Override
    public Response send(String method, String url, Map<String, String> headers, byte[] body, int timeoutMillis)
        throws IOException {
      HttpURLConnection connection = (HttpURLConnection) new URL(url).openConnection();
      try {
        connection.setRequestMethod(method);
        connection.setConnectTimeout(timeoutMillis);
        connection.setReadTimeout(timeoutMillis);
        connection.setUseCaches(false);
        connection.setInstanceFollowRedirects(false);
        for (Map.Entry<String, String> h : headers.entrySet()) connection.setRequestProperty(h.getKey(), h.getValue());
        if (body != null) {
          connection.setDoOutput(true);
          connection.setFixedLengthStreamingMode(body.length);
          OutputStream out = connection.getOutputStream();
          try {
            out.write(body);
          } finally {
            out.close();
          }
        }
        int status = connection.getResponseCode();
        Map<String, String> answer = new HashMap<String, String>();
        for (Map.Entry<String, java.util.List<String>> h : connection.getHeaderFields().entrySet()) {
          if (h.getKey() != null && !h.getValue().isEmpty()) {
            answer.put(h.getKey().toLowerCase(Locale.ROOT), h.getValue().get(0));
          }
        }
        InputStream in = status >= 400 ? connection.getErrorStream() : connection.getInputStream();
        return new Response(status, answer, in == null ? new byte[0] : readAll(in));
      } finally {
        connection.disconnect();
      }
    }

    private static byte[] readAll(InputStream in) throws IOException {
      try {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] buffer = new byte[8192];
        for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
          out.write(buffer, 0, n);
          if (out.size() > (8 << 20)) throw new IOException("answer too large");
        }
        return out.toByteArray();
      } finally {
        in.close();
      }
    }
  }
}
