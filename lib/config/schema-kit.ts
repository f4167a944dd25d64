/**
 * A small validating schema kit: each schema parses a raw YAML value into a typed value,
 * applies defaults (which live only here, in the schema), and records every problem with
 * its key path and what was expected versus what was found.
 */
import path from 'node:path';
import type { ConfigProblem } from '../errors.js';
import { isSecretPath } from '../redact.js';

/** Collects problems (which make a document invalid) and warnings (which do not) while it is parsed. */
export class Problems {
  readonly list: ConfigProblem[] = [];
  /** Keys accepted but not honoured (deprecated, or for a driver this program lacks): logged, never silent. */
  readonly warnings: ConfigProblem[] = [];
  add(path: string, message: string): void {
    this.list.push({ path, message });
  }
  warn(path: string, message: string): void {
    this.warnings.push({ path, message });
  }
}

/** A schema for values of type T. `parse` returns undefined only when it recorded a problem. */
export interface Schema<T> {
  readonly expected: string;
  parse(value: unknown, path: string, problems: Problems): T | undefined;
}

/**
 * Renders a found value for messages: `"two"`, `42`, `a list`, `nothing`. At a secret key
 * path (`…password`, `…secret…`, `…token`; see {@link isSecretPath}) only the kind of value
 * is named (`a string`, `a number`), never the value.
 */
export function describeValue(v: unknown, path?: string): string {
  if (v === undefined || v === null) return 'nothing';
  if (path !== undefined && isSecretPath(path)) return describeKind(v);
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a mapping';
  if (typeof v === 'string') return JSON.stringify(v.length > 60 ? v.slice(0, 57) + '...' : v);
  return String(v);
}

/** The kind of a value, without the value: `a string`, `a number`, `true or false`, `a list`. */
export function describeKind(v: unknown): string {
  if (v === undefined || v === null) return 'nothing';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a mapping';
  if (typeof v === 'boolean') return 'true or false';
  return `a ${typeof v}`;
}

function mismatch(problems: Problems, path: string, expected: string, got: unknown): undefined {
  problems.add(path, `expected ${expected}, got ${describeValue(got, path)}`);
  return undefined;
}

function make<T>(expected: string, check: (v: unknown) => v is T, refine?: (v: T, path: string, p: Problems) => T | undefined): Schema<T> {
  return {
    expected,
    parse(v, path, p) {
      if (!check(v)) return mismatch(p, path, expected, v);
      return refine ? refine(v, path, p) : v;
    },
  };
}

/** A non-empty string, optionally matching a pattern. */
export function string(opts: { pattern?: RegExp; patternText?: string; allowEmpty?: boolean } = {}): Schema<string> {
  return make('a string', (v): v is string => typeof v === 'string', (v, path, p) => {
    if (!opts.allowEmpty && v === '') return mismatch(p, path, 'a non-empty string', v);
    if (opts.pattern && !opts.pattern.test(v)) return mismatch(p, path, opts.patternText ?? `a string matching ${opts.pattern}`, v);
    return v;
  });
}

/** An integer within bounds. */
export function int(opts: { min?: number; max?: number } = {}): Schema<number> {
  const range = opts.min !== undefined && opts.max !== undefined ? ` from ${opts.min} to ${opts.max}`
    : opts.min !== undefined ? ` >= ${opts.min}` : '';
  const expected = `integer${range}`;
  return make(expected, (v): v is number => typeof v === 'number' && Number.isInteger(v), (v, path, p) => {
    if ((opts.min !== undefined && v < opts.min) || (opts.max !== undefined && v > opts.max)) return mismatch(p, path, expected, v);
    return v;
  });
}

/** A number (fractions allowed) within bounds, e.g. seconds. */
export function num(opts: { min?: number; max?: number } = {}): Schema<number> {
  const range = opts.min !== undefined ? ` >= ${opts.min}` : '';
  const expected = `number${range}`;
  return make(expected, (v): v is number => typeof v === 'number' && Number.isFinite(v), (v, path, p) => {
    if ((opts.min !== undefined && v < opts.min) || (opts.max !== undefined && v > opts.max)) return mismatch(p, path, expected, v);
    return v;
  });
}

/**
 * The longest delay Node's timers keep: a signed 32-bit count of milliseconds. A longer
 * `setTimeout` (or `AbortSignal.timeout`) fires after 1 ms instead.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The most any duration key (in seconds) may say: 2,147,483 s, about 24.8 days, so no timer
 * made from a configured duration overflows into a 1 ms one.
 */
export const MAX_TIMER_SECONDS = Math.floor(MAX_TIMER_MS / 1000);

/**
 * A duration in seconds: at least `min`, at most {@link MAX_TIMER_SECONDS}; whole seconds
 * unless `fractions`. Below `min` or not a number reads as for {@link int} / {@link num}.
 */
export function seconds(opts: { min: number; fractions?: boolean }): Schema<number> {
  const base = opts.fractions ? num({ min: opts.min }) : int({ min: opts.min });
  return {
    expected: base.expected,
    parse(v, path, p) {
      const n = base.parse(v, path, p);
      if (n === undefined || n <= MAX_TIMER_SECONDS) return n;
      p.add(path, `expected at most ${MAX_TIMER_SECONDS} seconds (about 24.8 days, the longest delay Node's timers hold), got ${describeValue(n, path)}`);
      return undefined;
    },
  };
}

/** A schema whose parsed value gets a further check (rules between keys); `check` records problems. */
export function checked<T>(schema: Schema<T>, check: (v: T, path: string, p: Problems) => void): Schema<T> {
  return {
    expected: schema.expected,
    parse(v, path, p) {
      const parsed = schema.parse(v, path, p);
      if (parsed === undefined) return undefined;
      const before = p.list.length;
      check(parsed, path, p);
      return p.list.length > before ? undefined : parsed;
    },
  };
}

/** A schema whose parsed value is turned into another (a compiled form); problems are those of `schema`. */
export function mapped<T, U>(schema: Schema<T>, fn: (v: T) => U): Schema<U> {
  return {
    expected: schema.expected,
    parse(v, path, p) {
      const parsed = schema.parse(v, path, p);
      return parsed === undefined ? undefined : fn(parsed);
    },
  };
}

/**
 * A yargs `coerce` for a number given on the command line, checked with a config schema so a
 * flag and a key share their limits and wording: `--timeout: expected number >= 1, got "abc"`
 * (yargs' own `number` type turns "abc" into NaN). Numbers (defaults) pass through the schema.
 * Thrown by the returned function: RangeError naming the flag, what it got and what it expects.
 */
export function numberArgument(flag: string, schema: Schema<number>): (raw: unknown) => number {
  return (raw) => {
    const text = typeof raw === 'string' ? raw.trim() : undefined;
    const value = text !== undefined && text !== '' && Number.isFinite(Number(text)) ? Number(text) : raw;
    const p = new Problems();
    const n = schema.parse(value, flag, p);
    if (n === undefined || p.list.length) throw new RangeError(p.list.map((x) => `${x.path}: ${x.message}`).join('; '));
    return n;
  };
}

export function bool(): Schema<boolean> {
  return make('true or false', (v): v is boolean => typeof v === 'boolean');
}

/** One of a fixed set of strings. */
export function oneOf<const T extends string>(values: readonly T[]): Schema<T> {
  return make(`one of ${values.join(', ')}`, (v): v is T => typeof v === 'string' && (values as readonly string[]).includes(v));
}

/** A scalar (string, number or boolean) coerced to a string, as Nodepool does for `release` and `env-vars`. */
export function scalarString(): Schema<string> {
  return make('a string or number', (v): v is string | number | boolean =>
    typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean', (v) => String(v)) as Schema<string>;
}

/** A list of items; optionally with unique values under a key function. */
export function list<T>(item: Schema<T>, opts: { uniqueBy?: (t: T) => string; what?: string; minItems?: number } = {}): Schema<T[]> {
  return {
    expected: `a list of ${item.expected}`,
    parse(v, path, p) {
      if (!Array.isArray(v)) return mismatch(p, path, this.expected, v);
      if (opts.minItems !== undefined && v.length < opts.minItems) {
        p.add(path, `expected at least ${opts.minItems} ${opts.what ?? 'item'}(s), got ${v.length}`);
        return undefined;
      }
      const out: T[] = [];
      const seen = new Map<string, number>();
      let ok = true;
      v.forEach((raw, i) => {
        const parsed = item.parse(raw, `${path}[${i}]`, p);
        if (parsed === undefined) { ok = false; return; }
        if (opts.uniqueBy) {
          const key = opts.uniqueBy(parsed);
          const first = seen.get(key);
          if (first !== undefined) {
            p.add(`${path}[${i}]`, `duplicate ${opts.what ?? 'entry'} ${JSON.stringify(key)} (also at ${path}[${first}])`);
            ok = false;
          } else seen.set(key, i);
        }
        out.push(parsed);
      });
      return ok ? out : undefined;
    },
  };
}

/** A mapping from string keys to values of one schema. */
export function record<T>(value: Schema<T>): Schema<Record<string, T>> {
  return {
    expected: `a mapping of ${value.expected}`,
    parse(v, path, p) {
      if (typeof v !== 'object' || v === null || Array.isArray(v)) return mismatch(p, path, this.expected, v);
      const out: Record<string, T> = {};
      let ok = true;
      for (const [k, raw] of Object.entries(v)) {
        const parsed = value.parse(raw, `${path}.${k}`, p);
        if (parsed === undefined) ok = false;
        else out[k] = parsed;
      }
      return ok ? out : undefined;
    },
  };
}

/** A field of an object schema: required, or optional with a default (the only place defaults live). */
export interface Field<T> {
  schema: Schema<T>;
  required: boolean;
  default?: () => T;
  /** The key is accepted and its value dropped (the schema only records a warning); see {@link ignored}. */
  ignore?: true;
}

/**
 * A key Nodepool accepts that this program does not honour (deprecated, or read only by a
 * driver it lacks): any value is accepted, a warning naming the key path is recorded in
 * {@link Problems.warnings}, and the parsed object has no value for it. E.g. an openstack
 * provider's `'nodepool-id': ignored('deprecated; Nodepool ignores it too')`.
 */
export function ignored(reason: string): Field<undefined> {
  return {
    required: false,
    ignore: true,
    schema: {
      expected: 'anything (ignored)',
      parse(_v, path, p) {
        p.warn(path, `accepted and ignored: ${reason}`);
        return undefined;
      },
    },
  };
}

/**
 * A key that still works but is deprecated: parsed with `schema` as usual, and a warning
 * naming the key path (`reason`, e.g. "use connection-port") is recorded when it is present.
 */
export function deprecated<T>(schema: Schema<T>, reason: string): Schema<T> {
  return {
    expected: schema.expected,
    parse(v, path, p) {
      p.warn(path, `deprecated: ${reason}`);
      return schema.parse(v, path, p);
    },
  };
}

/** The same fields with no defaults (absent keys stay undefined): for entries merged before defaults apply. */
export function withoutDefaults<F extends Fields>(fields: F): { [K in keyof F]: F[K] extends Field<infer T> ? Field<T | undefined> : never } {
  return Object.fromEntries(Object.entries(fields).map(([k, f]) => [k, { ...f, default: undefined }])) as never;
}

export function required<T>(schema: Schema<T>): Field<T> {
  return { schema, required: true };
}

export function optional<T>(schema: Schema<T>, defaultValue: T | (() => T)): Field<T>;
export function optional<T>(schema: Schema<T>): Field<T | undefined>;
export function optional<T>(schema: Schema<T>, defaultValue?: T | (() => T)): Field<T> {
  const def = defaultValue === undefined ? undefined
    : typeof defaultValue === 'function' ? (defaultValue as () => T) : () => structuredClone(defaultValue);
  return { schema, required: false, default: def };
}

/** The fields of an {@link object} schema, by YAML key. */
export type Fields = Record<string, Field<unknown>>;
/** `max-servers` → `maxServers`, at the type level. */
export type Camel<S extends string> = S extends `${infer H}-${infer T}` ? `${H}${Capitalize<Camel<T>>}` : S;
type Parsed<F extends Fields> = { [K in keyof F as Camel<K & string>]: F[K] extends Field<infer T> ? T : never };

/** `max-servers` → `maxServers`. */
export function camel(key: string): string {
  return key.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/**
 * A mapping with known kebab-case keys, parsed into camelCase properties. Unknown keys are reported (they are usually typos),
 * unless `allowUnknown` is set (e.g. for the part of a provider that belongs to its driver).
 */
export function object<F extends Fields>(fields: F, opts: { allowUnknown?: boolean } = {}): Schema<Parsed<F>> {
  return {
    expected: 'a mapping',
    parse(v, path, p) {
      if (typeof v !== 'object' || v === null || Array.isArray(v)) return mismatch(p, path, 'a mapping', v);
      const src = v as Record<string, unknown>;
      const out: Record<string, unknown> = {};
      let ok = true;
      for (const [key, field] of Object.entries(fields)) {
        const sub = path ? `${path}.${key}` : key;
        const raw = src[key];
        if (field.ignore) {
          if (raw !== undefined) field.schema.parse(raw, sub, p);
          continue;
        }
        if (raw === undefined) {
          if (field.required) { p.add(sub, `expected ${field.schema.expected}, got nothing (required)`); ok = false; }
          else out[camel(key)] = field.default?.();
          continue;
        }
        if (raw === null) {
          // `providers:` with nothing under it (every entry commented out, a cut file) must not
          // read as "no providers" and delete every image: an empty value is an error, as in
          // Nodepool; leaving the key out is how a default is asked for.
          const hint = field.required ? 'required' : 'leave the key out for the default';
          p.add(sub, `expected ${field.schema.expected}, got an empty value (${hint})`);
          ok = false;
          continue;
        }
        const parsed = field.schema.parse(raw, sub, p);
        if (parsed === undefined) ok = false;
        else out[camel(key)] = parsed;
      }
      if (!opts.allowUnknown) {
        for (const key of Object.keys(src)) {
          if (!(key in fields)) {
            p.add(path ? `${path}.${key}` : key, `unknown key (known keys: ${Object.keys(fields).join(', ')})`);
            ok = false;
          }
        }
      }
      return ok ? (out as Parsed<F>) : undefined;
    },
  };
}

/** Deep-freezes a parsed config so nothing mutates it after loading. */
export function deepFreeze<T>(v: T): T {
  if (v && typeof v === 'object' && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const child of Object.values(v as Record<string, unknown>)) deepFreeze(child);
  }
  return v;
}

/** What a mapping schema gives for an absent block: its own defaults, so they are written once. */
export function defaultsOf<T>(schema: Schema<T>): T {
  const p = new Problems();
  const v = schema.parse({}, '', p);
  if (v === undefined || p.list.length) throw new Error(`schema has required keys; it has no defaults: ${p.list.map((x) => x.path).join(', ')}`);
  return v;
}

/** An absolute path, normalised (relative ones would depend on the daemon's working directory). */
export function absolutePath(): Schema<string> {
  const s = string();
  return {
    expected: 'an absolute path',
    parse(v, at, p) {
      const out = s.parse(v, at, p);
      if (out === undefined) return undefined;
      if (!path.isAbsolute(out)) {
        p.add(at, `expected an absolute path, got ${describeValue(out, at)}`);
        return undefined;
      }
      return path.normalize(out);
    },
  };
}
