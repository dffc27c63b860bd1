package dev.ldptelemetry;

import dev.ldptelemetry.internal.mechanisms.*;
import dev.ldptelemetry.internal.wire.*;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.security.GeneralSecurityException;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** HPKE against RFC 9180 Appendix A.2.1 (this suite, base mode) and PROTOCOL §10's opening vector. */
class HpkeTest {
  private static final String SK_E = "f4ec9b33b792c372c1d2c2063507b684ef925b8c75a42dbcbf57d63ccd381600";
  private static final String PK_E = "1afa08d3dec047a643885163f1180476fa7ddb54c6a8029ea33f95796bf2ac4a";
  private static final String SK_R = "8057991eef8f1f1af18f4a9491d16a1ce333f695d4db8e38da75975c4478e0fb";
  private static final String PK_R = "4310ee97d88cc1f088a5576c77ab0cf5c3ac797f3d95139c6c84b5429c59662a";
  private static final String INFO = "4f6465206f6e2061204772656369616e2055726e";
  private static final String PT = "4265617574792069732074727574682c20747275746820626561757479";
  private static final String AAD = "436f756e742d30";
  private static final String CT = "1c5250d8034ec2b784ba2cfd69dbdb8af406cfe3ff938e131f0def8c8b60b4db21993c62ce81883d2dd1b51a28";

  private final JdkHpke hpke = JdkHpke.createOrNull();

  @Test
  void rfc9180KeyScheduleAndSharedSecret() throws GeneralSecurityException {
    assertNotNull(hpke, "JDK 17 has X25519 and ChaCha20-Poly1305");
    assertEquals(PK_E, Bytes.hex(JdkHpke.publicOf(Bytes.fromHex(SK_E))));
    assertEquals(PK_R, Bytes.hex(JdkHpke.publicOf(Bytes.fromHex(SK_R))));
    byte[] dh = JdkHpke.dh(JdkHpke.privateKey(Bytes.fromHex(SK_E)), Bytes.fromHex(PK_R));
    byte[] shared = JdkHpke.sharedSecret(dh, Bytes.fromHex(PK_E + PK_R));
    assertEquals("0bbe78490412b4bbea4812666f7916932b828bba79942424abb65244930d69a7", Bytes.hex(shared));
    byte[][] keyNonce = JdkHpke.keySchedule(shared, Bytes.fromHex(INFO));
    assertEquals("ad2744de8e17f4ebba575b3f5f5a8fa1f69c2a07f6e7500bc60ca6e3e3ec1c91", Bytes.hex(keyNonce[0]));
    assertEquals("5c4d98150661b848853b547f", Bytes.hex(keyNonce[1]));
  }

  @Test
  void rfc9180SealAndOpen() throws GeneralSecurityException {
    byte[] sealed = hpke.seal(JdkHpke.privateKey(Bytes.fromHex(SK_E)), Bytes.fromHex(PK_E), Bytes.fromHex(PK_R),
        Bytes.fromHex(INFO), Bytes.fromHex(AAD), Bytes.fromHex(PT));
    assertEquals(PK_E + CT, Bytes.hex(sealed));
    assertEquals(PT, Bytes.hex(hpke.open(Bytes.fromHex(SK_R), sealed, Bytes.fromHex(INFO), Bytes.fromHex(AAD))));
  }

  private static final String SEALED = "zqeK3bZD9eWKiPzFc4MsEJgDujebtLVGXieeS1AzVFkeru1rAz8sD3On-NKrS0dSV_pmCSNhkwnBRGCJ"
      + "kVPH5MmD5v4uIRCpdDF8-8V3Ia0TU7wpQHsrJh1qRLvZeKnM";

  private static byte[] vectorKey() {
    byte[] sk = new byte[32];
    for (int i = 0; i < 32; i++) sk[i] = (byte) i;
    return sk;
  }

  @Test
  void protocolSection10OpeningVector() throws GeneralSecurityException {
    byte[] sk = vectorKey();
    assertEquals("j0DFrbaPJWJK5bIU6nZ6bslNgp09e14a0bpvPiE4KF8", Bytes.base64url(JdkHpke.publicOf(sk)));
    String info = Sealing.info("vector-task", "0123456789abcdef0123456789abcdef", "vector-key-1",
        "AAECAwQFBgcICQoLDA0ODw", 1700006400L);
    byte[] sealed = Bytes.fromBase64url(SEALED);
    byte[] plain = hpke.open(sk, sealed, Bytes.utf8(info), new byte[0]);
    assertArrayEquals(Sealing.padded(Mechanism.map("row", 3, "bits", "gQBg")), plain);
    // Another task id, or one bit of the ciphertext changed: it does not open.
    String other = Sealing.info("vector-task2", "0123456789abcdef0123456789abcdef", "vector-key-1",
        "AAECAwQFBgcICQoLDA0ODw", 1700006400L);
    assertThrows(GeneralSecurityException.class, () -> hpke.open(sk, sealed, Bytes.utf8(other), new byte[0]));
    byte[] flipped = sealed.clone();
    flipped[40] ^= 1;
    assertThrows(GeneralSecurityException.class, () -> hpke.open(sk, flipped, Bytes.utf8(info), new byte[0]));
  }

  @Test
  void ownSealedReportOpensAndHasTheTasksLength() throws GeneralSecurityException {
    byte[] sk = vectorKey();
    Sealing.Key key = new Sealing.Key("k1", JdkHpke.publicOf(sk));
    Map<String, Object> a = Mechanism.map("row", 3, "bits", "gQBg");
    Map<String, Object> b = Mechanism.map("row", 1234567, "bits", "AAAA");
    String first = Sealing.reportText(hpke, "t", key, "AAECAwQFBgcICQoLDA0ODw", "0123456789abcdef0123456789abcdef", 60, null, a);
    String second = Sealing.reportText(hpke, "t", key, "AAECAwQFBgcICQoLDA0ODw", "0123456789abcdef0123456789abcdef", 60, null, b);
    Map<?, ?> report = (Map<?, ?>) Json.parse(first);
    assertEquals("[report_id, fingerprint, time, key_id, sealed]", report.keySet().toString());
    byte[] sealed = Bytes.fromBase64url((String) report.get("sealed"));
    assertEquals(Bytes.fromBase64url((String) ((Map<?, ?>) Json.parse(second)).get("sealed")).length, sealed.length);
    String info = Sealing.info("t", "0123456789abcdef0123456789abcdef", "k1", "AAECAwQFBgcICQoLDA0ODw", 60);
    assertEquals("{\"row\":3,\"bits\":\"gQBg\"}" + repeat(' ', 25), new String(hpke.open(sk, sealed, Bytes.utf8(info), new byte[0]), Bytes.UTF8));
  }

  @Test
  void aLowOrderKeyOrNoHpkeRefusesTheTask() {
    Sealing.Key zero = new Sealing.Key("k1", new byte[32]);
    Mechanism.TaskError low = assertThrows(Mechanism.TaskError.class, () -> Sealing.checkSealable(hpke, zero));
    assertEquals("seal_key_refused", low.reason);
    Mechanism.TaskError none = assertThrows(Mechanism.TaskError.class, () -> Sealing.checkSealable(null, zero));
    assertEquals("sealing_unavailable", none.reason);
  }

  private static String repeat(char c, int n) {
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < n; i++) out.append(c);
    return out.toString();
  }
}
