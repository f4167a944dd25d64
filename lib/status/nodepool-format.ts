/**
 * Output of the lists in Nodepool 11's shape (its `nodepool/status.py` `output()`): a row is
 * an object whose keys are Nodepool's field names; the text form is a PrettyTable (left-aligned,
 * the column titles as header) and the JSON form is Python's `json.dumps` of the rows. Pure.
 */
import { formatAge } from './age.js';
import { renderTable } from './table.js';

/** A list's columns: Nodepool's field name (the JSON key, what `?fields=` names) and its title. */
export type NodepoolColumns = ReadonlyArray<readonly [key: string, title: string]>;

/** One row: Nodepool's field names to their JSON values. */
export type NodepoolRow = Record<string, unknown>;

/** A list in Nodepool's shape: the columns in table order and the rows in Nodepool's order. */
export interface NodepoolList {
  columns: NodepoolColumns;
  rows: NodepoolRow[];
  /** Cells of our added columns whose values read better in words than as Python prints them, by key. */
  cells?: Readonly<Record<string, (value: unknown) => string>>;
}

/** Python's `str()` of a JSON value inside a container (`repr`): strings quoted, `None`, `True`. */
function pyRepr(v: unknown): string {
  if (v === null || v === undefined) return 'None';
  if (typeof v === 'string') return pyStringRepr(v);
  if (Array.isArray(v)) return `[${v.map(pyRepr).join(', ')}]`;
  if (typeof v === 'object') return `{${Object.entries(v).map(([k, x]) => `${pyStringRepr(k)}: ${pyRepr(x)}`).join(', ')}}`;
  return pyScalar(v);
}

function pyStringRepr(s: string): string {
  // Python prefers single quotes, and uses double quotes when the string has a ' and no ".
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  const body = s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/\r/g, '\\r').replace(/\t/g, '\\t');
  return quote + (quote === "'" ? body.replace(/'/g, "\\'") : body) + quote;
}

function pyScalar(v: unknown): string {
  if (v === true) return 'True';
  if (v === false) return 'False';
  return String(v);
}

/**
 * A table cell as Nodepool's `_to_pretty_table` makes it: `age` and any `*_age` value that is
 * not null becomes `DD:HH:MM:SS` from its epoch seconds (a value already formatted stays), a
 * list is comma-joined, null is empty, booleans are `True`/`False`, and a mapping is printed
 * as Python prints it.
 */
export function nodepoolCell(key: string, value: unknown, nowMs: number): string {
  if ((key === 'age' || key.endsWith('_age')) && value !== null && value !== undefined) {
    return typeof value === 'number' ? formatAge(nowMs - Math.trunc(value) * 1000) : String(value);
  }
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.map((x) => (typeof x === 'string' ? x : pyRepr(x))).join(',');
  if (typeof value === 'object') return pyRepr(value);
  return pyScalar(value);
}

/**
 * The text answer: a PrettyTable of `list`, keeping only the columns whose key `fields` names
 * (Nodepool's `?fields=a,b`: exact, case-sensitive names, in the table's own order; unknown
 * names are ignored). No `fields` (null or empty) keeps every column. Like `str(PrettyTable)`,
 * it ends without a newline; with no column left it is empty.
 */
export function nodepoolText(list: NodepoolList, fields: string | null, nowMs: number): string {
  const wanted = fields ? new Set(fields.split(',')) : null;
  const columns = wanted ? list.columns.filter(([key]) => wanted.has(key)) : list.columns;
  if (columns.length === 0) return '';
  const cell = (key: string, value: unknown): string => list.cells?.[key]?.(value) ?? nodepoolCell(key, value, nowMs);
  const rows = list.rows.map((row) => columns.map(([key]) => cell(key, row[key])));
  return renderTable(columns.map(([, title]) => title), rows).replace(/\n$/, '');
}

/**
 * `json.dumps(value)` as Python writes it: `", "` and `": "` separators, keys in insertion
 * order, every non-ASCII character escaped (`ensure_ascii`).
 */
export function pythonJson(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'string') return asciiJsonString(value);
  if (typeof value === 'number') return Number.isFinite(value) ? JSON.stringify(value) : value > 0 ? 'Infinity' : value < 0 ? '-Infinity' : 'NaN';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (Array.isArray(value)) return `[${value.map(pythonJson).join(', ')}]`;
  if (typeof value === 'object') {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined);
    return `{${entries.map(([k, v]) => `${asciiJsonString(k)}: ${pythonJson(v)}`).join(', ')}}`;
  }
  return 'null';
}

function asciiJsonString(s: string): string {
  return JSON.stringify(s).replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
