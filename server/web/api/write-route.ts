/**
 * One write endpoint as a web route: the bearer token verified and the role checked, the body
 * read (bounded) and checked, the operator action run, its result or refusal answered with the
 * HTTP status the refusal maps to, and every attempt (done, refused, denied, failed) written to
 * the audit trail and the log. The audit entry names who the verified token says, never the
 * token; a store that cannot write the entry is logged, and the answer still goes out.
 */
import { coerceError } from '../../../lib/errors.js';
import type { Logger } from '../../../lib/log.js';
import type { AuditRecord, NewAuditRecord } from '../../../lib/store/models.js';
import { roleAllows, type Identity } from '../../../lib/web-auth/auth-types.js';
import { BodyTooLargeError, type Answer, type Route, type WebRequest } from '../routes.js';
import type { WebContext } from '../web-context.js';
import { errorAnswer, errorWord, jsonAnswer } from './api-answer.js';
import { auditResult, refusalStatus } from './refusal-status.js';
import { parseBody, type BodyFields } from './request-body.js';
import { auditNote, type WriteEndpoint } from './write-endpoints.js';

/** Longest message an audit entry keeps. */
const MAX_AUDIT_MESSAGE = 2000;

/** How one request ended, before it is answered and recorded. */
interface Ending {
  answer: Answer;
  message: string;
  target: string;
}

/** The route answering `ep`. */
export function writeRoute(ctx: WebContext, log: Logger, ep: WriteEndpoint): Route {
  return {
    method: ep.method,
    pattern: ep.pattern,
    async handle(req, params) {
      let identity: Identity | undefined;
      const end = await (async (): Promise<Ending> => {
        const target = ep.target(params, {});
        const fail = (status: number, message: string, headers?: Record<string, string>): Ending =>
          ({ answer: errorAnswer(status, errorWord(status), message, headers), message, target });
        const auth = await ctx.auth.authenticate(req.headers.authorization);
        if (!auth.ok) return fail(auth.status, auth.message);
        identity = auth.identity;
        if (!roleAllows(identity.role, ep.role)) {
          return fail(403, `${ep.method} ${ep.pattern} (${ep.action}) needs the ${ep.role} role; ${identity.user} has ${identity.role}`);
        }
        let raw: Buffer;
        try {
          raw = await req.body();
        } catch (err) {
          if (err instanceof BodyTooLargeError) return fail(413, err.message, { Connection: 'close' });
          throw err;
        }
        const parsed = parseBody(raw, req.headers['content-type'], ep.body);
        if (!parsed.ok) return fail(parsed.status, parsed.message);
        return runAction(ctx, log, ep, params, parsed.fields, identity);
      })().catch((raw: unknown): Ending => {
        const err = coerceError(raw);
        log.error('write request failed', { action: ep.action, path: req.url.pathname, error: err.message, stack: err.stack });
        const message = `internal error: ${err.message}`;
        return { answer: errorAnswer(500, 'internal', message), message, target: safeTarget(ep, params) };
      });
      await record(ctx, log, ep, req, identity, end);
      return end.answer;
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

/** Runs the action as `nodepool-web:<user>`; its result (200) or its refusal's status. */
async function runAction(ctx: WebContext, log: Logger, ep: WriteEndpoint, params: Record<string, string>, body: BodyFields, who: Identity): Promise<Ending> {
  const target = ep.target(params, body);
  const env = { store: ctx.store, config: ctx.config(), requestor: `nodepool-web:${who.user}`, now: ctx.clock, log: log.child({ action: ep.action, target }) };
  const result = await ep.run(env, params, body);
  const message = `${result.message}${auditNote(ep, body)}`;
  if (result.ok) return { answer: jsonAnswer(200, result), message, target };
  return { answer: jsonAnswer(refusalStatus(result.refusal), { ok: false, refusal: result.refusal, message: result.message }), message, target };
}

/** Writes the audit entry and the log line; a failed write is logged, never thrown. */
async function record(ctx: WebContext, log: Logger, ep: WriteEndpoint, req: WebRequest, who: Identity | undefined, end: Ending): Promise<void> {
  const status = end.answer.status;
  const entry: NewAuditRecord = {
    time: ctx.clock(),
    user: who?.user ?? null,
    role: who?.role ?? null,
    authenticator: who?.authenticator ?? null,
    action: ep.action,
    target: end.target,
    method: req.method,
    path: req.url.pathname,
    status,
    result: auditResult(status),
    message: end.message.length > MAX_AUDIT_MESSAGE ? `${end.message.slice(0, MAX_AUDIT_MESSAGE)}…` : end.message,
    remote: req.remoteAddress || null,
  };
  const fields = { action: entry.action, target: entry.target, user: entry.user, role: entry.role, status, result: entry.result, remote: entry.remote, message: entry.message };
  if (entry.result === 'ok') log.info('write request', fields);
  else if (entry.result === 'error') log.error('write request', fields);
  else log.warn('write request', fields);
  let saved: AuditRecord | undefined;
  try {
    saved = await ctx.store.recordAudit(entry);
  } catch (err) {
    log.error('could not write the audit entry of a write request', { ...fields, error: coerceError(err).message });
  }
  if (saved) log.debug('audit entry written', { id: saved.id });
}
