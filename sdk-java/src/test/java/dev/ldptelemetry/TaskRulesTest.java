package dev.ldptelemetry;

import dev.ldptelemetry.internal.mechanisms.*;
import dev.ldptelemetry.internal.wire.*;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * What a device refuses in a served task (PROTOCOL §1.1, §1.3, §3.9), each case with its
 * fingerprint recomputed so that only the rule under test can refuse it.
 */
class TaskRulesTest {
  static final Map<String, Object> RR = FakeCollector.task("task_id", "yes", "mechanism", "rr", "epsilon", 2.0);

  private static Map<String, Object> changed(Map<String, Object> task, String field, Object value) {
    Map<String, Object> copy = new LinkedHashMap<String, Object>(task);
    if (value == null) copy.remove(field);
    else copy.put(field, value);
    copy.put("fingerprint", Tasks.fingerprintOf(copy));
    return copy;
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> vector(String taskId) throws IOException {
    for (Map<String, Object> item : Vectors.list("tasks")) {
      Map<String, Object> task = (Map<String, Object>) item.get("task");
      if (taskId.equals(task.get("task_id"))) return new LinkedHashMap<String, Object>(task);
    }
    throw new AssertionError(taskId);
  }

  @Test
  void anotherKindsFieldOrTheCreationAnswersUploadKeyIsRefused() {
    Tasks.parse(RR);
    assertThrows(Mechanism.TaskError.class, () -> Tasks.parse(changed(RR, "k", 4L)));
    assertThrows(Mechanism.TaskError.class, () -> Tasks.parse(changed(RR, "domain", java.util.Arrays.asList("a", "b"))));
    assertThrows(Mechanism.TaskError.class, () -> Tasks.parse(changed(RR, "upload_key", "secret")));
    assertThrows(Mechanism.TaskError.class, () -> Tasks.parse(changed(RR, "colour", "red")));
  }

  @Test
  void derivedAndProtocolAreAlwaysServed() {
    assertEquals("derived_mismatch", assertThrows(Mechanism.TaskError.class,
        () -> Tasks.parse(changed(RR, "derived", null))).reason);
    assertThrows(Mechanism.TaskError.class, () -> Tasks.parse(changed(RR, "protocol", null)));
  }

  @Test
  @SuppressWarnings("unchecked")
  void anIntegerIsAJsonIntegerNever4Point0() {
    assertThrows(Mechanism.TaskError.class, () -> Tasks.parse(changed(RR, "time_precision", 86400.0)));
    assertThrows(Mechanism.TaskError.class, () -> Tasks.parse(changed(RR, "min_batch_size", 1.0)));
    // Parsed from text too: "4.0" is a Double, "4" a Long.
    String text = Json.write(RR).replace("\"min_batch_size\":1", "\"min_batch_size\":1.0");
    assertThrows(Mechanism.TaskError.class, () -> Tasks.parse(changed((Map<String, Object>) Json.parse(text), "x", null)));
  }

  @Test
  @SuppressWarnings("unchecked")
  void aPublishedTiMustMeetEpsilon1() throws IOException {
    Map<String, Object> task = vector("grr-longitudinal");
    Tasks.Task honest = Tasks.parse(task);
    assertEquals(1.0, honest.epsilon, 1e-8);
    // A smaller T_i flips less: one report would spend more than epsilon_1. Refused.
    Map<String, Object> derived = new LinkedHashMap<String, Object>((Map<String, Object>) task.get("derived"));
    derived.put("T_i", ((Long) derived.get("T_i")) - 1000);
    Map<String, Object> stingy = changed(task, "derived", derived);
    assertEquals("derived_mismatch", assertThrows(Mechanism.TaskError.class, () -> Tasks.parse(stingy)).reason);
    // A larger one (more noise, ε₁ below epsilon_1) is accepted: the device charges its own ε₁ (§4).
    derived.put("T_i", ((Long) ((Map<String, Object>) task.get("derived")).get("T_i")) + 1000);
    Tasks.Task generous = Tasks.parse(changed(task, "derived", derived));
    assertEquals(true, generous.epsilon < honest.epsilon);
  }
}
