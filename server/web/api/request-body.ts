/**
 * The body of a write API request: absent, or a JSON object whose fields have the types its
 * endpoint declares. Answers the fields, or why not (400 naming the field, 415 for a body that
 * is not `application/json`). Pure.
 */

/** The type of one body field. */
export type FieldType = 'string' | 'number';

/** One field an endpoint takes. */
export interface FieldSpec {
  type: FieldType;
  /** Default false. */
  required?: boolean;
}

/** The fields an endpoint takes; any other field is refused. */
export type BodySpec = Readonly<Record<string, FieldSpec>>;

/** A checked body: each declared field with its type, or absent. */
export type BodyFields = Readonly<Record<string, string | number | undefined>>;

/** Longest string a field may hold (a reason, a provider or build name). */
export const MAX_FIELD_CHARS = 1000;

/** A body refused: 400 or 415, and the sentence that says why. */
export interface BodyProblem {
  status: 400 | 415;
  message: string;
}

/** Whether a Content-Type names JSON (`application/json`, with or without parameters). */
function isJsonType(contentType: string | undefined): boolean {
  return contentType !== undefined && /^application\/json\s*(;|$)/i.test(contentType.trim());
}

/** Checks `raw` against `spec`; an empty body is `{}` (then only required fields are missing). */
export function parseBody(raw: Buffer, contentType: string | undefined, spec: BodySpec): { ok: true; fields: BodyFields } | ({ ok: false } & BodyProblem) {
  let value: unknown = {};
  if (raw.length > 0) {
    if (!isJsonType(contentType)) return { ok: false, status: 415, message: `the body must be application/json, got ${contentType ? JSON.stringify(contentType) : 'no Content-Type'}` };
    try {
      value = JSON.parse(raw.toString('utf8'));
    } catch (err) {
      return { ok: false, status: 400, message: `the body is not valid JSON (${(err as Error).message})` };
    }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, status: 400, message: `the body must be a JSON object, got ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value}` };
  }
  const given = value as Record<string, unknown>;
  const unknown = Object.keys(given).filter((k) => !Object.hasOwn(spec, k));
  if (unknown.length > 0) {
    const takes = Object.keys(spec);
    return { ok: false, status: 400, message: `unknown field ${unknown.map((k) => JSON.stringify(k)).join(', ')} (this request takes ${takes.length > 0 ? takes.join(', ') : 'no fields'})` };
  }
  const fields: Record<string, string | number | undefined> = {};
  for (const [name, f] of Object.entries(spec)) {
    const v = given[name];
    if (v === undefined || v === null) {
      if (f.required) return { ok: false, status: 400, message: `field ${name} is required (a ${f.type})` };
      continue;
    }
    const problem = fieldProblem(v, f.type);
    if (problem) return { ok: false, status: 400, message: `field ${name}: ${problem}` };
    fields[name] = v as string | number;
  }
  return { ok: true, fields };
}

function fieldProblem(v: unknown, type: FieldType): string | undefined {
  if (type === 'number') return typeof v === 'number' && Number.isFinite(v) ? undefined : `expected a number, got ${describe(v)}`;
  if (typeof v !== 'string') return `expected a string, got ${describe(v)}`;
  if (v === '') return 'must not be empty';
  if (v.length > MAX_FIELD_CHARS) return `longer than ${MAX_FIELD_CHARS} characters`;
  return undefined;
}

function describe(v: unknown): string {
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return 'a string';
  if (typeof v === 'number') return Number.isFinite(v) ? 'a number' : String(v);
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}
