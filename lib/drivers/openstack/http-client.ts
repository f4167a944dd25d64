/**
 * The HTTP(S) client of one cloud session: keep-alive connections through one agent per
 * session (a Nova poll reuses the socket of the last one instead of opening a new TCP
 * connection), a bounded body (a larger answer is an error, never a silent cut), an idle
 * timeout, an abort signal, and one retry of a GET or HEAD after a connection reset or a
 * 5xx answer. Other methods are never retried: the cloud may have acted on them.
 */
import http from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import { CloudError, coerceError, ResetError } from '../../errors.js';
import { sleep } from '../../lifecycle.js';
import { processSecrets, REDACTED, redactJson, type SecretRegistry } from '../../redact.js';

/** Stands for a redacted secret while an error body is cut down to its message. */
const MARK = '\u0000redacted\u0000';

/** A response with its body read (bounded). */
export interface HttpResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** The call for messages: `Glance GET /v2/images/<id>`. */
  call: string;
}

/** Options of one {@link HttpClient.request}. */
export interface HttpRequestOptions {
  method: string;
  headers?: Record<string, string | number>;
  body?: string;
  /** Idle timeout of this request (default: the client's). */
  timeoutMs?: number;
  /** Aborting destroys the request; it then rejects with a {@link CloudError}. */
  signal?: AbortSignal | undefined;
  /** The service named in messages (`Keystone`, `Glance`, `Nova`, `Neutron`); default `OpenStack`. */
  service?: string;
}

/** Options of {@link HttpClient}. */
export interface HttpClientOptions {
  /** TLS settings for https URLs (CA, verification). */
  tls?: https.AgentOptions;
  /** Idle timeout of a request (default 60 s). */
  timeoutMs?: number;
  /** Largest body read from an answer (default 16 MiB). */
  maxBodyBytes?: number;
  /** Pause before retrying a GET that got a 5xx answer (default 500 ms); a reset is retried at once. */
  retryDelayMs?: number;
  /** How long an unused connection is kept open (default 10 s; a server's `Keep-Alive: timeout` hint may shorten it). */
  idleSocketMs?: number;
}

/** What a client has done so far, for tests and debugging. */
export interface HttpClientStats {
  /** TCP (or TLS) connections opened. */
  connectionsOpened: number;
  /** Requests sent, retries included. */
  requests: number;
  /** GETs sent again after a reset or a 5xx. */
  retries: number;
}

/** Error codes of a connection the peer dropped (a stale keep-alive socket, a restarting service). */
const RESET_CODES = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED']);
const RETRYABLE_METHODS = new Set(['GET', 'HEAD']);

/** The call as messages name it: service, method and path (no host, no query). Pure. */
export function callName(service: string | undefined, method: string, url: string): string {
  let path = url;
  try {
    path = new URL(url).pathname;
  } catch {
    // not a URL: name it as given
  }
  return `${service ?? 'OpenStack'} ${method} ${path}`;
}

/**
 * The readable message of an OpenStack error body (JSON `error.message`, `message`, or
 * HTML/text), with secrets redacted (the values of secret keys, `password: x` pairs, and every
 * secret in `secrets`, by default the process's), at most 500 characters. A Keystone or proxy
 * that echoes the request would otherwise put the password in the message.
 */
export function errorMessage(body: string, secrets: SecretRegistry = processSecrets): string {
  let text = body.trim();
  try {
    const j = redactJson(JSON.parse(text)) as Record<string, unknown>;
    const inner = (typeof j.error === 'object' && j.error ? j.error : j) as Record<string, unknown>;
    const nested = Object.values(j).find((v): v is Record<string, unknown> => typeof v === 'object' && v !== null && 'message' in v);
    const msg = inner.message ?? inner.title ?? nested?.message;
    text = typeof msg === 'string' && msg ? msg : JSON.stringify(j);
  } catch {
    // not JSON: webob's text/plain or HTML
  }
  // Redacted before the text is cut (so no part of a secret is left), with a marker that the
  // tag stripping below leaves alone, turned into `<redacted>` at the end.
  text = secrets.redact(text, MARK);
  // webob (Glance) writes "400 Bad Request", a blank line, then the message, whose later
  // lines (e.g. a jsonschema dump) are not worth a log line; in text/plain they are joined
  // with double spaces.
  const stripped = text.replace(/<title>[^<]*<\/title>/i, '').replace(/<br\s*\/?>/gi, '\n').replace(/<[^>]+>/g, '\n');
  const paragraphs = stripped.split(/\n[ \t]*\n/).map((p) => p.trim()).filter((p) => p && !/^\d{3}( [A-Za-z-]+)+$/.test(p));
  const first = (paragraphs[0] ?? '').split(/[ \t]*\n\s*|\s{2,}/)[0] ?? '';
  return (first.length > 500 ? `${first.slice(0, 500)}…` : first).replaceAll(MARK, REDACTED);
}

/** `cloud said: <the message of an error body>` (redacted, see {@link errorMessage}), or `cloud said nothing`. */
export function errorSaid(body: string, secrets: SecretRegistry = processSecrets): string {
  const said = errorMessage(body, secrets);
  return said ? `cloud said: ${said}` : 'cloud said nothing';
}

/** The {@link CloudError} of a status the caller did not expect: `Nova GET /v2.1/servers/x failed with 500; cloud said: …` (redacted). */
export function statusError(res: Pick<HttpResponse, 'call' | 'status' | 'body'>, secrets: SecretRegistry = processSecrets): CloudError {
  return new CloudError(`${res.call} failed with ${res.status}; ${errorSaid(res.body, secrets)}`, { status: res.status });
}

/** One cloud's HTTP(S) connections. {@link close} ends them. */
export class HttpClient {
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;
  private readonly timeoutMs: number;
  private readonly maxBodyBytes: number;
  private readonly retryDelayMs: number;
  private readonly counters: HttpClientStats = { connectionsOpened: 0, requests: 0, retries: 0 };

  constructor(opts: HttpClientOptions = {}) {
    const common = { keepAlive: true, timeout: opts.idleSocketMs ?? 10_000, maxFreeSockets: 16, scheduling: 'lifo' as const };
    this.httpAgent = new http.Agent(common);
    this.httpsAgent = new https.Agent({ ...common, ...opts.tls });
    for (const agent of [this.httpAgent, this.httpsAgent]) this.countConnections(agent);
    this.timeoutMs = opts.timeoutMs ?? 60_000;
    this.maxBodyBytes = opts.maxBodyBytes ?? 16 * 1024 * 1024;
    this.retryDelayMs = opts.retryDelayMs ?? 500;
  }

  /** Counters since the client was made. */
  get stats(): Readonly<HttpClientStats> {
    return { ...this.counters };
  }

  /** Closes idle connections and stops keeping any (requests in flight finish). */
  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }

  /**
   * One request; a GET or HEAD is sent once more after a connection reset or a 5xx answer.
   * Thrown: {@link CloudError} when the connection fails, the answer is larger than the
   * body limit, nothing arrives within the timeout, or `signal` aborts. Any status resolves.
   */
  async request(url: string, o: HttpRequestOptions): Promise<HttpResponse> {
    const retryable = RETRYABLE_METHODS.has(o.method.toUpperCase());
    for (let attempt = 0; ; attempt++) {
      let res: HttpResponse;
      try {
        res = await this.send(url, o);
      } catch (err) {
        if (!retryable || attempt > 0 || !(err instanceof ResetError) || o.signal?.aborted) throw unwrap(err);
        this.counters.retries += 1;
        continue;
      }
      if (!retryable || attempt > 0 || res.status < 500) return res;
      this.counters.retries += 1;
      await sleep(this.retryDelayMs, o.signal).catch((err: unknown) => {
        throw new CloudError(`${res.call} aborted`, { cause: err, retryable: false });
      });
    }
  }

  private countConnections(agent: http.Agent): void {
    // The agent's own createConnection is what a new socket goes through; count it there.
    const a = agent as http.Agent & { createConnection: (...args: unknown[]) => Socket };
    const create = a.createConnection.bind(agent);
    a.createConnection = (...args: unknown[]): Socket => {
      this.counters.connectionsOpened += 1;
      return create(...args);
    };
  }

  private send(url: string, o: HttpRequestOptions): Promise<HttpResponse> {
    const call = callName(o.service, o.method, url);
    const label = `${o.service ?? 'OpenStack'} ${o.method} ${url}`;
    const timeoutMs = o.timeoutMs ?? this.timeoutMs;
    return new Promise<HttpResponse>((resolve, reject) => {
      let u: URL;
      try {
        u = new URL(url);
      } catch (err) {
        reject(new CloudError(`${label}: not a URL`, { cause: err }));
        return;
      }
      const tls = u.protocol === 'https:';
      const headers: Record<string, string | number> = { ...o.headers };
      if (o.body !== undefined) headers['Content-Length'] = Buffer.byteLength(o.body);
      this.counters.requests += 1;
      const req = (tls ? https : http).request(u, { method: o.method, headers, agent: tls ? this.httpsAgent : this.httpAgent });
      let settled = false;
      const finish = (err: Error | undefined, res?: HttpResponse): void => {
        if (settled) return;
        settled = true;
        o.signal?.removeEventListener('abort', onAbort);
        if (err) {
          req.destroy();
          reject(err);
        } else resolve(res as HttpResponse);
      };
      const onAbort = (): void => finish(new CloudError(`${call} aborted`, { cause: o.signal?.reason, retryable: false }));
      // Listened to before an abort can destroy the request: its 'socket hang up' must not go uncaught.
      req.on('error', (err) => finish(transportError(label, err)));
      if (o.signal?.aborted) return onAbort();
      o.signal?.addEventListener('abort', onAbort, { once: true });
      req.setTimeout(timeoutMs, () => finish(new CloudError(`${label}: no answer within ${timeoutMs} ms`)));
      req.on('response', (res) => {
        const status = res.statusCode ?? 0;
        const declared = Number(res.headers['content-length']);
        if (declared > this.maxBodyBytes) {
          return finish(new CloudError(`${call}: answer ${status} announces ${declared} bytes, more than the limit of ${this.maxBodyBytes}`, { status }));
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > this.maxBodyBytes) finish(new CloudError(`${call}: answer ${status} is larger than the limit of ${this.maxBodyBytes} bytes`, { status }));
          else chunks.push(c);
        });
        res.on('end', () => finish(undefined, { status, headers: res.headers, body: Buffer.concat(chunks).toString('utf8'), call }));
        // A connection dropped mid-body ends the response with an error ('aborted') or without 'end'.
        const cut = (): void => {
          const of = Number.isFinite(declared) ? ` of ${declared}` : '';
          finish(new ResetError(new CloudError(`${label} failed: the connection closed after ${size}${of} bytes of a ${status} answer`)));
        };
        res.on('error', cut);
        res.on('close', () => {
          if (!res.complete) cut();
        });
      });
      req.end(o.body);
    });
  }
}

function unwrap(err: unknown): Error {
  return err instanceof ResetError ? err.error : coerceError(err);
}

function transportError(label: string, err: Error): Error {
  if (err instanceof CloudError) return err;
  const e = new CloudError(processSecrets.scrub(`${label} failed: ${err.message}`), { cause: err });
  const code = (err as NodeJS.ErrnoException).code;
  return code && RESET_CODES.has(code) ? new ResetError(e) : e;
}
