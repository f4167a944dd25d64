/**
 * Keystone v3 password authentication and the service catalog: a {@link KeystoneSession}
 * holds a project- (or domain-) scoped token, re-authenticates shortly before it expires,
 * and retries a request once after a 401 from a service. Its requests go through one
 * keep-alive {@link HttpClient} per session (http-client.ts); the token answer is checked
 * field by field (json-reader.ts).
 */
import { readFile } from 'node:fs/promises';
import type https from 'node:https';
import { CloudError } from '../../errors.js';
import { silentLogger, type Logger } from '../../log.js';
import { processSecrets } from '../../redact.js';
import type { CloudCredentials, EndpointInterface } from './clouds-yaml.js';
import { errorSaid, HttpClient, statusError, type HttpClientOptions, type HttpRequestOptions, type HttpResponse } from './http-client.js';
import { JsonReader } from './json-reader.js';

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

export { errorMessage } from './http-client.js';
export type { HttpRequestOptions, HttpResponse } from './http-client.js';

/** Options of one {@link KeystoneSession.request}. */
export interface SessionRequestOptions extends HttpRequestOptions {
  /** Sent as JSON (sets Content-Type). */
  json?: unknown;
  /** Statuses that are not an error (default: any 2xx). */
  expect?: number[];
}

/** Options of {@link KeystoneSession.authenticate}. */
export interface KeystoneSessionOptions {
  log?: Logger;
  /** Per-request timeout (default 60 s). */
  timeoutMs?: number;
  /** Re-authenticate when the token has less than this left (default 5 min, at most half its lifetime). */
  reauthMarginMs?: number;
  /** Clock, for tests. */
  now?: () => number;
  /** Tunables of the session's HTTP client (body limit, retry delay, idle connections). */
  http?: Omit<HttpClientOptions, 'tls' | 'timeoutMs'>;
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
    private readonly opts: Required<Omit<KeystoneSessionOptions, 'log' | 'http'>>,
    private readonly tls: https.AgentOptions,
    /** The session's connections (keep-alive, body limit, GET retry). */
    readonly http: HttpClient,
    log: Logger,
    state: TokenState,
  ) {
    this.log = log;
    this.state = state;
  }

  /**
   * Authenticates and returns a session.
   * Thrown: {@link CloudError} (status 401 for bad credentials) with Keystone's message, or
   * naming the field of a token answer that is not what Keystone v3 sends.
   */
  static async authenticate(creds: CloudCredentials, opts: KeystoneSessionOptions = {}): Promise<KeystoneSession> {
    const log = (opts.log ?? silentLogger()).child({ component: 'keystone', cloud: creds.cloudName });
    // Known to the process from here on, so no message or log line can carry it (a cloud that echoes the request).
    processSecrets.add(creds.password);
    const tls: https.AgentOptions = { rejectUnauthorized: creds.verify };
    if (creds.cacert) tls.ca = await readFile(creds.cacert);
    const full = { timeoutMs: opts.timeoutMs ?? 60_000, reauthMarginMs: opts.reauthMarginMs ?? 300_000, now: opts.now ?? Date.now };
    const client = new HttpClient({ ...opts.http, tls, timeoutMs: full.timeoutMs });
    try {
      const state = await fetchToken(creds, client, full.now, log);
      return new KeystoneSession(creds, full, tls, client, log, state);
    } catch (err) {
      client.close();
      throw err;
    }
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
    this.reauth ??= fetchToken(this.creds, this.http, this.opts.now, this.log)
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

  /** One plain HTTP(S) request on this session's connections; the body is read up to the client's limit. */
  httpRequest(url: string, o: HttpRequestOptions): Promise<HttpResponse> {
    return this.http.request(url, o);
  }

  /** Closes the session's idle connections (requests in flight finish; later ones open new connections). */
  close(): void {
    this.http.close();
  }

  /**
   * An authenticated request to `url`; on 401 re-authenticates once and retries.
   * Statuses outside `expect` (default 2xx) → {@link CloudError} with the status and the
   * cloud's message (`Glance POST /v2/images failed with 400; cloud said: …`).
   */
  async request(url: string, o: SessionRequestOptions): Promise<HttpResponse> {
    const headers: Record<string, string | number> = { Accept: 'application/json', ...o.headers };
    let body = o.body;
    if (o.json !== undefined) {
      body = JSON.stringify(o.json);
      headers['Content-Type'] ??= 'application/json';
    }
    const { json: _json, expect, ...rest } = o;
    let res: HttpResponse | undefined;
    for (let attempt = 0; attempt < 2; attempt++) {
      const token = attempt === 0 ? await this.token() : await this.refresh();
      const req: HttpRequestOptions = { ...rest, headers: { ...headers, 'X-Auth-Token': token } };
      if (body !== undefined) req.body = body;
      res = await this.http.request(url, req);
      if (res.status !== 401) break;
      this.log.info('service answered 401, re-authenticating', { url, method: o.method });
    }
    const r = res as HttpResponse;
    const ok = expect ? expect.includes(r.status) : r.status >= 200 && r.status < 300;
    if (!ok) throw statusError(r);
    return r;
  }
}

async function fetchToken(c: CloudCredentials, client: HttpClient, now: () => number, log: Logger): Promise<TokenState> {
  const url = tokensUrl(c.authUrl);
  const res = await client.request(url, {
    method: 'POST',
    service: 'Keystone',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
    body: JSON.stringify(authRequestBody(c)),
  });
  if (res.status !== 201 && res.status !== 200) {
    const who = `user '${c.username}'${c.projectName ? ` in project '${c.projectName}'` : ''}`;
    throw new CloudError(`Keystone authentication failed for ${who} at ${url}: ${res.status}; ${errorSaid(res.body)}`, { status: res.status });
  }
  const token = readToken(res);
  processSecrets.add(token.token, { transient: true });
  const lifetime = token.expiresAt - (token.issuedAt ?? token.expiresAt - 3_600_000);
  // Keystone's clock may differ from ours: keep the token's lifetime, anchored on our clock.
  const issuedAt = now();
  log.debug('authenticated', { url, lifetimeMs: lifetime });
  const state: TokenState = { token: token.token, expiresAt: issuedAt + lifetime, issuedAt, catalog: token.catalog };
  if (token.projectId) state.projectId = token.projectId;
  return state;
}

/**
 * The token, its times, catalog and project from a `POST /v3/auth/tokens` answer.
 * Thrown: {@link CloudError} naming the header or field that is missing or of the wrong type.
 */
function readToken(res: HttpResponse): { token: string; expiresAt: number; issuedAt: number | undefined; catalog: CatalogService[]; projectId: string | undefined } {
  const root = JsonReader.parse(res);
  const header = res.headers['x-subject-token'];
  if (typeof header !== 'string' || !header) {
    throw new CloudError(`${res.call}: header "X-Subject-Token": expected a token, got ${header === undefined ? 'none' : JSON.stringify(header)}`, { status: res.status });
  }
  const t = root.obj('token');
  const date = (key: string, required: boolean): number | undefined => {
    const text = required ? t.str(key) : t.optStr(key);
    if (text === null) return undefined;
    const ms = Date.parse(text);
    if (Number.isNaN(ms)) t.fail(key, 'an ISO 8601 time');
    return ms;
  };
  const expiresAt = date('expires_at', true) as number;
  const catalog = t.optList('catalog').map((svc): CatalogService => {
    const out: CatalogService = {
      type: svc.str('type'),
      endpoints: svc.list('endpoints').map((e) => {
        const ep: CatalogEndpoint = { url: e.str('url'), interface: e.str('interface') };
        const region = e.optStr('region');
        const regionId = e.optStr('region_id');
        if (region !== null) ep.region = region;
        if (regionId !== null) ep.region_id = regionId;
        return ep;
      }),
    };
    const name = svc.optStr('name');
    if (name !== null) out.name = name;
    return out;
  });
  const project = t.optObj('project');
  return { token: header, expiresAt, issuedAt: date('issued_at', false), catalog, projectId: project ? project.id('id') : undefined };
}
