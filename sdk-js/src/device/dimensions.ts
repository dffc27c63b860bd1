/**
 * A task's declared dimensions (PROTOCOL §11, protocol 1.1): closed lists of public values
 * (`platform: android, ios, web`) sent in the clear beside the privatized payload. They are
 * NOT protected by local differential privacy: the collector and any relay read them as
 * given. Before a report is stored, each declared name maps to the app's value when the
 * task lists it, else to `other` (an absent one too), and undeclared names are dropped, so
 * no free-form string leaves the device.
 */

import { TaskError } from "../mechanisms/base.js";

export const OTHER = "other";
export type Dimensions = readonly { readonly name: string; readonly values: readonly string[] }[];
/** What an app gives: a value per dimension name (anything else becomes `other`). */
export type DimensionValues = Record<string, string>;

const NAME = /^[a-z][a-z0-9_]{0,31}$/;
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** Return a task's `dimensions` field checked by §11's rules, or throw TaskError. */
export function dimensionsOf(field: unknown): Dimensions {
  const names = new Set<string>();
  // A value: 1 to 64 characters (code points), no control character, never `other`.
  const isValue = (v: unknown) => typeof v === "string" && v !== OTHER && !CONTROL.test(v) && v !== "" && [...v].length <= 64;
  const isDimension = (entry: unknown) => {
    const { name, values, ...rest } = (entry ?? {}) as Record<string, unknown>;
    const fresh = typeof name === "string" && NAME.test(name) && !names.has(name) && !!names.add(name);
    const listed = Array.isArray(values) && values.length <= 63 && values.every(isValue) && new Set(values).size === values.length;
    return fresh && listed && values.length > 0 && !Object.keys(rest).length;
  };
  if (!Array.isArray(field) || field.length > 3 || !field.length || !field.every(isDimension)) {
    throw new TaskError("dimensions: 1 to 3 {name, values}, distinct names a-z0-9_, 1 to 63 distinct values of 1 to 64 characters, none other");
  }
  return field as Dimensions;
}

/** Return the index of the slice `dims` name: mixed radix in declared order, `other` last (§11). */
export function sliceOf(dimensions: Dimensions, dims: DimensionValues): number {
  let index = 0;
  for (const { name, values } of dimensions) {
    const position = values.indexOf(dims[name]!);
    index = index * (values.length + 1) + (position < 0 ? values.length : position);
  }
  return index;
}

/** Return the `dims` a report carries for the values given: each declared name's value if listed, else `other`. */
export function coarsen(dimensions: Dimensions, given: Record<string, unknown> | undefined): DimensionValues {
  const dims: DimensionValues = {};
  for (const { name, values } of dimensions) {
    const value = given?.[name];
    dims[name] = typeof value === "string" && values.includes(value) ? value : OTHER;
  }
  return dims;
}
