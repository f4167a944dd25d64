/**
 * Checked reading of a cloud's JSON answers at the boundary. Every field is read through a
 * {@link JsonReader}, which knows the call and the field path, so an answer that is not JSON
 * or has a field of the wrong type becomes a {@link CloudError} naming both, with the cloud's
 * own words: `Glance GET /v2/images/abc: field "status": expected string, got undefined;
 * cloud said: {"id":"abc"}`. Never a TypeError further in.
 */
import { CloudError } from '../../errors.js';
import { isSecretPath, processSecrets, quoteBody, type SecretRegistry } from '../../redact.js';
import type { HttpResponse } from './http-client.js';

/** Longest excerpt of a body quoted in a message. */
const EXCERPT = 200;

/**
 * A short, one-line excerpt of what the cloud answered (tags stripped from HTML), with
 * secrets redacted (see {@link quoteBody}: secret keys' values, `password: x` pairs, and
 * every secret in `secrets`, by default the process's).
 */
export function cloudSaid(body: string, secrets: SecretRegistry = processSecrets): string {
  let text = body.trim();
  if (!text) return 'cloud said nothing (empty body)';
  if (/^\s*</.test(text)) text = text.replace(/<(script|style)\b[^>]*>[\s\S]*?<\/\1>/gi, ' ').replace(/<[^>]*>/g, ' ');
  return `cloud said: ${quoteBody(text, { max: EXCERPT, secrets })}`;
}

/**
 * How a value reads in a message: `undefined`, `null`, `number 5`, `string "x"`, `array`,
 * `object`; at a secret field path (`token.secret`) only its kind (`a string`). Pure.
 */
export function describeValue(v: unknown, path?: string): string {
  if (v === undefined || v === null) return String(v);
  if (path !== undefined && isSecretPath(path) && typeof v !== 'object') return `a ${typeof v}`;
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'string') return `string ${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)}`;
  if (typeof v === 'object') return 'object';
  return `${typeof v} ${String(v)}`;
}

type Json = Record<string, unknown>;

/** A JSON object in a cloud's answer, at a path; its getters check types. */
export class JsonReader {
  private constructor(
    private readonly call: string,
    private readonly body: string,
    /** The object itself. */
    readonly value: Json,
    /** Its path from the root (`''` for the root, `images[2]`, `server.flavor`). */
    readonly path: string,
  ) {}

  /**
   * The answer's JSON object. Thrown: {@link CloudError} when the body is not JSON, or is
   * JSON but not an object.
   */
  static parse(res: Pick<HttpResponse, 'call' | 'status' | 'body'>): JsonReader {
    let value: unknown;
    try {
      value = JSON.parse(res.body);
    } catch (err) {
      throw new CloudError(`${res.call}: answer ${res.status} is not JSON; ${cloudSaid(res.body)}`, { cause: err, status: res.status });
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw new CloudError(`${res.call}: answer ${res.status} is ${describeValue(value)}, not a JSON object; ${cloudSaid(res.body)}`, { status: res.status });
    }
    return new JsonReader(res.call, res.body, value as Json, '');
  }

  /** The path of one of this object's fields. */
  fieldPath(key: string): string {
    return this.path ? `${this.path}.${key}` : key;
  }

  /** Thrown: the {@link CloudError} for field `key` not being what was expected. */
  fail(key: string, expected: string, got: unknown = this.value[key]): never {
    throw new CloudError(`${this.call}: field "${this.fieldPath(key)}": expected ${expected}, got ${describeValue(got, this.fieldPath(key))}; ${cloudSaid(this.body)}`);
  }

  /** Any value of field `key`, unchecked. */
  raw(key: string): unknown {
    return this.value[key];
  }

  /** A required object. */
  obj(key: string): JsonReader {
    const v = this.value[key];
    if (typeof v !== 'object' || v === null || Array.isArray(v)) this.fail(key, 'object');
    return new JsonReader(this.call, this.body, v as Json, this.fieldPath(key));
  }

  /** An object, or undefined when absent or null. */
  optObj(key: string): JsonReader | undefined {
    return this.value[key] === undefined || this.value[key] === null ? undefined : this.obj(key);
  }

  /** A required array of objects. */
  list(key: string): JsonReader[] {
    const v = this.value[key];
    if (!Array.isArray(v)) this.fail(key, 'array');
    return (v as unknown[]).map((item, i) => {
      const at = `${key}[${i}]`;
      if (typeof item !== 'object' || item === null || Array.isArray(item)) this.fail(at, 'object', item);
      return new JsonReader(this.call, this.body, item as Json, this.fieldPath(at));
    });
  }

  /** An array of objects; absent or null reads as empty. */
  optList(key: string): JsonReader[] {
    return this.value[key] === undefined || this.value[key] === null ? [] : this.list(key);
  }

  /** A required string (possibly empty). */
  str(key: string): string {
    const v = this.value[key];
    if (typeof v !== 'string') this.fail(key, 'string');
    return v as string;
  }

  /** A required non-empty string: an id. */
  id(key: string): string {
    const v = this.value[key];
    if (typeof v !== 'string' || !v) this.fail(key, 'a non-empty string id');
    return v as string;
  }

  /** A string, or null when absent or null. */
  optStr(key: string): string | null {
    return this.value[key] === undefined || this.value[key] === null ? null : this.str(key);
  }

  /** A required finite number. */
  num(key: string): number {
    const v = this.value[key];
    if (typeof v !== 'number' || !Number.isFinite(v)) this.fail(key, 'number');
    return v as number;
  }

  /** A number, or null when absent or null. */
  optNum(key: string): number | null {
    return this.value[key] === undefined || this.value[key] === null ? null : this.num(key);
  }

  /** A boolean, or null when absent or null. */
  optBool(key: string): boolean | null {
    const v = this.value[key];
    if (v === undefined || v === null) return null;
    if (typeof v !== 'boolean') this.fail(key, 'boolean');
    return v as boolean;
  }
}
