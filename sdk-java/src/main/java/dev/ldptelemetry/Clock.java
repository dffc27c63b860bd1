package dev.ldptelemetry;

import dev.ldptelemetry.internal.mechanisms.*;
import dev.ldptelemetry.internal.wire.*;
import dev.ldptelemetry.internal.device.*;

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
