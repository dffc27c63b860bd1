/** What every mechanism provides the client (PROTOCOL §3), and the errors of a value or task. */

import { wellFormed } from "../bytes.js";
import type { Words } from "../random.js";

/** A value that does not fit the task (never carries the value itself). */
export class ValueError extends Error {}

/** A task configuration this SDK cannot use (unknown kind, bad field, wrong fingerprint). */
export class TaskError extends Error {}

/** A report's payload fields, JSON-ready. */
export type Payload = Record<string, number | string | number[]>;

/** A built mechanism as one device uses it. */
export interface Mechanism<R = unknown> {
  /** Return the bytes that identify a valid value (what memo keys hash); throw ValueError. */
  canonical(value: unknown): Uint8Array;
  /** Return the privatized report of a value, drawing from `rng`. */
  privatize(value: unknown, rng: Words): R;
  /** Return the report's payload fields. */
  encode(report: R): Payload;
  /** Return the mechanism as the device with this key (HMAC of its secret) uses it. */
  forDevice(deviceKey: Uint8Array): Mechanism<R>;
  /** Return what a permanent response is drawn for, given the canonical value (LOLOHA: its bucket). */
  drawnFor?(canonical: Uint8Array): Uint8Array;
}

/** A mechanism that can be a longitudinal task's permanent layer (§3.9). */
export interface Permanent<R> extends Mechanism<R> {
  /** Return the report re-randomized with threshold T. */
  reflip(report: R, threshold: number, rng: Words): R;
  /** Return the instantaneous threshold for a flip probability (throw TaskError if out of range). */
  irrThreshold(flip: number): number;
  /** Return the threshold at which a report no longer depends on the value. */
  irrLimit(): number;
  /** Return the ε of one report with the instantaneous threshold T (exact, as published). */
  composedEpsilon(threshold: number): number;
}

/** Return the error of an ε whose probabilities round to equal 32-bit thresholds. */
export function tooSmall(): TaskError {
  return new TaskError("epsilon is too small to implement with 32-bit thresholds");
}

/** Return an integer field in [low, high] or throw TaskError. */
export function int(task: Record<string, unknown>, name: string, low: number, high: number): number {
  const value = task[name];
  if (typeof value !== "number" || !Number.isInteger(value) || value < low || value > high) {
    throw new TaskError(`task field ${name} must be an integer in [${low}, ${high}]`);
  }
  return value;
}

/** Return a finite number field (ε above 0) or throw TaskError. */
export function num(task: Record<string, unknown>, name: string): number {
  const value = task[name];
  if (typeof value !== "number" || !Number.isFinite(value)) {
    throw new TaskError(`task field ${name} must be a finite number`);
  }
  return value;
}

/** Return the string value or throw ValueError (a lone surrogate is not text: PROTOCOL §3.1). */
export function text(value: unknown): string {
  if (typeof value !== "string" || !wellFormed(value)) throw new ValueError("this task takes a string value");
  return value;
}

/** Return the device-independent mechanism itself (most kinds). */
export function same<M>(this: M): M {
  return this;
}
