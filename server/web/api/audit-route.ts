/**
 * `GET /api/audit?limit=&before=`: the audit trail of web writes, newest first, for a token
 * of the `read` role or stronger. `limit` 1 to {@link MAX_AUDIT_LIMIT} (default 100); `before`
 * an entry id, to page to older ones (the answer's `next`). Concurrent reads of the same page
 * share one store read (each is still authenticated), so a storm of readers costs the store
 * what one reader does. The first page also holds `refusals`: the counts of refused writes no
 * verified token named, per source and minute, newest first (refusal-ledger.ts).
 */
import type { AuditRecord } from '../../../lib/store/models.js';
import { roleAllows } from '../../../lib/web-auth/auth-types.js';
import type { Route } from '../routes.js';
import type { WebContext } from '../web-context.js';
import type { RefusalLedger } from './refusal-ledger.js';
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

/** Refusal aggregates an answer holds. */
const REFUSALS_SHOWN = 100;

/** The route; `ledger` gives the counts of refused writes (`refusals`, newest minute first). */
export function auditRoute(ctx: WebContext, ledger: RefusalLedger): Route {
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
  let counting: Promise<Awaited<ReturnType<RefusalLedger['recent']>>> | undefined;
  const readRefusals = (): ReturnType<RefusalLedger['recent']> => {
    counting ??= ledger.recent(REFUSALS_SHOWN).finally(() => { counting = undefined; });
    return counting;
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
      const [entries, refusals] = await Promise.all([read(q.limit, q.before), q.before === undefined ? readRefusals() : Promise.resolve([])]);
      const next = entries.length === q.limit ? (entries.at(-1)?.id ?? null) : null;
      return jsonAnswer(200, { entries, next, refusals });
    },
  };
}
