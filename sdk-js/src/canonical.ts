/**
 * The canonical JSON a task's fingerprint hashes (PROTOCOL §1.2) and a permanent response
 * is bound to (§3.9): RFC 8785 (JCS). Keys sorted by UTF-16 code units, no whitespace,
 * numbers and strings as ECMAScript's JSON.stringify writes them.
 */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

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
