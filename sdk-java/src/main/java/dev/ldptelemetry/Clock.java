package dev.ldptelemetry;

/** Unix time in milliseconds (tests give their own). */
public interface Clock {
  long millis();

  Clock SYSTEM = new Clock() {
    @Override
    public long millis() {
      return System.currentTimeMillis();
    }
  };
}
