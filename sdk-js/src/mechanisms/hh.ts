/**
 * hh: heavy hitters by prefix levels over CMS (PROTOCOL §3.7). A device's level is fixed per
 * task (its device key mod G); it reports its value's prefix of that level's length, with
 * the byte 0xFF appended when the value is shorter, as one CMS report.
 */

import { concat, utf8, wellFormed } from "../bytes.js";
import { splitmix64 } from "../hashing.js";
import type { Words } from "../random.js";
import { type Mechanism, type Payload, TaskError, ValueError, int } from "./base.js";
import { CountMeanSketch, type SketchReport } from "./sketch.js";

export interface LevelReport extends SketchReport {
  level: number;
}

/** The task's G level sketches; bound to a device, its level. */
export class HeavyHitters implements Mechanism<LevelReport> {
  readonly lengths: number[] = [];
  readonly sketches: CountMeanSketch[];
  private readonly symbols: Set<string> | null;

  constructor(
    task: Record<string, unknown>,
    epsilon: number,
    private readonly level: number | null = null,
    sketches?: CountMeanSketch[],
  ) {
    const alphabet = task["alphabet"];
    const maxLength = int(task, "max_length", 1, 255);
    const first = int(task, "first", 1, maxLength);
    const step = int(task, "step", 1, maxLength);
    for (let length = first; length < maxLength; length += step) this.lengths.push(length);
    this.lengths.push(maxLength);
    if (alphabet === "bytes") this.symbols = null;
    else if (typeof alphabet === "string") this.symbols = new Set(Array.from(alphabet));
    else throw new TaskError("alphabet must be 'bytes' or a string of symbols");
    const k = int(task, "k", 1, 1 << 20);
    const m = int(task, "m", 2, 1 << 16);
    const seed = int(task, "hash_seed", 0, 2 ** 32 - 1);
    this.sketches =
      sketches ??
      this.lengths.map((_, g) =>
        CountMeanSketch.fromEpsilon(epsilon, k, m, g === 0 ? seed : Number(splitmix64(seed, g + 1) & 0xffffffffn)),
      );
  }

  /** Return the value's symbols (each as UTF-8 bytes) after NFC normalisation. */
  units(value: unknown): Uint8Array[] {
    if (typeof value !== "string" || !wellFormed(value)) throw new ValueError("hh takes valid Unicode text");
    const normal = value.normalize("NFC");
    let units: Uint8Array[];
    if (this.symbols === null) units = Array.from(utf8(normal), (b) => Uint8Array.of(b));
    else {
      const chars = Array.from(normal);
      if (!chars.every((c) => this.symbols!.has(c))) {
        throw new ValueError("the value has symbols outside the task's alphabet");
      }
      units = chars.map(utf8);
    }
    const maxLength = this.lengths[this.lengths.length - 1]!;
    if (units.length < 1 || units.length > maxLength) {
      throw new ValueError(`the value must have 1 to ${maxLength} symbols`);
    }
    return units;
  }

  canonical(value: unknown): Uint8Array {
    return concat(...this.units(value));
  }

  /** Return the bytes a level's sketch hashes: the prefix (+ 0xFF), as Latin-1 then UTF-8. */
  item(units: Uint8Array[], level: number): Uint8Array {
    const length = this.lengths[level]!;
    const raw = concat(...units.slice(0, length), units.length < length ? Uint8Array.of(0xff) : new Uint8Array(0));
    return utf8(String.fromCharCode(...raw));
  }

  privatize(value: unknown, rng: Words): LevelReport {
    const units = this.units(value);
    const level = this.level ?? rng.below(this.lengths.length);
    return { level, ...this.sketches[level]!.privatizeBytes(this.item(units, level), rng) };
  }

  encode(report: LevelReport): Payload {
    return { level: report.level, ...this.sketches[report.level]!.encode(report) };
  }

  forDevice(deviceKey: Uint8Array): HeavyHitters {
    let key = 0n;
    for (const byte of deviceKey) key = (key << 8n) | BigInt(byte);
    const level = Number(key % BigInt(this.lengths.length));
    return Object.assign(Object.create(HeavyHitters.prototype), this, { level }) as HeavyHitters;
  }
}
