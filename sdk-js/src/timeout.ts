/** Request deadlines: fetch has none of its own (Node's gives up after 300 s, browsers later). */

/** Return a signal that aborts a request after `seconds` (none where AbortSignal.timeout is missing). */
export function timeoutSignal(seconds: number): AbortSignal | undefined {
  return typeof AbortSignal !== "undefined" && typeof AbortSignal.timeout === "function"
    ? AbortSignal.timeout(Math.ceil(seconds * 1000))
    : undefined;
}
