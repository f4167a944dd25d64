/**
 * One write endpoint as a web route. A request from a page on another origin, or one that does
 * not declare a JSON body, is refused before anything else (lib/http/write-guard.ts); then the
 * bearer token is verified and the role checked, the body read (bounded) and checked, the
 * operator action run, and its result or refusal answered with the HTTP status the refusal maps
 * to. A request refused before its action runs is never an audit entry of its own: what no
 * verified token names (refused by the guard, no or a bad token, no `webapp.auth`) is counted
 * per source and minute by the {@link RefusalLedger}, and a verified user's refusal (a role too
 * weak or none, a bad body) per user and minute, so no account at the identity provider can
 * push the trail out. Past a source's or user's limit of refusals the answer is 429. The trail
 * holds only actions a permitted role began: one entry each, written as `attempted` before the
 * action runs (not run when that cannot be written), then completed in place with its outcome;
 * an outcome that cannot be written is logged, the entry stays `attempted` and the answer still
 * goes out. Entries name who the verified token says, never the token.
 */
import { BodyTooLargeError, coerceError } from '../../../lib/errors.js';
import { contentTypeProblem, crossOriginProblem } from '../../../lib/http/write-guard.js';
import type { Logger } from '../../../lib/log.js';
import { escapeControlChars } from '../../../lib/outside-text.js';
import type { AuditOutcome } from '../../../lib/store/models.js';
import type { AuditRecord, NewAuditRecord } from '../../../lib/store/models.js';
import { roleAllows, type Identity } from '../../../lib/web-auth/auth-types.js';
import { type Answer, type Route, type WebRequest } from '../routes.js';
import type { WebContext } from '../web-context.js';
import { errorAnswer, errorWord, jsonAnswer } from './api-answer.js';
import type { RefusalLedger } from './refusal-ledger.js';
import { auditResult, refusalStatus } from './refusal-status.js';
import { parseBody, type BodyFields } from './request-body.js';
import { auditNote, type WriteEndpoint } from './write-endpoints.js';

/** Longest message an audit entry keeps. */
const MAX_AUDIT_MESSAGE = 2000;

/** Who a verified token names: an identity with a role, or a subject with none. */
type Who = Pick<Identity, 'user' | 'authenticator'> & { role: Identity['role'] | null };

/** How one request ended, before it is answered and recorded. */
interface Ending {
  answer: Answer;
  message: string;
  target: string;
}

/** The route answering `ep`; refusals no verified token names are counted by `ledger`. */
export function writeRoute(ctx: WebContext, log: Logger, ep: WriteEndpoint, ledger: RefusalLedger): Route {
  return {
    method: ep.method,
    pattern: ep.pattern,
    async handle(req, params) {
      const remote = req.remoteAddress;
      const tooMany = (user?: string): Answer => {
        const s = ledger.retryAfterSeconds(remote, user);
        return errorAnswer(429, 'too-many-requests', `too many refused writes from ${user ? `user ${user}` : 'this address'}; try again in ${s} s`, { 'Retry-After': String(s) });
      };
      /** A refusal no verified token names: counted, not an entry. */
      const anonymous = (status: 401 | 403 | 415, reason: string, message: string): Answer => {
        if (ledger.note({ remote, method: req.method, path: req.url.pathname, status, reason })) return tooMany();
        return errorAnswer(status, errorWord(status), message);
      };
      /** A verified user's refusal before the action: counted under the user, not an entry. */
      const userRefusal = (who: Who, status: number, reason: string, message: string, headers?: Record<string, string>): Answer => {
        if (ledger.note({ remote, method: req.method, path: req.url.pathname, status, reason, user: who.user })) return tooMany(who.user);
        return errorAnswer(status, errorWord(status), message, headers);
      };

      const guard = crossOriginProblem(req.headers) ?? contentTypeProblem(req.headers['content-type']);
      if (guard) return anonymous(guard.status, guard.reason, guard.message);
      const auth = await ctx.auth.authenticate(req.headers.authorization);
      if (!auth.ok) {
        if (auth.subject) return userRefusal({ ...auth.subject, role: null }, auth.status, 'no-role', auth.message);
        const reason = auth.status === 403 ? 'not-configured' : req.headers.authorization ? 'bad-token' : 'no-token';
        return anonymous(auth.status, reason, auth.message);
      }
      const who = auth.identity;
      if (!roleAllows(who.role, ep.role)) {
        return userRefusal(who, 403, 'role', `${ep.method} ${ep.pattern} (${ep.action}) needs the ${ep.role} role; ${who.user} has ${who.role}`);
      }
      let raw: Buffer;
      try {
        raw = await req.body();
      } catch (err) {
        if (err instanceof BodyTooLargeError) return userRefusal(who, 413, 'body', err.message, { Connection: 'close' });
        throw err;
      }
      const parsed = parseBody(raw, req.headers['content-type'], ep.body);
      if (!parsed.ok) return userRefusal(who, parsed.status, 'body', parsed.message);
      const needs = ep.needs?.(parsed.fields) ?? ep.role;
      if (!roleAllows(who.role, needs)) {
        return userRefusal(who, 403, 'role', `${ep.method} ${ep.pattern} (${ep.action}) with these fields needs the ${needs} role; ${who.user} has ${who.role}`);
      }
      return runAudited(ctx, log, ep, req, params, parsed.fields, who);
    },
  };
}

function safeTarget(ep: WriteEndpoint, params: Record<string, string>): string {
  try {
    return ep.target(params, {});
  } catch {
    return Object.values(params).join('/');
  }
}

/**
 * Writes the attempt, runs the action as `nodepool-web:<user>`, writes its outcome over the
 * attempt: its result (200), its refusal's status, or 500. An attempt that cannot be written
 * runs nothing (503).
 */
async function runAudited(ctx: WebContext, log: Logger, ep: WriteEndpoint, req: WebRequest, params: Record<string, string>, body: BodyFields, who: Identity): Promise<Answer> {
  const target = safeTarget(ep, params);
  let bodyTarget = target;
  try {
    bodyTarget = ep.target(params, body);
  } catch {
    // The params' target serves.
  }
  const attempt = entryOf(ctx, ep, req, who, bodyTarget, 0, `${ep.action} ${bodyTarget} attempted by ${who.user}`);
  let attempted: AuditRecord;
  try {
    attempted = await ctx.store.recordAudit(attempt);
  } catch (err) {
    const message = `the audit trail cannot be written, so ${ep.action} was not run: ${coerceError(err).message}`;
    log.error('write request not run: its attempt could not be written to the audit trail', { action: ep.action, target: bodyTarget, user: who.user, error: coerceError(err).message });
    return errorAnswer(503, 'audit-unavailable', message);
  }
  const end = await runAction(ctx, log, ep, params, body, who, bodyTarget).catch((raw: unknown): Ending => {
    const err = coerceError(raw);
    log.error('write request failed', { action: ep.action, path: req.url.pathname, error: err.message, stack: err.stack });
    const message = `internal error: ${err.message}`;
    return { answer: errorAnswer(500, 'internal', message), message, target: bodyTarget };
  });
  await complete(ctx, log, ep, req, who, attempted.id, end);
  return end.answer;
}

async function runAction(ctx: WebContext, log: Logger, ep: WriteEndpoint, params: Record<string, string>, body: BodyFields, who: Identity, target: string): Promise<Ending> {
  const env = { store: ctx.store, config: ctx.config(), requestor: `nodepool-web:${who.user}`, now: ctx.clock, log: log.child({ action: ep.action, target }) };
  const result = await ep.run(env, params, body);
  const message = `${result.message}${auditNote(ep, body)}`;
  if (result.ok) return { answer: jsonAnswer(200, result), message, target };
  return { answer: jsonAnswer(refusalStatus(result.refusal), { ok: false, refusal: result.refusal, message: result.message }), message, target };
}

function entryOf(ctx: WebContext, ep: WriteEndpoint, req: WebRequest, who: Who, target: string, status: number, message: string): NewAuditRecord {
  return {
    time: ctx.clock(),
    user: who.user,
    role: who.role,
    authenticator: who.authenticator,
    action: ep.action,
    // From the URL and the body: one printable line, so it forges no line where it is shown.
    target: escapeControlChars(target),
    method: req.method,
    path: escapeControlChars(req.url.pathname),
    status,
    result: status === 0 ? 'attempted' : auditResult(status),
    message: escapeControlChars(message.length > MAX_AUDIT_MESSAGE ? `${message.slice(0, MAX_AUDIT_MESSAGE)}…` : message),
    remote: req.remoteAddress || null,
  };
}

/**
 * Writes the outcome over the action's `attempted` entry `id`, and the log line. An entry gone
 * meanwhile (pruned) gets the outcome as a new entry; a failed write is logged, never thrown,
 * and leaves the entry `attempted`.
 */
async function complete(ctx: WebContext, log: Logger, ep: WriteEndpoint, req: WebRequest, who: Who, id: string, end: Ending): Promise<void> {
  const entry = entryOf(ctx, ep, req, who, end.target, end.answer.status, end.message);
  const fields = { id, action: entry.action, target: entry.target, user: entry.user, role: entry.role, status: entry.status, result: entry.result, remote: entry.remote, message: entry.message };
  if (entry.result === 'ok') log.info('write request', fields);
  else if (entry.result === 'error') log.error('write request', fields);
  else log.warn('write request', fields);
  const outcome: AuditOutcome = { status: entry.status, result: entry.result as AuditOutcome['result'], message: entry.message };
  try {
    const saved = await ctx.store.completeAudit(id, outcome) ?? await ctx.store.recordAudit(entry);
    log.debug('audit entry completed', { id: saved.id, result: saved.result });
  } catch (err) {
    log.error('could not write the audit entry of a write request', { ...fields, error: coerceError(err).message });
  }
}
