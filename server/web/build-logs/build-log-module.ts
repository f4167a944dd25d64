/**
 * Build logs in the browser (issue 25 §2) as a web module: `GET /api/build/:build/log?offset=N`
 * looks the build up, reads one chunk of its log from the builder that serves it (the record's
 * `logUrl`), and answers the bytes with the builder's `X-Log-Size` and `X-Log-Complete`, or with
 * `&format=json` the console's `{offset, next, size, complete, text}`. Logs never pass through
 * the store. A builder that is gone answers 502 and one that stalls 504, each with a sentence
 * naming the builder, within the module's timeouts.
 *
 * The builder is asked with the build's own log token (issue 31 §9: made with the record, sent
 * with its build job), never with the reader's: a log URL is whatever a builder reported, and a
 * forged one must receive nothing that reads more than that one build's log.
 */
import { IMAGE_ID_RE } from '../../../lib/images/image-file.js';
import type { BuildRecord } from '../../../lib/store/models.js';
import { roleAllows, type Role } from '../../../lib/web-auth/auth-types.js';
import type { Answer, Route, WebModule, WebRequest } from '../routes.js';
import type { WebContext } from '../web-context.js';
import { fetchFromBuilder } from './builder-fetch.js';
import { LOG_COMPLETE_HEADER, LOG_SIZE_HEADER, MAX_LOG_CHUNK_BYTES, logChunkJson, parseOffset, readLogHeaders } from './log-chunk.js';

/** Options of {@link buildLogModule}. */
export interface BuildLogOptions {
  /** How long the builder may take to accept the connection (default 3 s). */
  connectTimeoutMs?: number;
  /** How long, once connected, it may take to answer in full (default 4 s). */
  answerTimeoutMs?: number;
  /**
   * The role a bearer token must carry to read build logs when webapp.auth configures any
   * authenticator (default `read`); without authenticators, logs are read without a token, as
   * the lists are. The reader's token is never passed on to the builder.
   */
  readRole?: Role;
}

/** The build log route. */
export function buildLogModule(ctx: WebContext, opts: BuildLogOptions = {}): WebModule {
  const log = ctx.log.child({ component: 'build-logs' });
  const fetchOpts = {
    connectTimeoutMs: opts.connectTimeoutMs ?? 3000,
    answerTimeoutMs: opts.answerTimeoutMs ?? 4000,
    // The builder's chunk plus room for a 416's or 404's sentence.
    maxBytes: MAX_LOG_CHUNK_BYTES + 4096,
  };
  const route: Route = {
    method: 'GET',
    pattern: '/api/build/:build/log',
    async handle(req, params) {
      const json = req.url.searchParams.get('format') === 'json';
      const say = (status: number, message: string, headers: Record<string, string> = {}): Answer => refusal(json, status, message, headers);
      const refused = await readRefusal(ctx, req, opts.readRole ?? 'read');
      if (refused) return say(refused.status, refused.message);
      const id = params.build as string;
      if (!IMAGE_ID_RE.test(id)) return say(400, `invalid build id ${JSON.stringify(id.slice(0, 100))}: expected <diskimage>-<10 digits or 32 hex>`);
      const offset = parseOffset(req.url.searchParams.get('offset'));
      if (offset === undefined) return say(400, 'offset must be a byte offset (a non-negative integer)');
      const build = await ctx.store.getBuild(id);
      if (!build) return say(404, `no build ${id}`);
      const builder = builderName(build);
      if (!build.logUrl) return say(404, `builder ${builder} serves no build logs`);
      const logToken = await ctx.store.buildLogToken(id);
      if (logToken === undefined) {
        return say(404, `build ${id} has no log token (recorded before build logs had one, or imported): builder ${builder} does not serve its log; `
          + `read ${id}.log in the build-log-dir of ${builder}`);
      }
      let url: URL;
      try {
        url = new URL(build.logUrl);
        if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('not http');
      } catch {
        return say(502, `builder ${builder} gave a log URL that is not an http URL: ${JSON.stringify(build.logUrl.slice(0, 200))}`);
      }
      url.searchParams.set('offset', String(offset));
      const started = Date.now();
      const got = await fetchFromBuilder(url, { ...fetchOpts, authorization: `Bearer ${logToken}` });
      if (!got.ok) {
        log.warn('build log not read from its builder', { buildId: id, builder, url: build.logUrl, status: got.status, why: got.why, ms: Date.now() - started });
        return say(got.status, `builder ${builder} (${url.host}) ${got.why}`);
      }
      const { size, complete } = readLogHeaders(got.headers);
      const passed: Record<string, string> = { ...NO_SNIFF };
      if (size !== undefined) passed[LOG_SIZE_HEADER] = String(size);
      if (complete !== undefined) passed[LOG_COMPLETE_HEADER] = String(complete);
      if (got.status !== 200) {
        // The builder's own sentence (404: log pruned or never there; 416: past the end).
        const text = got.body.toString('utf8').trim().slice(0, 500);
        const status = got.status === 404 || got.status === 416 || got.status === 400 ? got.status : 502;
        return say(status, `builder ${builder}: ${text || `HTTP ${got.status}`}`, passed);
      }
      if (size === undefined || complete === undefined || got.body.length > MAX_LOG_CHUNK_BYTES) {
        return say(502, `builder ${builder} (${url.host}) answered without a log size and state, or more than ${MAX_LOG_CHUNK_BYTES} bytes: not a build log answer`);
      }
      if (json) {
        return { status: 200, contentType: 'application/json; charset=utf-8', body: JSON.stringify(logChunkJson(offset, got.body, size, complete)), headers: passed };
      }
      return { status: 200, contentType: 'text/plain; charset=utf-8', body: got.body, headers: passed };
    },
  };
  return { routes: [route] };
}

/** Log text is never to be read as HTML by a browser, and never cached. */
const NO_SNIFF = { 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' };

/** The builder's name for messages: its hostname on the record, else the log URL's host. */
function builderName(build: BuildRecord): string {
  if (build.builderHostname) return build.builderHostname;
  try {
    return build.logUrl ? new URL(build.logUrl).host : 'unknown';
  } catch {
    return 'unknown';
  }
}

/** Refusals as text, or as `{message}` for the console's JSON reads. */
function refusal(json: boolean, status: number, message: string, headers: Record<string, string>): Answer {
  if (json) return { status, contentType: 'application/json; charset=utf-8', body: JSON.stringify({ message }), headers: { ...NO_SNIFF, ...headers } };
  return { status, contentType: 'text/plain; charset=utf-8', body: `${message}\n`, headers: { ...NO_SNIFF, ...headers } };
}

/** Why a read is refused, or undefined: nothing is asked when webapp.auth names no authenticator. */
async function readRefusal(ctx: WebContext, req: WebRequest, readRole: Role): Promise<{ status: number; message: string } | undefined> {
  if (!ctx.auth.enabled) return undefined;
  const outcome = await ctx.auth.authenticate(req.headers.authorization);
  if (!outcome.ok) return outcome;
  if (!roleAllows(outcome.identity.role, readRole)) return { status: 403, message: `reading build logs needs role ${readRole}; ${outcome.identity.user} has ${outcome.identity.role}` };
  return undefined;
}
