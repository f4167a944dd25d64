/**
 * Request parsing for the web status. Nodepool's lists negotiate as Nodepool's webapp does
 * ({@link nodepoolFormat}); our richer `/api/…` lists as before: a `.json` suffix or an Accept
 * header preferring `application/json` asks for JSON, anything else gets the CLI's text table,
 * and `?fields=a,b` keeps only those columns of the table ({@link selectFields}). Pure.
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

/** What {@link nodepoolFormat} offers, in Nodepool's order (`text/html` is answered as text). */
const NODEPOOL_OFFERS = ['text/html', 'text/plain', 'application/json'] as const;

const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const MEDIA_RANGE_RE = new RegExp(`^(${TOKEN})/(${TOKEN})$`);
const PARAM_RE = new RegExp(`^(${TOKEN})=(${TOKEN}|"(?:[^"\\\\]|\\\\.)*")$`);
const QVALUE_RE = /^(?:0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$/;

interface AcceptRange {
  type: string;
  subtype: string;
  /** Media type parameters (before `q`), lower-cased `name=value`. */
  params: string[];
  q: number;
}

/** Parses an Accept header as webob does; undefined when it is not valid (then every offer is acceptable). */
function parseAccept(header: string): AcceptRange[] | undefined {
  const ranges: AcceptRange[] = [];
  for (const element of header.split(',')) {
    if (element.trim() === '') continue; // RFC 7230 list: empty elements are allowed
    const [range = '', ...rawParams] = element.split(';').map((p) => p.trim());
    const m = MEDIA_RANGE_RE.exec(range);
    if (!m) return undefined;
    const params: string[] = [];
    let q = 1;
    for (const p of rawParams) {
      const pm = PARAM_RE.exec(p);
      if (!pm) return undefined;
      const name = (pm[1] as string).toLowerCase();
      if (name === 'q') {
        if (!QVALUE_RE.test(pm[2] as string)) return undefined;
        q = Number(pm[2]);
        break; // what follows q are accept-extensions, which do not take part in matching
      }
      params.push(`${name}=${(pm[2] as string).toLowerCase()}`);
    }
    const type = (m[1] as string).toLowerCase();
    const subtype = (m[2] as string).toLowerCase();
    ranges.push({ type, subtype, params, q });
  }
  return ranges;
}

/**
 * The format of a Nodepool list, negotiated as Nodepool's webapp does (webob's
 * `acceptable_offers(['text/html', 'text/plain', 'application/json'])`, then the first): each
 * offer takes the q of the most specific range matching it (`*\/*` < `type/*` < `type/subtype`;
 * a range with media type parameters matches none of these offers), offers with q 0 drop out,
 * and the highest q wins, ties going to the earlier offer. So no header, an invalid one, `*\/*`,
 * a browser's and even `application/json, text/plain` give text; JSON only when
 * `application/json` has a strictly higher q than any matching text type, or matches alone.
 * `.json` at the end of the path asks for JSON. Null when the header matches none of the
 * offers: Nodepool then fails with an IndexError (a 500); the caller answers 406 instead.
 */
export function nodepoolFormat(accept: string | undefined, jsonSuffix: boolean): StatusFormat | null {
  if (jsonSuffix) return 'json';
  if (accept === undefined) return 'text';
  const ranges = parseAccept(accept);
  if (!ranges) return 'text';
  let best: { offer: string; q: number } | undefined;
  for (const offer of NODEPOOL_OFFERS) {
    const [type, subtype] = offer.split('/') as [string, string];
    let q: number | undefined;
    let specificity = 0;
    for (const r of ranges) {
      let s: number;
      if (r.type === '*' && r.subtype === '*') s = 1;
      else if (r.subtype === '*') s = r.type === type ? 2 : 0;
      else s = r.type === type && r.subtype === subtype && r.params.length === 0 ? 3 : 0;
      if (s > specificity) {
        specificity = s;
        q = r.q;
      }
    }
    if (q !== undefined && q > 0 && (!best || q > best.q)) best = { offer, q };
  }
  if (!best) return null;
  return best.offer === 'application/json' ? 'json' : 'text';
}
