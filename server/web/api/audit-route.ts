/**
 * `GET /api/audit?limit=&before=`: the audit trail of web writes, newest first, for a token
 * of the `read` role or stronger. `limit` 1 to {@link MAX_AUDIT_LIMIT} (default 100); `before`
 * an entry id, to page to older ones (the answer's `next`). Concurrent reads of the same page
 * share one store read (each is still authenticated), so a storm of readers costs the store
 * what one reader does.
 */
import type { AuditRecord } from '../../../lib/store/models.js';
import { roleAllows } from '../../../lib/web-auth/auth-types.js';
import type { Route } from '../routes.js';
import type { WebContext } from '../web-context.js';
import { errorAnswer, errorWord, jsonAnswer } from './api-answer.js';

/** The most entries one answer holds. */
export const MAX_AUDIT_LIMIT = 1000;
const DEFAULT_LIMIT = 100;

/** The query's paging, or why it is refused. Pure. */
export function auditQuery(params: URLSearchParams): { ok: true; limit: number; before?: string } | { ok: false; message: string } {
  const rawLimit = params.get('limit');
  const rawBefore = params.get('before');
  let limit = DEFAULT_LIMIT;
  if (rawLimit !== null && rawLimit !== '') {
    if (!/^\d+$/.test(rawLimit) || Number(rawLimit) < 1 || Number(rawLimit) > MAX_AUDIT_LIMIT) {
      return { ok: false, message: `limit: expected a whole number from 1 to ${MAX_AUDIT_LIMIT}, got ${JSON.stringify(rawLimit.slice(0, 40))}` };
    }
    limit = Number(rawLimit);
  }
  if (rawBefore === null || rawBefore === '') return { ok: true, limit };
  if (!/^\d{1,10}$/.test(rawBefore)) return { ok: false, message: `before: expected an audit entry id (up to 10 digits), got ${JSON.stringify(rawBefore.slice(0, 40))}` };
  return { ok: true, limit, before: rawBefore.padStart(10, '0') };
}

/** The route. */
export function auditRoute(ctx: WebContext): Route {
  const reading = new Map<string, Promise<AuditRecord[]>>();
  const read = (limit: number, before: string | undefined): Promise<AuditRecord[]> => {
    const key = `${limit}:${before ?? ''}`;
    let p = reading.get(key);
    if (!p) {
      p = ctx.store.listAudit({ limit, ...(before !== undefined ? { before } : {}) }).finally(() => reading.delete(key));
      reading.set(key, p);
    }
    return p;
  };
  return {
    method: 'GET',
    pattern: '/api/audit',
    async handle(req) {
      const auth = await ctx.auth.authenticate(req.headers.authorization);
      if (!auth.ok) return errorAnswer(auth.status, errorWord(auth.status), auth.message);
      if (!roleAllows(auth.identity.role, 'read')) return errorAnswer(403, 'forbidden', 'reading the audit trail needs the read role');
      const q = auditQuery(req.url.searchParams);
      if (!q.ok) return errorAnswer(400, 'bad-request', q.message);
      const entries = await read(q.limit, q.before);
      const next = entries.length === q.limit ? (entries.at(-1)?.id ?? null) : null;
      return jsonAnswer(200, { entries, next });
    },
  };
}
