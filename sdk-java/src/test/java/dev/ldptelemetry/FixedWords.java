package dev.ldptelemetry;

import dev.ldptelemetry.internal.mechanisms.*;
import java.util.List;

/** Words given in advance, taken in order (the conformance vectors); below() takes one at a time. */
final class FixedWords extends Words {
  private final List<?> given;
  int used;

  FixedWords(List<?> given) {
    this.given = given;
  }

  @Override
  public long word() {
    if (used >= given.size()) throw new IllegalStateException("the fixed words ran out");
    return ((Number) given.get(used++)).longValue();
  }
}
