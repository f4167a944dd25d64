/**
 * Request parsing for the web status, as Nodepool's webapp does it: a `.json` suffix or
 * `Accept: application/json` asks for JSON, anything else gets the CLI's text table, and
 * `?fields=a,b` keeps only those columns of the table. Pure.
 */

/** The two answers a status endpoint gives. */
export type StatusFormat = 'text' | 'json';

/** A status path split into its route and whether it ended in `.json`. */
export interface StatusPath {
  /** `/node-list` for both `/node-list` and `/node-list.json`. */
  route: string;
  jsonSuffix: boolean;
}

/** Splits off a `.json` suffix (a trailing slash is ignored). */
export function parseStatusPath(pathname: string): StatusPath {
  const p = pathname.length > 1 ? pathname.replace(/\/+$/, '') : pathname;
  return p.endsWith('.json') ? { route: p.slice(0, -'.json'.length), jsonSuffix: true } : { route: p, jsonSuffix: false };
}

/**
 * JSON when the path ended in `.json` or the Accept header lists `application/json` ahead of
 * (or without) `text/plain`; text otherwise, also for `*\/*` and no header at all.
 */
export function statusFormat(accept: string | undefined, jsonSuffix: boolean): StatusFormat {
  if (jsonSuffix) return 'json';
  if (!accept) return 'text';
  const types = accept.split(',').map((part) => {
    const [type = '', ...params] = part.trim().toLowerCase().split(';');
    const q = params.map((x) => x.trim()).find((x) => x.startsWith('q='));
    return { type: type.trim(), q: q ? Number(q.slice(2)) : 1 };
  }).filter((t) => t.q > 0);
  const q = (type: string): number => Math.max(-1, ...types.filter((t) => t.type === type).map((t) => t.q));
  const json = q('application/json');
  return json >= 0 && json >= q('text/plain') ? 'json' : 'text';
}

/** `Build ID`, `build_id`, `build-id` and `buildid` all name the same column. */
export function fieldKey(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]/g, '');
}

/** A table cut down to the requested columns, or why it cannot be. */
export type FieldSelection =
  | { ok: true; columns: string[]; rows: string[][] }
  | { ok: false; message: string };

/**
 * Keeps the columns `fields` names (comma-separated, in the order given; see {@link fieldKey}).
 * `id` also names the list's own id column when it has no `ID` column (`idColumn`: `Upload
 * ID` in `image-list`, `Request ID` in `request-list`, as the id of those lists' JSON). No
 * `fields` (null or blank) keeps every column. An unknown name is an error naming the
 * columns there are.
 */
export function selectFields(
  columns: readonly string[], rows: ReadonlyArray<readonly string[]>, fields: string | null, idColumn?: string,
): FieldSelection {
  if (fields === null || fields.trim() === '') return { ok: true, columns: [...columns], rows: rows.map((r) => [...r]) };
  const keys = columns.map(fieldKey);
  const picked: number[] = [];
  for (const name of fields.split(',').map((f) => f.trim()).filter(Boolean)) {
    let i = keys.indexOf(fieldKey(name));
    if (i < 0 && fieldKey(name) === 'id' && idColumn !== undefined) i = columns.indexOf(idColumn);
    if (i < 0) {
      const also = idColumn !== undefined && columns.includes(idColumn) ? ` (id: ${fieldKey(idColumn)})` : '';
      return { ok: false, message: `unknown field "${name}"; the fields are: ${keys.join(', ')}${also}` };
    }
    if (!picked.includes(i)) picked.push(i);
  }
  return { ok: true, columns: picked.map((i) => columns[i] as string), rows: rows.map((r) => picked.map((i) => r[i] ?? '')) };
}
