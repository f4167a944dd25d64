/**
 * The web status of nodepool-server (node:http, no framework), on `webapp.listen-address` and
 * `webapp.port`: Nodepool 11's read-only lists at its paths, in its shapes (nodepool-views.ts:
 * PrettyTable text or a JSON list of rows, negotiated as Nodepool does) and our richer lists
 * at `/api/<same name>` (status-views.ts: the CLI's tables with their attention lines, or the
 * CLI's `--json`), `/ready`, `/health/live`, `/health/ready`, Prometheus `/metrics` and the
 * dashboard at `/` (polling `/dashboard.json`; the console takes `/` when its module is served,
 * and the dashboard moves to `/dashboard`). The built-in paths answer only GET and HEAD;
 * the routes of the web modules (server/web/routes.ts: write API, build logs, console) are asked
 * first and answer their own methods; unknown paths are 404 (`//x` and `/x/` are `/x`). A write
 * (any method but GET and HEAD) no route takes, and a request whose headers are too large (431),
 * is counted with the write API's refusals (`unrouted`), and 429 past its source's limit. Every
 * answer carries the security headers (security-headers.ts); only the
 * built-in reads carry `Access-Control-Allow-Origin: *`. With `tls` it serves HTTPS. Lists are cached for a second per path, query and format, as Nodepool's
 * webapp does, and `/metrics` is rendered at most once a second whatever the number of
 * scrapes; the health endpoints read only memory, and the connections held at once are
 * bounded, so a storm of clients cannot stall the server.
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import https from 'node:https';
import { BodyTooLargeError, coerceError } from '../../lib/errors.js';
import { AdmissionListener } from '../../lib/http/admission.js';
import { requestPath, type RequestPath } from '../../lib/http/request-path.js';
import type { Logger } from '../../lib/log.js';
import type { LoopHealth } from '../../lib/periodic-loop.js';
import { renderTable } from '../../lib/status/table.js';
import { dashboardData } from './dashboard-data.js';
import { dashboardPage } from './dashboard-page.js';
import { readinessReport } from './health.js';
import { nodepoolFormat, parseStatusPath, selectFields, statusFormat, type StatusFormat } from './negotiate.js';
import { nodepoolText, pythonJson } from '../../lib/status/nodepool-format.js';
import { NODEPOOL_VIEWS } from './nodepool-views.js';
import { MAX_BODY_BYTES, matchRoute, type Answer, type Route, type UnroutedSink, type WebRequest } from './routes.js';
import { SECURITY_HEADERS } from './security-headers.js';
import { STATUS_VIEWS, type StatusSource } from './status-views.js';

export type { Answer } from './routes.js';

/** Options of {@link WebServer.start}. */
export interface WebServerOptions {
  host: string;
  /** 0 picks a free port (see {@link WebServer.port}). */
  port: number;
  log: Logger;
  status: StatusSource;
  /** Every loop's health, for `/health/ready`. */
  loops: () => LoopHealth[];
  /** Whether every provider has started (`/ready`). */
  started: () => boolean;
  /** Whether this server runs the image lifecycle (`on`, or `off (…)` and why), in `/health/ready` JSON. */
  imageLifecycle?: () => string;
  /** The Prometheus exposition (shared by concurrent scrapes: see PrometheusMetrics); `/metrics` is 404 without it. */
  metrics?: { contentType: string; render: () => Promise<string> };
  /** How long a list answer is reused (default 1000 ms; 0 turns the cache off). */
  cacheMs?: number;
  /** Connections held at once; more are refused (default: lib/http/admission.ts). */
  maxConnections?: number;
  /** Routes asked before the built-in paths (write API, build logs, console pages). */
  routes?: readonly Route[];
  /** Serve HTTPS with this PEM certificate (chain) and key, both file paths (`webapp.tls`). */
  tls?: { cert: string; key: string };
  /** Where writes no route takes (and requests with too large headers) are counted; a source over its limit is answered 429. */
  unrouted?: UnroutedSink;
}

const TEXT = 'text/plain; charset=utf-8';
const JSON_TYPE = 'application/json; charset=utf-8';
const FIXED = new Set(['/', '/ready', '/health/live', '/health/ready', '/metrics']);
/** Our richer lists: `/api/node-list` is what `/node-list` answered before it took Nodepool's shape. */
const API_PREFIX = '/api';
/** Nodepool's webapp answers exactly these content types. */
const NODEPOOL_TEXT = 'text/plain; charset=UTF-8';
const NODEPOOL_JSON = 'application/json';

const text = (status: number, body: string, headers?: Record<string, string>): Answer =>
  ({ status, contentType: TEXT, body: body.endsWith('\n') ? body : `${body}\n`, ...(headers ? { headers } : {}) });
const json = (status: number, value: unknown): Answer => ({ status, contentType: JSON_TYPE, body: `${JSON.stringify(value, null, 2)}\n` });

export class WebServer {
  private readonly cache = new Map<string, { answer: Answer; at: number }>();
  private closing: Promise<void> | undefined;
  /** Set once listening (start() resolves only then). */
  private listener: AdmissionListener | undefined;

  private constructor(private readonly server: http.Server, private readonly opts: WebServerOptions) {}

  /** Listens; resolves once bound. Thrown: the listen error (EADDRINUSE, EACCES, …). */
  static async start(opts: WebServerOptions): Promise<WebServer> {
    const server: http.Server = opts.tls
      ? https.createServer({ cert: readFileSync(opts.tls.cert), key: readFileSync(opts.tls.key) })
      : http.createServer();
    const web = new WebServer(server, opts);
    server.on('request', (req, res) => {
      web.handle(req, res).catch((err: unknown) => opts.log.error('web status could not answer', { url: req.url, error: coerceError(err).message }));
    });
    server.on('error', (err) => opts.log.error('web status server error', { error: err.message }));
    server.on('clientError', (err: NodeJS.ErrnoException, socket) => web.clientError(err, socket));
    web.listener = await AdmissionListener.listen(server, {
      host: opts.host, port: opts.port, log: opts.log, what: 'web status', priorityPaths: ['/health/live', '/health/ready', '/ready'],
      ...(opts.maxConnections ? { maxConnections: opts.maxConnections } : {}),
    });
    opts.log.info('web status listening', { address: `${opts.host}:${web.port}` });
    return web;
  }

  /** The bound port. */
  get port(): number {
    return (this.listener as AdmissionListener).port;
  }

  /** Stops listening and closes open connections. Idempotent. */
  stop(): Promise<void> {
    this.closing ??= (this.listener as AdmissionListener).close();
    return this.closing;
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    let answer: Answer;
    let routed = false;
    try {
      const url = requestPath(req.url);
      const matched = this.opts.routes ? matchRoute(this.opts.routes, req.method ?? 'GET', url.pathname) : undefined;
      routed = matched !== undefined;
      if (matched && 'route' in matched) answer = await matched.route.handle(webRequest(req, url), matched.params);
      else if (matched) answer = text(405, `method ${req.method ?? ''} not allowed on ${url.pathname}`, { Allow: allowHeader(matched.allowed) });
      else answer = await this.answer(req);
      if (!(matched && 'route' in matched) && req.method !== 'GET' && req.method !== 'HEAD') answer = this.unroutedWrite(req, url.pathname, answer);
    } catch (raw) {
      if (raw instanceof BodyTooLargeError) {
        answer = text(413, raw.message, { Connection: 'close' });
      } else {
        const err = coerceError(raw);
        this.opts.log.error('web status request failed', { url: req.url, error: err.message });
        answer = text(500, `internal error: ${err.message}`);
      }
    }
    const body = typeof answer.body === 'string' ? Buffer.from(answer.body, 'utf8') : answer.body;
    res.writeHead(answer.status, {
      'Content-Type': answer.contentType, 'Content-Length': body.length, ...SECURITY_HEADERS,
      ...(routed ? {} : { 'Access-Control-Allow-Origin': '*' }), ...answer.headers,
    });
    if (req.method === 'HEAD' || answer.status === 304) res.end();
    else res.end(body);
  }

  /** A write no route took: counted with the write API's refusals, and 429 past its source's limit. */
  private unroutedWrite(req: http.IncomingMessage, pathname: string, answer: Answer): Answer {
    const retryAfter = this.opts.unrouted?.({ remote: req.socket.remoteAddress ?? '', method: req.method ?? '?', path: pathname, status: answer.status, reason: 'unrouted' });
    if (retryAfter === undefined) return answer;
    return text(429, `too many refused writes from this address; try again in ${retryAfter} s`, { 'Retry-After': String(retryAfter) });
  }

  /**
   * A request Node could not read: answered as Node answers it by default (431 for headers too
   * large, 408 for a request timeout, else 400), and a 431 counted as an unrouted write.
   */
  clientError(err: NodeJS.ErrnoException, socket: Duplex): void {
    const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
    if (status === 431) this.opts.unrouted?.({ remote: (socket as Partial<Socket>).remoteAddress ?? '', method: '?', path: '?', status, reason: 'header-too-large' });
    if (err.code !== 'ECONNRESET' && socket.writable) {
      socket.end(`HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? ''}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
    }
    socket.destroy();
  }

  private async answer(req: http.IncomingMessage): Promise<Answer> {
    const url = requestPath(req.url);
    const { route, jsonSuffix } = parseStatusPath(url.pathname);
    const api = route.startsWith(`${API_PREFIX}/`) && STATUS_VIEWS.has(route.slice(API_PREFIX.length));
    const known = api || NODEPOOL_VIEWS.has(route) || (route === '/dashboard' ? jsonSuffix : !jsonSuffix && FIXED.has(route));
    if (!known) return text(404, `not found: ${url.pathname}`);
    if (req.method !== 'GET' && req.method !== 'HEAD') return text(405, `method ${req.method ?? ''} not allowed: the web status is read-only`, { Allow: 'GET, HEAD' });
    if (api) {
      const format = statusFormat(req.headers.accept, jsonSuffix);
      return this.cached(`${route}\u0000${format}\u0000${url.searchParams.toString()}`, req, () => this.renderApi(route.slice(API_PREFIX.length), format, url.searchParams));
    }
    if (NODEPOOL_VIEWS.has(route) || route === '/ready') {
      const format = nodepoolFormat(req.headers.accept, jsonSuffix);
      // Nodepool's webapp fails with a 500 (an IndexError) when the Accept header matches none
      // of text/html, text/plain and application/json; a 406 says what is wrong instead.
      if (format === null) return text(406, 'not acceptable: the lists are text/plain or application/json', listHeaders(Date.now(), 1000));
      if (route === '/ready') return this.ready(format);
      const params = [...url.searchParams.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      return this.cached(`${route}\u0000${format}\u0000${new URLSearchParams(params).toString()}`, req, () => this.renderNodepool(route, format, url.searchParams));
    }
    const format = statusFormat(req.headers.accept, jsonSuffix);
    switch (route) {
      case '/':
        return { status: 200, contentType: 'text/html; charset=utf-8', body: dashboardPage(), headers: { 'Cache-Control': 'no-cache' } };
      case '/dashboard':
        return { ...json(200, await dashboardData(this.opts.status, this.opts.loops(), this.opts.started())), headers: { 'Cache-Control': 'no-store' } };
      case '/health/live':
        return text(200, 'ok');
      case '/health/ready': {
        const report = readinessReport(this.opts.started(), this.opts.loops(), Date.now());
        const status = report.ready ? 200 : 503;
        return format === 'json' ? json(status, this.opts.imageLifecycle ? { ...report, imageLifecycle: this.opts.imageLifecycle() } : report) : text(status, report.text);
      }
      case '/metrics':
        if (!this.opts.metrics) return text(404, 'not found: /metrics');
        return { status: 200, contentType: this.opts.metrics.contentType, body: await this.opts.metrics.render() };
      default:
        return text(404, `not found: ${url.pathname}`);
    }
  }

  /**
   * Nodepool's `/ready`: 503 until every provider has started, then `OK` (not JSON-encoded,
   * whatever the format), with the lists' headers but not cached.
   */
  private ready(format: StatusFormat): Answer {
    const headers = listHeaders(Date.now(), 1000);
    if (!this.opts.started()) return text(503, 'not ready: not every provider has started yet', headers);
    return { status: 200, contentType: format === 'json' ? NODEPOOL_JSON : NODEPOOL_TEXT, body: 'OK', headers };
  }

  /** A list, from the cache when it is fresh; 304 when the client's copy is as new. */
  private async cached(key: string, req: http.IncomingMessage, render: () => Promise<Answer>): Promise<Answer> {
    const ttl = this.opts.cacheMs ?? 1000;
    const now = Date.now();
    let entry = this.cache.get(key);
    if (!entry || now - entry.at >= ttl) {
      entry = { answer: await render(), at: now };
      if (ttl > 0 && entry.answer.status === 200) this.cache.set(key, entry);
      for (const [k, e] of this.cache) if (now - e.at >= ttl) this.cache.delete(k);
    }
    const headers = listHeaders(entry.at, ttl);
    const ifModifiedSince = req.headers['if-modified-since'];
    const since = ifModifiedSince ? Date.parse(ifModifiedSince) : NaN;
    if (entry.answer.status === 200 && Number.isFinite(since) && Math.floor(entry.at / 1000) <= Math.floor(since / 1000)) {
      return { ...entry.answer, status: 304, body: '', headers };
    }
    return { ...entry.answer, headers: { ...entry.answer.headers, ...headers } };
  }

  /** A Nodepool list: `json.dumps` of its rows, or its PrettyTable with the `?fields=` columns. */
  private async renderNodepool(route: string, format: StatusFormat, params: URLSearchParams): Promise<Answer> {
    const list = await (NODEPOOL_VIEWS.get(route) as NonNullable<ReturnType<typeof NODEPOOL_VIEWS.get>>)(this.opts.status, params);
    if (format === 'json') return { status: 200, contentType: NODEPOOL_JSON, body: pythonJson(list.rows) };
    return { status: 200, contentType: NODEPOOL_TEXT, body: nodepoolText(list, params.get('fields'), this.opts.status.clock()) };
  }

  /** One of our richer lists (`/api/…`): the CLI's table and lines, or its `--json`. */
  private async renderApi(route: string, format: StatusFormat, params: URLSearchParams): Promise<Answer> {
    const view = await (STATUS_VIEWS.get(route) as NonNullable<ReturnType<typeof STATUS_VIEWS.get>>)(this.opts.status, params);
    if (format === 'json') return json(200, view.json);
    const fields = params.get('fields');
    const picked = selectFields(view.columns, view.rows, fields, view.idColumn);
    if (!picked.ok) return text(400, picked.message);
    // With `fields` the answer is the table alone, for scripts; without, the CLI's lines follow it.
    const lines = fields ? [] : view.lines;
    return text(200, renderTable(picked.columns, picked.rows) + lines.map((l) => `${l}\n`).join(''));
  }
}

/** `Allow` for a path's methods (GET brings HEAD). */
function allowHeader(methods: readonly string[]): string {
  return [...methods, ...(methods.includes('GET') ? ['HEAD'] : [])].join(', ');
}

/** A route's view of a request; the body is read on demand, bounded. */
function webRequest(req: http.IncomingMessage, url: RequestPath): WebRequest {
  let body: Promise<Buffer> | undefined;
  return {
    method: req.method ?? 'GET',
    url,
    headers: req.headers,
    remoteAddress: req.socket.remoteAddress ?? '',
    body(limit = MAX_BODY_BYTES): Promise<Buffer> {
      body ??= readBody(req, limit);
      return body;
    },
  };
}

/** Reads the body up to `limit` bytes; past it, stops reading and rejects (the answer closes the connection). */
function readBody(req: http.IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) return Promise.reject(new BodyTooLargeError(limit));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.removeAllListeners('data');
        req.pause();
        reject(new BodyTooLargeError(limit));
        return;
      }
      chunks.push(chunk);
    });
    req.once('end', () => resolve(Buffer.concat(chunks)));
    req.once('error', reject);
  });
}

/** Nodepool's list headers: cacheable for `ttlMs` (whole seconds) from `at`. */
function listHeaders(at: number, ttlMs: number): Record<string, string> {
  return {
    'Cache-Control': `public, max-age=${Math.ceil(ttlMs / 1000)}`,
    'Last-Modified': new Date(at).toUTCString(),
    Expires: new Date(at + ttlMs).toUTCString(),
  };
}
