/**
 * Label `dynamic-instance-properties` (Nodepool 11): each value is a Python `str.format`
 * template called as `v.format(request=<request attrs>)`, e.g. `{request.tenant_name}` or
 * `{request.requestor_data[job_name]}`. This is a small pure formatter for that subset of
 * Python's format syntax: `{{`/`}}` escapes, field names `request` followed by `.attr` and
 * `[key]` (digits index a list, as in Python), conversions `!s`/`!r`; a format spec is not
 * supported and counts as a formatting error. Values render as Python's `str()` would.
 */
import { TemplateError } from '../../errors.js';
import type { NodeRequestRecord } from '../../store/models.js';

/** The request as the templates see it (Nodepool's NodeRequest attributes). */
export interface RequestAttrs {
  id: string;
  labels: string[];
  requestor: string | null;
  requestor_data: unknown;
  relative_priority: number;
  event_id: string | null;
  /** Epoch seconds (Python float). */
  created_time: number | null;
  tenant_name: string | null;
}

/**
 * The attributes of a request record. `requestor_data` is read when the store keeps it (Zuul
 * writes it; the record field is `requestorData`), else None.
 */
export function requestAttrs(r: NodeRequestRecord & { requestorData?: unknown }): RequestAttrs {
  return {
    id: r.id,
    labels: [...r.labels],
    requestor: r.requestor || null,
    requestor_data: r.requestorData ?? null,
    relative_priority: r.relativePriority ?? 0,
    event_id: r.eventId ?? null,
    created_time: r.created / 1000,
    tenant_name: r.tenantName ?? null,
  };
}

function pyRepr(v: unknown): string {
  if (typeof v === 'string') return v.includes("'") && !v.includes('"') ? `"${v}"` : `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
  return pyStr(v);
}

/** Python's `str()` of a JSON-like value. Pure. */
export function pyStr(v: unknown): string {
  if (v === null || v === undefined) return 'None';
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return String(v);
  if (Array.isArray(v)) return `[${v.map(pyRepr).join(', ')}]`;
  if (typeof v === 'object') return `{${Object.entries(v as Record<string, unknown>).map(([k, x]) => `${pyRepr(k)}: ${pyRepr(x)}`).join(', ')}}`;
  return String(v);
}

/** Resolves one field name (`request.a[b].c`) against the arguments. */
function resolve(field: string, args: Readonly<Record<string, unknown>>): unknown {
  const m = /^([A-Za-z_]\w*)/.exec(field);
  if (!m) throw new TemplateError(`unsupported field ${JSON.stringify(field)}`);
  const root = m[1] as string;
  if (!(root in args)) throw new TemplateError(`KeyError: '${root}'`);
  let v: unknown = args[root];
  let rest = field.slice(root.length);
  while (rest) {
    const attr = /^\.([A-Za-z_]\w*)/.exec(rest);
    const item = /^\[([^\]]+)\]/.exec(rest);
    if (attr) {
      const name = attr[1] as string;
      if (v === null || typeof v !== 'object' || Array.isArray(v) || !(name in v)) throw new TemplateError(`AttributeError: no attribute '${name}'`);
      v = (v as Record<string, unknown>)[name];
      rest = rest.slice(attr[0].length);
    } else if (item) {
      const key = item[1] as string;
      if (Array.isArray(v) && /^\d+$/.test(key)) {
        if (Number(key) >= v.length) throw new TemplateError(`IndexError: list index ${key} out of range`);
        v = v[Number(key)];
      } else if (v !== null && typeof v === 'object' && !Array.isArray(v) && key in v) {
        v = (v as Record<string, unknown>)[key];
      } else throw new TemplateError(`${Array.isArray(v) ? 'TypeError' : 'KeyError'}: '${key}'`);
      rest = rest.slice(item[0].length);
    } else throw new TemplateError(`unsupported field ${JSON.stringify(field)}`);
  }
  return v;
}

/** `template.format(**args)` for the subset described above. Thrown: {@link TemplateError}. Pure. */
export function formatTemplate(template: string, args: Readonly<Record<string, unknown>>): string {
  let out = '';
  for (let i = 0; i < template.length;) {
    const c = template[i] as string;
    if (c === '{' && template[i + 1] === '{') { out += '{'; i += 2; continue; }
    if (c === '}' && template[i + 1] === '}') { out += '}'; i += 2; continue; }
    if (c === '}') throw new TemplateError("ValueError: Single '}' encountered in format string");
    if (c !== '{') { out += c; i += 1; continue; }
    const end = template.indexOf('}', i);
    if (end < 0) throw new TemplateError("ValueError: Single '{' encountered in format string");
    const body = template.slice(i + 1, end);
    if (body.includes('{')) throw new TemplateError('nested replacement fields are not supported');
    const spec = /^([^!:]*)(?:!([rsa]))?(?::(.*))?$/s.exec(body);
    if (!spec || !spec[1]) throw new TemplateError(`positional or empty field {${body}} is not supported`);
    if (spec[3]) throw new TemplateError(`format spec :${spec[3]} is not supported`);
    const v = resolve(spec[1], args);
    out += spec[2] === 'r' || spec[2] === 'a' ? pyRepr(v) : pyStr(v);
    i = end + 1;
  }
  return out;
}

/** One template that could not be formatted (logged; the key is left out, as Nodepool does). */
export interface SkippedProperty {
  key: string;
  error: string;
}

/** Formats every template with `request=attrs`; keys that fail are skipped and reported. Pure. */
export function dynamicProperties(templates: Readonly<Record<string, string>>, attrs: RequestAttrs): { values: Record<string, string>; skipped: SkippedProperty[] } {
  const values: Record<string, string> = {};
  const skipped: SkippedProperty[] = [];
  for (const [key, template] of Object.entries(templates)) {
    try {
      values[key] = formatTemplate(template, { request: attrs });
    } catch (err) {
      skipped.push({ key, error: err instanceof Error ? err.message : String(err) });
    }
  }
  return { values, skipped };
}
