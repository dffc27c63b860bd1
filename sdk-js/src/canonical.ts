/**
 * The canonical JSON a task's fingerprint hashes (PROTOCOL §1) and a permanent response is
 * bound to (§3.9): keys sorted, no spaces, non-ASCII escaped as \uXXXX.
 *
 * Before protocol 1.0 numbers follow the reference's Python rendering: the fields in FLOATS
 * are floats printed in their shortest round-trip form the way Python's repr prints them
 * (4.0, 1e-05); every other number is an integer. With protocol 1.0 it is RFC 8785 (JCS).
 */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** The task fields that are floats in the reference's canonical form. */
const FLOATS = new Set(["epsilon", "alpha", "beta", "lo", "hi", "epsilon_inf", "epsilon_1", "flip"]);

/** Return a float as Python's repr prints it. */
export function pythonFloat(x: number): string {
  if (!Number.isFinite(x)) throw new RangeError("a task number must be finite");
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const [mantissa, exponentText] = Math.abs(x).toExponential().split("e") as [string, string];
  const digits = mantissa.replace(".", "");
  const exponent = Number(exponentText);
  const sign = x < 0 ? "-" : "";
  if (exponent < -4 || exponent >= 16) {
    const body = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    const e = Math.abs(exponent).toString().padStart(2, "0");
    return `${sign}${body}e${exponent < 0 ? "-" : "+"}${e}`;
  }
  if (exponent < 0) return `${sign}0.${"0".repeat(-exponent - 1)}${digits}`;
  const whole = digits.slice(0, exponent + 1).padEnd(exponent + 1, "0");
  return `${sign}${whole}.${digits.slice(exponent + 1) || "0"}`;
}

/** Return a string as Python's json.dumps(ensure_ascii=True) writes it. */
export function pythonString(text: string): string {
  let out = '"';
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const ch = text[i]!;
    if (ch === '"' || ch === "\\") out += "\\" + ch;
    else if (c >= 0x20 && c < 0x7f) out += ch;
    else out += ESCAPES[c] ?? "\\u" + c.toString(16).padStart(4, "0");
  }
  return out + '"';
}

const ESCAPES: Record<number, string> = { 8: "\\b", 9: "\\t", 10: "\\n", 12: "\\f", 13: "\\r" };

/** Return the pre-1.0 canonical JSON of a value (`key`: the field it is the value of). */
export function pythonCanonical(value: Json, key = ""): string {
  if (value === null) return "null";
  if (typeof value === "boolean") return String(value);
  if (typeof value === "number") {
    if (FLOATS.has(key)) return pythonFloat(value);
    if (!Number.isSafeInteger(value)) throw new RangeError(`${key} must be an integer`);
    return String(value);
  }
  if (typeof value === "string") return pythonString(value);
  if (Array.isArray(value)) return `[${value.map((v) => pythonCanonical(v, key)).join(",")}]`;
  const keys = Object.keys(value).sort(byCodeUnits);
  return `{${keys.map((k) => `${pythonString(k)}:${pythonCanonical(value[k]!, k)}`).join(",")}}`;
}

/** Return the RFC 8785 (JCS) canonical JSON of a value. */
export function jcs(value: Json): string {
  if (value === null || typeof value !== "object") {
    if (typeof value === "number" && !Number.isFinite(value)) throw new RangeError("not finite");
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map(jcs).join(",")}]`;
  const keys = Object.keys(value).sort(byCodeUnits);
  return `{${keys.map((k) => `${JSON.stringify(k)}:${jcs(value[k]!)}`).join(",")}}`;
}

function byCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
