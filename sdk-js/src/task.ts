/**
 * A task as served by GET /v1/tasks/{id} (PROTOCOL §1): checked, fingerprinted and built
 * into the mechanism its fields define. The registry (KINDS) is the one place kinds are
 * named. Protocol 1.0 tasks carry `protocol` and `derived` (the integers a device uses),
 * hash their RFC 8785 form, and are refused when the derived integers differ from ours.
 */

import { Contract } from "./contract.js";
import { ceilDiv, logRatio, scaled1074 } from "./exact.js";
import { hex, utf8 } from "./bytes.js";
import { type Json, jcs } from "./canonical.js";
import { type Dimensions, dimensionsOf } from "./device/dimensions.js";
import { type Mechanism, type Permanent, TaskError, int, num } from "./mechanisms/base.js";
import { HeavyHitters } from "./mechanisms/hh.js";
import { Longitudinal, thresholdFor } from "./mechanisms/longitudinal.js";
import { Loloha } from "./mechanisms/loloha.js";
import { OneBitMean, SquareWave } from "./mechanisms/numeric.js";
import { GeneralizedRandomizedResponse, RandomizedResponse } from "./mechanisms/simple.js";
import { OptimizedUnaryEncoding, SubsetSelection } from "./mechanisms/sets.js";
import { CountMeanSketch, HadamardCountMeanSketch, OptimizedLocalHashing } from "./mechanisms/sketch.js";
import { SCALE } from "./random.js";
import { type SealKey, sealKeyOf } from "./sealing/seal.js";
import { sha256 } from "./sha256.js";

/** The protocol versions this SDK implements (PROTOCOL.md): a task without dimensions is 1.0, one with them 1.1. */
export const PROTOCOL: `${Contract.PROTOCOL_VERSION}` = Contract.PROTOCOL_VERSION;
export const PROTOCOLS = [PROTOCOL, Contract.PROTOCOL_VERSION_1_1] as const;
/** Fields outside the mechanism's own (F of PROTOCOL §3.9 leaves them out). */
const COMMON = ["task_id", "mechanism", "time_precision", "min_batch_size", "protocol", "derived", "sealed", "dimensions", "min_slice_size"];
/** Served beside a task but not fingerprinted. */
const UNHASHED = [
  "fingerprint",
  "effective_epsilon",
  "effective_epsilon_inf",
  "upload_key_required",
  "archive",
  "attack_success",
  "selection",
  "seal",
];
const TASK_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
/** Each kind's own fields (PROTOCOL §1.1): another kind's (`k` on rr), or any other, refuses the task. */
const SKETCH = "epsilon k m hash_seed";
const OWN: Record<string, string> = {
  rr: "epsilon alpha beta longitudinal",
  grr: "epsilon domain longitudinal",
  cms: `${SKETCH} longitudinal`,
  hcms: `${SKETCH} longitudinal`,
  olh: "epsilon k hash_seed",
  hh: `${SKETCH} alphabet max_length first step`,
  numeric: "epsilon lo hi buckets scale method longitudinal",
  oue: "epsilon domain",
  ss: "epsilon domain",
};

type Fields = Record<string, unknown>;
type Derived = Record<string, number | number[]>;

/** A task this SDK can privatize for. */
export interface Task {
  readonly id: string;
  readonly fingerprint: string;
  readonly timePrecision: number;
  readonly mechanism: Mechanism;
  /** The ε of one report, and the permanent layer's ε∞ (null: not longitudinal). */
  readonly epsilon: number;
  readonly epsilonInf: number | null;
  /** The permanent configuration the privacy ledger records (PROTOCOL §4), null if not longitudinal. */
  readonly configuration: string | null;
  /** The collector's key its reports are sealed to (PROTOCOL §10), null for a plain task. */
  readonly seal: SealKey | null;
  /** The task's declared dimensions (PROTOCOL §11, public: not protected by LDP), null if none. */
  readonly dimensions: Dimensions | null;
  /** The task's JSON as served (what is cached). */
  readonly json: Fields;
}

/** Return the epsilon of a plain task, or (for a longitudinal one) the permanent layer's. */
function privacy(task: Fields): { epsilon: number; spec: Fields | null } {
  const spec = task["longitudinal"];
  if (spec === undefined) return { epsilon: "alpha" in task ? NaN : num(task, "epsilon"), spec: null };
  if (typeof spec !== "object" || spec === null || "epsilon" in task) {
    throw new TaskError("longitudinal must be an object, and such a task takes no epsilon");
  }
  return { epsilon: num(spec as Fields, "epsilon_inf"), spec: spec as Fields };
}

/** Return rr's thresholds from alpha and beta, from the floats' exact binary values. */
function alphaBeta(task: Fields): RandomizedResponse {
  const alpha = num(task, "alpha");
  const beta = num(task, "beta");
  if (!(alpha > 0 && alpha < 1 && beta > 0 && beta < 1)) throw new TaskError("alpha and beta must be in (0, 1)");
  const unit = 1n << 1074n;
  const [a, b, s] = [scaled1074(alpha), scaled1074(beta), BigInt(SCALE)];
  const no = ceilDiv((unit - a) * b * s, unit * unit);
  const lieYes = ceilDiv((unit - a) * (unit - b) * s, unit * unit);
  return new RandomizedResponse(SCALE - Number(lieYes), Number(no));
}

const KINDS: Record<string, (task: Fields, epsilon: number) => Mechanism> = {
  rr: (task, epsilon) => ("alpha" in task ? alphaBeta(task) : RandomizedResponse.fromEpsilon(epsilon)),
  grr: (task, epsilon) => new GeneralizedRandomizedResponse(epsilon, domainOf(task)),
  oue: (task, epsilon) => new OptimizedUnaryEncoding(epsilon, domainOf(task)),
  ss: (task, epsilon) => new SubsetSelection(epsilon, domainOf(task)),
  cms: (task, epsilon) => CountMeanSketch.fromEpsilon(epsilon, ...sketchSize(task)),
  hcms: (task, epsilon) => HadamardCountMeanSketch.fromEpsilon(epsilon, ...sketchSize(task)),
  olh: (task, epsilon) =>
    OptimizedLocalHashing.fromEpsilon(epsilon, int(task, "k", 1, 1 << 20), int(task, "hash_seed", 0, 2 ** 32 - 1)),
  hh: (task, epsilon) => new HeavyHitters(task, epsilon),
  numeric: (task, epsilon) => {
    const [lo, hi, d] = [num(task, "lo"), num(task, "hi"), int(task, "buckets", 2, 1024)];
    if (task["method"] === "1bit") return new OneBitMean(epsilon, lo, hi, d);
    if (task["method"] !== "sw") throw new TaskError("numeric method must be sw or 1bit");
    if (task["scale"] !== "linear" && task["scale"] !== "log") throw new TaskError("scale must be linear or log");
    return new SquareWave(epsilon, lo, hi, d, task["scale"] === "log");
  },
};

function domainOf(task: Fields): string[] {
  const domain = task["domain"];
  if (!Array.isArray(domain) || !domain.every((v) => typeof v === "string")) {
    throw new TaskError("domain must be a list of strings");
  }
  return domain as string[];
}

function sketchSize(task: Fields): [number, number, number] {
  return [int(task, "k", 1, 1 << 20), int(task, "m", 2, 1 << 16), int(task, "hash_seed", 0, 2 ** 32 - 1)];
}

/** Return the integers a mechanism uses, named as the task JSON publishes them. */
export function derivedOf(mechanism: Mechanism): Derived {
  const m = mechanism as unknown;
  if (m instanceof Loloha) return { g: m.g, T: m.buckets.other, T_i: m.threshold };
  if (m instanceof Longitudinal) return { ...derivedOf(m.permanent), T_i: m.threshold };
  if (m instanceof RandomizedResponse) return { T_yes: m.yes, T_no: m.no };
  if (m instanceof GeneralizedRandomizedResponse) return { T: m.other };
  if (m instanceof OptimizedUnaryEncoding) return { keep: m.keep, other: m.other };
  if (m instanceof SubsetSelection) return { subset_size: m.size, exclude: m.exclude };
  if (m instanceof OptimizedLocalHashing) return { g: m.m, T: m.flip };
  if (m instanceof CountMeanSketch || m instanceof HadamardCountMeanSketch) return { T: m.flip };
  if (m instanceof HeavyHitters) {
    return { T: m.sketches[0]!.flip, levels: m.lengths, level_seeds: m.sketches.map((s) => s.seed) };
  }
  if (m instanceof SquareWave) return { w: m.w, T: m.far, P: m.near, U: m.used };
  if (m instanceof OneBitMean) return { L: m.lowWords, S: m.step };
  return {};
}

const BIG = (x: number) => BigInt(x);

/**
 * Return the ε of one report and (longitudinal) the permanent layer's ε∞, computed from the
 * implemented thresholds as the reference does (what the device's privacy ledger charges).
 */
export function epsilonsOf(mechanism: Mechanism): { epsilon: number; epsilonInf: number | null } {
  const m = mechanism as unknown;
  if (m instanceof Loloha) {
    return { epsilon: m.buckets.composedEpsilon(m.threshold), epsilonInf: m.buckets.composedEpsilon(0) };
  }
  if (m instanceof Longitudinal) {
    const layer = m.permanent as Permanent<unknown>;
    return { epsilon: layer.composedEpsilon(m.threshold), epsilonInf: layer.composedEpsilon(0) };
  }
  const S = BIG(SCALE);
  let epsilon: number;
  if (m instanceof OptimizedUnaryEncoding) epsilon = logRatio(S - BIG(m.other), BIG(m.other));
  else if (m instanceof SubsetSelection) {
    epsilon = logRatio((S - BIG(m.exclude)) * BIG(m.d - m.size), BIG(m.exclude * m.size));
  } else if (m instanceof OptimizedLocalHashing) epsilon = logRatio(S - BIG((m.m - 1) * m.flip), BIG(m.flip));
  else if (m instanceof HeavyHitters) epsilon = m.sketches[0]!.composedEpsilon(0);
  else if (m instanceof SquareWave) epsilon = logRatio(BIG(m.near), BIG(m.far));
  else if (m instanceof OneBitMean) epsilon = logRatio(BIG(m.lowWords + (m.d - 1) * m.step), BIG(m.lowWords));
  else epsilon = (m as Permanent<unknown>).composedEpsilon(0);
  return { epsilon, epsilonInf: null };
}

/** Return the canonical JSON of an object (RFC 8785: protocol 1.0 speaks nothing else). */
export function canonicalJson(value: Fields): string {
  return jcs(value as Json);
}

/** Return the fingerprint of a task's JSON: SHA-256 of its canonical form, 32 hex digits. */
export function fingerprintOf(task: Fields): string {
  const hashed: Fields = {};
  for (const [key, value] of Object.entries(task)) if (!UNHASHED.includes(key)) hashed[key] = value;
  return hex(sha256(utf8(canonicalJson(hashed)))).slice(0, 32);
}

/** Return the mechanism a task's fields define (T_i of an `epsilon_1` task: as published, else searched for). */
export function mechanismOf(task: Fields): Mechanism {
  const kind = KINDS[String(task["mechanism"])];
  if (!kind) throw new TaskError(`a mechanism this SDK does not know`);
  const { epsilon, spec } = privacy(task);
  return spec ? longitudinal(task, spec, kind(task, epsilon)) : kind(task, epsilon);
}

/** Return the task a served JSON object defines, or throw TaskError saying why not. */
export function parseTask(json: unknown): Task {
  if (typeof json !== "object" || json === null || Array.isArray(json)) throw new TaskError("a task must be a JSON object");
  const task = json as Fields;
  const id = task["task_id"];
  if (typeof id !== "string" || !TASK_ID.test(id)) throw new TaskError("task_id is not a valid task id");
  // 1.1 iff the task declares dimensions or a 1.1 longitudinal variant (LOLOHA §3.13, the
  // numeric one §3.9); a protocol this SDK does not implement refuses this task only.
  const dimensions = task["dimensions"] === undefined ? null : dimensionsOf(task["dimensions"]);
  const layer = task["longitudinal"];
  const variant = typeof layer === "object" && layer !== null && ("variant" in layer || task["mechanism"] === "numeric");
  if (task["protocol"] !== PROTOCOLS[dimensions || variant ? 1 : 0]) {
    throw new TaskError(`task ${id} is for protocol ${String(task["protocol"])}; this SDK implements ${PROTOCOLS.join(" and ")}`);
  }
  if (dimensions) int(task, "min_slice_size", 1, 1e9);
  else if ("min_slice_size" in task) throw new TaskError(`task ${id}: min_slice_size without dimensions`);
  const sealed = task["sealed"] ?? false;
  if (typeof sealed !== "boolean") throw new TaskError(`task ${id}: sealed must be true or false`);
  if (!sealed && task["seal"] != null) throw new TaskError(`task ${id}: only a sealed task carries a seal key`);
  // Never send a sealed task's payload in the clear: no valid key, no task (PROTOCOL §10).
  const seal = sealed ? sealKeyOf(task["seal"], id) : null;
  const kind = KINDS[String(task["mechanism"])];
  if (!kind) throw new TaskError(`task ${id} has a mechanism this SDK does not know`);
  const own = [...OWN[String(task["mechanism"])]!.split(" "), ...COMMON, ...UNHASHED];
  for (const key in task) if (!own.includes(key)) throw new TaskError(`task ${id}: its mechanism takes no ${key}`);
  const mechanism = mechanismOf(task);
  // `derived` is always served (PROTOCOL §1.1): a task without it is refused.
  if (canonicalJson({ d: task["derived"] } as Fields) !== jcs({ d: derivedOf(mechanism) })) {
    throw new TaskError(`task ${id} publishes derived integers other than its parameters give here: refused`);
  }
  const fingerprint = fingerprintOf(task);
  if (task["fingerprint"] !== fingerprint) throw new TaskError(`task ${id}: its fingerprint cannot be reproduced`);
  const configuration =
    mechanism instanceof Longitudinal || mechanism instanceof Loloha
      ? hex(sha256(utf8(`${String(task["mechanism"])}\0${mechanism.identity}`))).slice(0, 32)
      : null;
  const timePrecision = int(task, "time_precision", 1, 366 * 86400);
  return { id, fingerprint, timePrecision, mechanism, ...epsilonsOf(mechanism), configuration, seal, dimensions, json: task };
}

/**
 * Return T_i for `epsilon_1`: the published one (its ε₁ ends in an ln, so devices do not search
 * for it again; it must lie in [1, limit) and its ε₁ here be at most epsilon_1 + 1e-9, §3.9).
 */
function epsilon1Threshold(task: Fields, spec: Fields, layer: Permanent<unknown>): number {
  const epsilon1 = num(spec, "epsilon_1");
  const published = (task["derived"] as Record<string, unknown> | undefined)?.["T_i"];
  return typeof published !== "number" ? thresholdFor(layer, epsilon1) : checkedThreshold(layer, published, epsilon1);
}

/** Return a published T_i in [1, limit) whose ε₁ here is at most epsilon_1 + 1e-9 (§3.9), or throw. */
function checkedThreshold(layer: Permanent<unknown>, published: number, epsilon1: number): number {
  if (!Number.isInteger(published) || published < 1 || published >= layer.irrLimit() || !(layer.composedEpsilon(published) <= epsilon1 + 1e-9)) {
    throw new TaskError("the published T_i is out of range or spends more than epsilon_1");
  }
  return published;
}

function longitudinal(task: Fields, spec: Fields, permanent: Mechanism): Mechanism {
  if ("variant" in spec) {
    if (spec["variant"] !== "loloha" || !(permanent instanceof GeneralizedRandomizedResponse)) {
      throw new TaskError("the longitudinal variant loloha is for grr tasks only");
    }
    const published = (task["derived"] as Record<string, unknown> | undefined)?.["T_i"];
    if (typeof published !== "number") throw new TaskError("a loloha task publishes T_i");
    const loloha = Loloha.fromSpec(permanent, spec, published, canonicalJson(mechanismFields(task)));
    checkedThreshold(loloha.buckets as Permanent<unknown>, published, num(spec, "epsilon_1"));
    return loloha;
  }
  if (!("irrThreshold" in permanent) || permanent instanceof OptimizedLocalHashing || permanent instanceof HeavyHitters) {
    throw new TaskError("this mechanism takes no longitudinal option");
  }
  const layer = permanent as Permanent<unknown>;
  const threshold = "flip" in spec ? layer.irrThreshold(num(spec, "flip")) : epsilon1Threshold(task, spec, layer);
  return new Longitudinal(layer, threshold, canonicalJson(mechanismFields(task)));
}

/** Return the task's mechanism fields (F of §3.9): what its permanent responses derive from. */
function mechanismFields(task: Fields): Fields {
  const fields: Fields = {};
  for (const [key, value] of Object.entries(task)) {
    if (!COMMON.includes(key) && !UNHASHED.includes(key)) fields[key] = value;
  }
  return fields;
}
