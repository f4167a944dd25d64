/**
 * One read of a build log from the builder that serves it (issue 25 §2), bounded in time and
 * size: the connection must be up within `connectTimeoutMs` and the whole answer in within
 * `answerTimeoutMs` after it, and at most `maxBytes` of body are taken. A builder that is gone,
 * stalls or answers nonsense gives a {@link BuilderFetchFailure} saying which and why; this
 * never throws and never hangs.
 */
import http from 'node:http';
import https from 'node:https';
import { FetchTimeout } from '../../../lib/errors.js';

/** Options of {@link fetchFromBuilder}. */
export interface BuilderFetchOptions {
  connectTimeoutMs: number;
  answerTimeoutMs: number;
  maxBytes: number;
  /** `Authorization` to send: `Bearer <the build's log token>` (never logged). */
  authorization?: string;
}

/** What the builder answered (any status: its 404 and 416 are passed on). */
export interface BuilderAnswer {
  ok: true;
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** Why there is no answer: 502 (refused, reset, bad answer) or 504 (no connection or answer in time). */
export interface BuilderFetchFailure {
  ok: false;
  status: 502 | 504;
  /** A phrase to follow "builder X ": `is unreachable: connection refused (ECONNREFUSED)`. */
  why: string;
}

/** GETs `url`; resolves with the answer or why there is none. */
export function fetchFromBuilder(url: URL, opts: BuilderFetchOptions): Promise<BuilderAnswer | BuilderFetchFailure> {
  return new Promise((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    let settled = false;
    const done = (r: BuilderAnswer | BuilderFetchFailure): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(r);
    };
    const arm = (ms: number, why: string): void => {
      clearTimeout(timer);
      timer = setTimeout(() => req.destroy(new FetchTimeout(why)), ms);
    };
    // No keep-alive agent: an idle socket to a builder must not outlive the request.
    const req = (url.protocol === 'https:' ? https : http).request(url, { method: 'GET', agent: false, headers: { Accept: 'text/plain', ...(opts.authorization ? { Authorization: opts.authorization } : {}) } });
    arm(opts.connectTimeoutMs, `did not accept a connection within ${seconds(opts.connectTimeoutMs)}`);
    req.on('socket', (socket) => {
      const answering = (): void => arm(opts.answerTimeoutMs, `accepted the connection but did not answer within ${seconds(opts.answerTimeoutMs)}`);
      if (socket.connecting) socket.once('connect', answering);
      else answering();
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let length = 0;
      res.on('data', (chunk: Buffer) => {
        length += chunk.length;
        if (length > opts.maxBytes) {
          done({ ok: false, status: 502, why: `answered more than ${opts.maxBytes} bytes` });
          req.destroy();
          return;
        }
        chunks.push(chunk);
      });
      res.on('end', () => done({ ok: true, status: res.statusCode ?? 502, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', (err) => fail(err));
    });
    const fail = (err: Error): void => {
      if (err instanceof FetchTimeout) return done({ ok: false, status: 504, why: err.why });
      const code = (err as NodeJS.ErrnoException).code;
      done({ ok: false, status: 502, why: `is unreachable: ${describe(code, err.message)}` });
    };
    req.on('error', fail);
    // Closed with neither an answer nor an error (a cut connection some node version reports so).
    req.on('close', () => done({ ok: false, status: 502, why: 'closed the connection before its answer was complete' }));
    req.end();
  });
}

function seconds(ms: number): string {
  return `${Math.round(ms / 100) / 10} s`;
}

const CODES: Record<string, string> = {
  ECONNREFUSED: 'connection refused (nothing listens there: the builder or its port is down)',
  ECONNRESET: 'connection reset',
  EHOSTUNREACH: 'no route to host',
  ENETUNREACH: 'network unreachable',
  ENOTFOUND: 'host name not found',
  EAI_AGAIN: 'host name lookup failed',
};

function describe(code: string | undefined, message: string): string {
  const known = code ? CODES[code] : undefined;
  return known ? `${known} (${code})` : message;
}
