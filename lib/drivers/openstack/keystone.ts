/**
 * Keystone v3 password authentication and the service catalog: a {@link KeystoneSession}
 * holds a project- (or domain-) scoped token, re-authenticates shortly before it expires,
 * and retries a request once after a 401 from a service. Plain node:http(s), no client
 * library.
 */
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import { CloudError, coerceError } from '../../errors.js';
import { silentLogger, type Logger } from '../../log.js';
import type { CloudCredentials, EndpointInterface } from './clouds-yaml.js';

/** One endpoint of a catalog entry, as Keystone returns it. */
export interface CatalogEndpoint {
  url: string;
  interface: string;
  region?: string | null;
  region_id?: string | null;
}

/** One service of the catalog in a v3 token. */
export interface CatalogService {
  type: string;
  name?: string;
  endpoints: CatalogEndpoint[];
}

/** What to look for in the catalog. */
export interface EndpointQuery {
  type: string;
  interface: EndpointInterface;
  /** Absent: any region (the first match). */
  region?: string;
}

/**
 * Picks the URL of service `type` at `interface` (and `region` when given) from a catalog.
 * Pure. Thrown: {@link CloudError} naming what is in the catalog when nothing matches.
 */
export function selectEndpoint(catalog: readonly CatalogService[], q: EndpointQuery): string {
  const services = catalog.filter((s) => s.type === q.type);
  for (const s of services) {
    const hit = s.endpoints.find((e) => e.interface === q.interface && (q.region === undefined || (e.region_id ?? e.region) === q.region));
    if (hit) return hit.url.replace(/\/+$/, '');
  }
  const have = services.flatMap((s) => s.endpoints.map((e) => `${e.interface}@${e.region_id ?? e.region ?? '-'}`));
  const where = q.region === undefined ? `interface ${q.interface}` : `interface ${q.interface} in region ${q.region}`;
  const seen = services.length ? `it has ${have.join(', ') || 'no endpoints'}` : `types present: ${[...new Set(catalog.map((s) => s.type))].join(', ') || 'none'}`;
  throw new CloudError(`no ${q.type} endpoint with ${where} in the service catalog (${seen})`);
}

/** `…/v3/auth/tokens` for an auth URL given with or without the `/v3` suffix. Pure. */
export function tokensUrl(authUrl: string): string {
  const base = authUrl.replace(/\/+$/, '');
  return /\/v3$/.test(base) ? `${base}/auth/tokens` : `${base}/v3/auth/tokens`;
}

/** The JSON body of `POST /v3/auth/tokens` for password auth with a project or domain scope. Pure. */
export function authRequestBody(c: CloudCredentials): Record<string, unknown> {
  const userDomain = c.userDomainId ? { id: c.userDomainId } : { name: c.userDomainName };
  let scope: Record<string, unknown>;
  if (c.projectId) scope = { project: { id: c.projectId } };
  else if (c.projectName) scope = { project: { name: c.projectName, domain: c.projectDomainId ? { id: c.projectDomainId } : { name: c.projectDomainName } } };
  else if (c.domainId) scope = { domain: { id: c.domainId } };
  else scope = { domain: { name: c.domainName } };
  return {
    auth: {
      identity: { methods: ['password'], password: { user: { name: c.username, domain: userDomain, password: c.password } } },
      scope,
    },
  };
}

/** The readable message of an OpenStack error body (JSON `error.message`, `message`, or HTML/text). Pure. */
export function errorMessage(body: string): string {
  let text = body.trim();
  try {
    const j = JSON.parse(text) as Record<string, unknown>;
    const inner = (typeof j.error === 'object' && j.error ? j.error : j) as Record<string, unknown>;
    const nested = Object.values(j).find((v): v is Record<string, unknown> => typeof v === 'object' && v !== null && 'message' in v);
    const msg = inner.message ?? inner.title ?? nested?.message;
    if (typeof msg === 'string' && msg) text = msg;
  } catch {
    // not JSON: webob's text/plain or HTML
  }
  // webob (Glance) writes "400 Bad Request", a blank line, then the message, whose later
  // lines (e.g. a jsonschema dump) are not worth a log line; in text/plain they are joined
  // with double spaces.
  const stripped = text.replace(/<title>[^<]*<\/title>/i, '').replace(/<br\s*\/?>/gi, '\n').replace(/<[^>]+>/g, '\n');
  const paragraphs = stripped.split(/\n[ \t]*\n/).map((p) => p.trim()).filter((p) => p && !/^\d{3}( [A-Za-z-]+)+$/.test(p));
  const first = (paragraphs[0] ?? '').split(/[ \t]*\n\s*|\s{2,}/)[0] ?? '';
  return first.length > 500 ? `${first.slice(0, 500)}…` : first;
}

/** A response with its body read (bounded). */
export interface HttpResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** Options of one {@link KeystoneSession.httpRequest}. */
export interface HttpRequestOptions {
  method: string;
  headers?: Record<string, string | number>;
  body?: string;
  timeoutMs?: number;
  signal?: AbortSignal;
}

const MAX_BODY = 16 * 1024 * 1024;

/** Options of {@link KeystoneSession.authenticate}. */
export interface KeystoneSessionOptions {
  log?: Logger;
  /** Per-request timeout (default 60 s). */
  timeoutMs?: number;
  /** Re-authenticate when the token has less than this left (default 5 min, at most half its lifetime). */
  reauthMarginMs?: number;
  /** Clock, for tests. */
  now?: () => number;
}

interface TokenState {
  token: string;
  expiresAt: number;
  issuedAt: number;
  catalog: CatalogService[];
  projectId?: string;
}

/** A Keystone v3 session: token, catalog, and authenticated JSON requests to services. */
export class KeystoneSession {
  private state: TokenState;
  private reauth?: Promise<TokenState>;
  private readonly log: Logger;

  private constructor(
    readonly creds: CloudCredentials,
    private readonly opts: Required<Omit<KeystoneSessionOptions, 'log'>>,
    private readonly tls: https.AgentOptions,
    log: Logger,
    state: TokenState,
  ) {
    this.log = log;
    this.state = state;
  }

  /**
   * Authenticates and returns a session.
   * Thrown: {@link CloudError} (status 401 for bad credentials) with Keystone's message.
   */
  static async authenticate(creds: CloudCredentials, opts: KeystoneSessionOptions = {}): Promise<KeystoneSession> {
    const log = (opts.log ?? silentLogger()).child({ component: 'keystone', cloud: creds.cloudName });
    const tls: https.AgentOptions = { rejectUnauthorized: creds.verify };
    if (creds.cacert) tls.ca = await readFile(creds.cacert);
    const full = { timeoutMs: opts.timeoutMs ?? 60_000, reauthMarginMs: opts.reauthMarginMs ?? 300_000, now: opts.now ?? Date.now };
    const state = await fetchToken(creds, tls, full.timeoutMs, full.now, log);
    return new KeystoneSession(creds, full, tls, log, state);
  }

  /** The project the token is scoped to, when project-scoped. */
  get projectId(): string | undefined {
    return this.state.projectId;
  }

  /** When the current token expires (ms since the epoch). */
  get expiresAt(): number {
    return this.state.expiresAt;
  }

  /** A token valid for at least the re-auth margin; re-authenticates when needed. */
  async token(): Promise<string> {
    const s = this.state;
    const margin = Math.min(this.opts.reauthMarginMs, (s.expiresAt - s.issuedAt) / 2);
    if (this.opts.now() < s.expiresAt - margin) return s.token;
    return this.refresh();
  }

  /** Forces a new token (single flight: concurrent callers share one request). */
  async refresh(): Promise<string> {
    this.reauth ??= fetchToken(this.creds, this.tls, this.opts.timeoutMs, this.opts.now, this.log)
      .then((s) => (this.state = s))
      .finally(() => (this.reauth = undefined));
    return (await this.reauth).token;
  }

  /** The URL of service `type` for this cloud's interface and region (no trailing slash). */
  endpoint(type: string): string {
    const q: EndpointQuery = { type, interface: this.creds.interface };
    if (this.creds.regionName !== undefined) q.region = this.creds.regionName;
    return selectEndpoint(this.state.catalog, q);
  }

  /** TLS settings of this cloud, for callers that open their own requests. */
  get tlsOptions(): https.RequestOptions {
    return { ...this.tls };
  }

  /** One plain HTTP(S) request with this cloud's TLS settings; the body is read up to 16 MiB. */
  httpRequest(url: string, o: HttpRequestOptions): Promise<HttpResponse> {
    return sendRequest(url, o, this.tls, o.timeoutMs ?? this.opts.timeoutMs);
  }

  /**
   * An authenticated JSON request to `url`; on 401 re-authenticates once and retries.
   * Statuses outside `expect` (default 2xx) → {@link CloudError} with the status and the
   * server's message.
   */
  async request(url: string, o: HttpRequestOptions & { json?: unknown; expect?: number[] }): Promise<HttpResponse> {
    const headers: Record<string, string | number> = { Accept: 'application/json', ...o.headers };
    let body = o.body;
    if (o.json !== undefined) {
      body = JSON.stringify(o.json);
      headers['Content-Type'] ??= 'application/json';
    }
    let res: HttpResponse | undefined;
    for (let attempt = 0; attempt < 2; attempt++) {
      const token = attempt === 0 ? await this.token() : await this.refresh();
      res = await this.httpRequest(url, { ...o, headers: { ...headers, 'X-Auth-Token': token }, body });
      if (res.status !== 401) break;
      this.log.info('service answered 401, re-authenticating', { url, method: o.method });
    }
    const r = res as HttpResponse;
    const ok = o.expect ? o.expect.includes(r.status) : r.status >= 200 && r.status < 300;
    if (!ok) throw new CloudError(`${o.method} ${url} failed: ${r.status} ${errorMessage(r.body)}`, { status: r.status });
    return r;
  }
}

async function fetchToken(c: CloudCredentials, tls: https.AgentOptions, timeoutMs: number, now: () => number, log: Logger): Promise<TokenState> {
  const url = tokensUrl(c.authUrl);
  const res = await sendRequest(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
    body: JSON.stringify(authRequestBody(c)),
  }, tls, timeoutMs);
  if (res.status !== 201 && res.status !== 200) {
    const who = `user '${c.username}'${c.projectName ? ` in project '${c.projectName}'` : ''}`;
    throw new CloudError(`Keystone authentication failed for ${who} at ${url}: ${res.status} ${errorMessage(res.body)}`, { status: res.status });
  }
  const token = res.headers['x-subject-token'];
  let parsed: { token?: { expires_at?: string; issued_at?: string; catalog?: CatalogService[]; project?: { id?: string } } };
  try {
    parsed = JSON.parse(res.body) as typeof parsed;
  } catch (err) {
    throw new CloudError(`Keystone at ${url} answered ${res.status} with a body that is not JSON`, { cause: err, status: res.status });
  }
  const expiresAt = Date.parse(parsed.token?.expires_at ?? '');
  if (typeof token !== 'string' || !token || Number.isNaN(expiresAt)) {
    throw new CloudError(`Keystone at ${url} answered ${res.status} without a token or expiry`, { status: res.status });
  }
  const issued = Date.parse(parsed.token?.issued_at ?? '');
  // Keystone's clock may differ from ours: keep the token's lifetime, anchored on our clock.
  const lifetime = expiresAt - (Number.isNaN(issued) ? expiresAt - 3_600_000 : issued);
  const issuedAt = now();
  log.debug('authenticated', { url, expiresAt: parsed.token?.expires_at });
  const state: TokenState = { token, expiresAt: issuedAt + lifetime, issuedAt, catalog: parsed.token?.catalog ?? [] };
  if (parsed.token?.project?.id) state.projectId = parsed.token.project.id;
  return state;
}

/**
 * One HTTP(S) request with a bounded idle timeout; a new connection each time (Keystone
 * under uwsgi closes every connection anyway, and a fresh socket never hits a stale one).
 */
function sendRequest(url: string, o: HttpRequestOptions, tls: https.AgentOptions, timeoutMs: number): Promise<HttpResponse> {
  return new Promise<HttpResponse>((resolve, reject) => {
    const u = new URL(url);
    const mod = u.protocol === 'https:' ? https : http;
    const headers: Record<string, string | number> = { ...o.headers };
    if (o.body !== undefined) headers['Content-Length'] = Buffer.byteLength(o.body);
    const req = mod.request(u, { method: o.method, headers, agent: false, ...(u.protocol === 'https:' ? tls : {}) });
    const onAbort = (): void => {
      req.destroy(new CloudError(`${o.method} ${url} aborted`, { cause: o.signal?.reason }));
    };
    if (o.signal?.aborted) return onAbort();
    o.signal?.addEventListener('abort', onAbort, { once: true });
    const done = (): void => o.signal?.removeEventListener('abort', onAbort);
    req.setTimeout(timeoutMs, () => req.destroy(new CloudError(`${o.method} ${url}: no answer within ${timeoutMs} ms`)));
    req.on('error', (err) => {
      done();
      reject(err instanceof CloudError ? err : new CloudError(`${o.method} ${url} failed: ${coerceError(err).message}`, { cause: err }));
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size <= MAX_BODY) chunks.push(c);
      });
      res.on('end', () => {
        done();
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') });
      });
      res.on('error', (err) => req.destroy(err));
    });
    req.end(o.body);
  });
}
