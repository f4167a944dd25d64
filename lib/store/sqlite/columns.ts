/**
 * Column helpers of the SQLite store's row mappings (image-rows.ts, node-rows.ts,
 * session-rows.ts): JSON columns, checked reads of a row's columns, lists that leave corrupt rows
 * out, and operator-given values checked before they are written.
 */
import { CorruptRecordError, StoreError } from '../../errors.js';
import { corruptOf, Fields, parseJson, type CorruptKind, type CorruptLog, type CorruptRecord } from '../corrupt.js';
import { toJson } from '../to-json.js';

/** Parses a JSON column; a column that does not parse is a StoreError naming the record. */
export function fromJson<T>(text: string, what: string): T {
  try {
    return JSON.parse(text) as T;
  } catch (cause) {
    throw new StoreError(`${what} holds invalid JSON`, { cause });
  }
}

/** JSON for a nullable column: null stays SQL NULL. */
export function toJsonOrNull(value: unknown, what: string): string | null {
  return value === null ? null : toJson(value, what);
}

/**
 * Checked reads of a row's columns (SQLite keeps any value in any column, and another writer
 * may have written one): JSON columns must parse into the expected shape, states be known,
 * times be numbers. Thrown: CorruptRecordError.
 */
export class Columns {
  private readonly f: Fields;

  constructor(private readonly row: object, readonly kind: CorruptKind, readonly id: string) {
    this.f = new Fields(row as Record<string, unknown>, kind, id);
  }

  /** Throws a CorruptRecordError with `reason`. */
  fail(reason: string): never {
    return this.f.fail(reason);
  }

  /** A state column from `states`. */
  state<S extends string>(states: readonly S[]): S {
    return this.f.state('state', states);
  }

  /** A time column (epoch ms). */
  time(col: string): number {
    const v = (this.row as Record<string, unknown>)[col];
    if (typeof v !== 'number' || !Number.isFinite(v)) this.f.fail(`${col} is ${v === null ? 'null' : typeof v}, expected a time`);
    return v;
  }

  /** A JSON column read with `check` (which gets Fields over `{ value }`). */
  json<T>(col: string, check: (f: Fields, key: 'value') => T): T {
    const text = (this.row as Record<string, unknown>)[col];
    if (typeof text !== 'string') return check(new Fields({ value: text }, this.kind, this.id), 'value');
    const value = parseJson(text, this.kind, this.id, col);
    return check(new Fields({ value }, this.kind, this.id), 'value');
  }

  /** A JSON column holding a list of strings. */
  strList(col: string): string[] {
    return this.json(col, (f, k) => [...f.strList(k, true)]);
  }
}

/** Checked progress: null, or an object with a numerator and a denominator. */
export function progressCol<T>(c: Columns, col: string): T | null {
  return c.json(col, (f, k) => {
    const p = f.optObject(k);
    if (p === null) return null;
    if (typeof p.numerator !== 'number' || typeof p.denominator !== 'number') f.fail(`${col} has no numerator and denominator`);
    return p as unknown as T;
  });
}

/**
 * Maps rows with `map`, leaving out corrupt ones (reported to `log` once per row content).
 * `where` adds the diskimage and provider to a corrupt record's description.
 */
export function checkedRows<R extends object, T>(rows: readonly R[], map: (r: R) => T, log: CorruptLog,
  where: (r: R) => { diskimage?: string; provider?: string | null } = () => ({})): T[] {
  return mapSkipping(rows, map, (err, r) => log.report(corruptOf(err, where(r)), JSON.stringify(r)));
}

/**
 * Maps rows of a kind with no ordinary delete (audit entries, upload retry requests) with
 * `map`, leaving out corrupt ones (logged once per row content; `listCorrupt` names them).
 */
export function skippingCorrupt<R extends object, T>(rows: readonly R[], map: (r: R) => T, log: CorruptLog): T[] {
  return mapSkipping(rows, map, (err, r) => log.reportSkipped(err, JSON.stringify(r)));
}

/** Maps `rows`, handing each row that is a corrupt record to `onCorrupt` instead. */
function mapSkipping<R, T>(rows: readonly R[], map: (r: R) => T, onCorrupt: (err: CorruptRecordError, r: R) => void): T[] {
  const out: T[] = [];
  for (const r of rows) {
    try {
      out.push(map(r));
    } catch (err) {
      if (!(err instanceof CorruptRecordError)) throw err;
      onCorrupt(err, r);
    }
  }
  return out;
}

/** The corrupt ones among `rows`. */
export function corruptRows<R extends object>(rows: readonly R[], map: (r: R) => unknown,
  where: (r: R) => { diskimage?: string; provider?: string | null } = () => ({})): CorruptRecord[] {
  const out: CorruptRecord[] = [];
  for (const r of rows) {
    try {
      map(r);
    } catch (err) {
      if (!(err instanceof CorruptRecordError)) throw err;
      out.push(corruptOf(err, where(r)));
    }
  }
  return out;
}

/** `(?, ?, ?)` for an IN list of `n` values (n ≥ 1). */
export function placeholders(n: number): string {
  return `(${Array.from({ length: n }, () => '?').join(', ')})`;
}
