/**
 * Corrupt records are data, not crashes: a record that does not parse, or parses but does not
 * validate (an unknown state, no time, a field of the wrong type), is skipped by the list
 * calls every loop reads, named by `listCorrupt` (which the CLI and web lists show as
 * `corrupt`), logged once per version, and removable with the ordinary delete calls. Both
 * backends check their records with {@link Fields} so they agree on what is corrupt.
 */
import { CorruptRecordError } from '../errors.js';
import type { Logger } from '../log.js';

/**
 * The kinds of records the store checks. `audit` entries are named only when asked: naming
 * them reads every kept entry (up to AUDIT_KEEP + AUDIT_PRUNE_EVERY), so `listCorrupt()` with
 * no filter reads the trail and a `kinds` without `audit` does not (every list and action
 * passes its kinds). A corrupt audit entry has no delete: it ages out with the trail's pruning.
 */
export const CORRUPT_KINDS = ['build', 'upload', 'pause', 'build-request', 'node', 'request', 'launcher', 'pin', 'revocation', 'upload-retry', 'audit'] as const;
export type CorruptKind = (typeof CORRUPT_KINDS)[number];

/** Whether a `listCorrupt` filter's kinds (all when undefined) include `kind`. */
export function wantsKind(kinds: readonly CorruptKind[] | undefined, kind: CorruptKind): boolean {
  return kinds === undefined || kinds.includes(kind);
}

/** A record that does not parse or validate. */
export interface CorruptRecord {
  kind: CorruptKind;
  /**
   * The record's id (a pause or a pin: `<diskimage>` or `<diskimage>/<provider>`; a revocation:
   * its build id; an audit entry: its 10-digit id). A corrupt audit entry cannot be removed by
   * a command: it ages out with the trail's pruning (lib/store/audit.ts).
   */
  id: string;
  /** Why it is corrupt (never the record's content: it may hold anything). */
  reason: string;
  /** The diskimage of a build, upload, pause, pin, revocation, build request or upload retry request. */
  diskimage?: string;
  /** The provider of an upload, a provider pause, a provider pin or an upload retry request. */
  provider?: string;
}

/** What `listCorrupt` takes: only these kinds (all when omitted). */
export interface CorruptFilter {
  kinds?: readonly CorruptKind[];
}

/** Thrown: CorruptRecordError. A short description of a JSON value's type (not its content). */
function typeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  return typeof v;
}

/**
 * Checked reads of one record's JSON fields; every failure is a CorruptRecordError naming the
 * field and what it held instead (its type, or for a state its value: states are not secret).
 */
export class Fields {
  constructor(private readonly j: Record<string, unknown>, readonly kind: CorruptKind, readonly id: string) {}

  /** Throws a CorruptRecordError with `reason`. */
  fail(reason: string): never {
    throw new CorruptRecordError(this.kind, this.id, reason);
  }

  /** A state from `states` (required). */
  state<S extends string>(key: string, states: readonly S[]): S {
    const v = this.j[key];
    if (typeof v !== 'string') this.fail(v === undefined ? `no ${key}` : `${key} is ${typeOf(v)}, expected a string`);
    if (!(states as readonly string[]).includes(v)) this.fail(`unknown ${key} ${JSON.stringify(v.slice(0, 40))} (expected one of ${states.join(', ')})`);
    return v as S;
  }

  /** A number of seconds as epoch ms; undefined when absent or null. */
  optSeconds(key: string): number | undefined {
    const v = this.j[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'number' || !Number.isFinite(v)) this.fail(`${key} is ${typeOf(v)}, expected a number of seconds`);
    return Math.round(v * 1000);
  }

  /** A required number of seconds as epoch ms. */
  seconds(key: string): number {
    const v = this.optSeconds(key);
    if (v === undefined) this.fail(`no ${key}`);
    return v;
  }

  /** A string, or null when absent or null. */
  optStr(key: string): string | null {
    const v = this.j[key];
    if (v === undefined || v === null) return null;
    if (typeof v !== 'string') this.fail(`${key} is ${typeOf(v)}, expected a string`);
    return v;
  }

  /** A number, or undefined when absent or null. */
  optNumber(key: string): number | undefined {
    const v = this.j[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'number' || !Number.isFinite(v)) this.fail(`${key} is ${typeOf(v)}, expected a number`);
    return v;
  }

  /** A boolean, or undefined when absent or null. */
  optBool(key: string): boolean | undefined {
    const v = this.j[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'boolean') this.fail(`${key} is ${typeOf(v)}, expected true or false`);
    return v;
  }

  /** A list of strings; [] when absent or null unless `required`. */
  strList(key: string, required = false): string[] {
    const v = this.j[key];
    if ((v === undefined || v === null) && !required) return [];
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) {
      this.fail(v === undefined ? `no ${key}` : `${key} is ${Array.isArray(v) ? 'a list with other values' : typeOf(v)}, expected a list of strings`);
    }
    return v as string[];
  }

  /** A JSON object, or null when absent or null. */
  optObject(key: string): Record<string, unknown> | null {
    const v = this.j[key];
    if (v === undefined || v === null) return null;
    if (typeof v !== 'object' || Array.isArray(v)) this.fail(`${key} is ${typeOf(v)}, expected an object`);
    return v as Record<string, unknown>;
  }

  /** A list of objects; [] when absent or null. */
  objectList(key: string): Record<string, unknown>[] {
    const v = this.j[key];
    if (v === undefined || v === null) return [];
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'object' && x !== null && !Array.isArray(x))) {
      this.fail(`${key} is ${Array.isArray(v) ? 'a list with other values' : typeOf(v)}, expected a list of objects`);
    }
    return v as Record<string, unknown>[];
  }
}

/** Parses a JSON text; a CorruptRecordError naming the record (and `field`) when it does not parse. */
export function parseJson(text: string, kind: CorruptKind, id: string, field?: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new CorruptRecordError(kind, id, `${field ?? 'its data'} is not valid JSON`);
  }
}

/** The record a CorruptRecordError describes. */
export function corruptOf(err: CorruptRecordError, where: { diskimage?: string; provider?: string | null } = {}): CorruptRecord {
  const rec: CorruptRecord = { kind: err.kind as CorruptKind, id: err.recordId, reason: err.reason };
  if (where.diskimage !== undefined) rec.diskimage = where.diskimage;
  if (where.provider !== undefined && where.provider !== null) rec.provider = where.provider;
  return rec;
}

/** Corrupt records in a stable order: by kind (as in CORRUPT_KINDS), then id. */
export function sortCorrupt(list: CorruptRecord[]): CorruptRecord[] {
  return list.sort((a, b) => CORRUPT_KINDS.indexOf(a.kind) - CORRUPT_KINDS.indexOf(b.kind) || a.id.localeCompare(b.id));
}

/** Bound on versions remembered (cleared when full: then each is logged once more at worst). */
const MAX_REMEMBERED = 10_000;

/**
 * Logs each corrupt record once per version (a ZooKeeper data version, a SQLite row's content),
 * not at every pass of every loop that reads it.
 */
export class CorruptLog {
  private readonly seen = new Set<string>();

  constructor(private readonly log: Logger | undefined) {}

  /** Logs `rec` at warn unless this version of it was logged already. */
  report(rec: CorruptRecord, version: string | number): void {
    if (!this.log || !this.firstTime(rec.kind, rec.id, version, rec.reason)) return;
    this.log.warn('skipping a corrupt record (list it with the CLI, remove it with the ordinary delete command)', { ...rec });
  }

  /**
   * Logs a skipped record with no ordinary delete (an audit entry, which ages out; an upload
   * retry request, which a new request replaces), once per version.
   */
  reportSkipped(err: CorruptRecordError, version: string | number): void {
    if (!this.log || !this.firstTime(err.kind, err.recordId, version, err.reason)) return;
    this.log.warn('skipping a corrupt record', { kind: err.kind, id: err.recordId, reason: err.reason });
  }

  /** Whether this version of the record is reported for the first time (remembered from now on). */
  private firstTime(kind: string, id: string, version: string | number, reason: string): boolean {
    const key = `${kind}\u0000${id}\u0000${String(version)}\u0000${reason}`;
    if (this.seen.has(key)) return false;
    if (this.seen.size >= MAX_REMEMBERED) this.seen.clear();
    this.seen.add(key);
    return true;
  }
}
