/**
 * Test support: a real HTTP server on 127.0.0.1 (a free port) that plays Keystone v3, Glance,
 * Nova and Neutron from a script. Keystone's `POST /v3/auth/tokens` answers with a token and
 * a catalog whose image, compute and network endpoints all point back at this server; every
 * other answer comes from routes a test adds, so it can answer garbage, HTML, huge bodies,
 * 5xx or reset the connection. It counts TCP connections and records each request.
 */
import { writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import yaml from 'js-yaml';
import type { CloudCredentials } from '../../lib/drivers/openstack/clouds-yaml.js';

/** One request the server received. */
export interface SeenRequest {
  method: string;
  /** Path and query. */
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** What a route answers. */
export type ScriptedAnswer =
  | { status?: number; headers?: Record<string, string | number>; body?: string | object }
  /** Drop the connection without an answer (the client sees a reset). */
  | { reset: true }
  /** Announce `length` bytes, send `sent` of them, then drop the connection. */
  | { truncate: { length: number; sent: number } }
  /** Never answer (until {@link ScriptedCloud.stop}). */
  | { hang: true };

type Handler = (req: SeenRequest) => ScriptedAnswer;

interface Route {
  method: string;
  path: RegExp;
  handler: Handler;
}

/** The catalog's region and the Keystone token this server hands out. */
export const SCRIPTED_REGION = 'RegionOne';
export const SCRIPTED_TOKEN = 'scripted-token';

/** A scripted cloud on 127.0.0.1; {@link stop} it after the test. */
export class ScriptedCloud {
  /** Requests received, oldest first. */
  readonly requests: SeenRequest[] = [];
  /** TCP connections accepted. */
  connections = 0;
  private routes: Route[] = [];

  private constructor(private readonly server: http.Server, readonly port: number) {}

  /** Starts the server on a free 127.0.0.1 port. */
  static async start(): Promise<ScriptedCloud> {
    const server = http.createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', resolve);
    });
    const cloud = new ScriptedCloud(server, (server.address() as AddressInfo).port);
    server.on('request', (req, res) => cloud.handle(req, res));
    server.on('connection', () => {
      cloud.connections += 1;
    });
    cloud.answer('POST', /^\/v3\/auth\/tokens$/, () => cloud.tokenAnswer());
    return cloud;
  }

  /** `http://127.0.0.1:<port>`. */
  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Credentials of the `scripted` cloud (any password is accepted). */
  creds(): CloudCredentials {
    return {
      cloudName: 'scripted', authUrl: `${this.url}/v3`, username: 'demo', password: 'secret', projectName: 'demo',
      userDomainName: 'Default', projectDomainName: 'Default', regionName: SCRIPTED_REGION, interface: 'public',
      identityApiVersion: '3', verify: true,
    };
  }

  /** A well-formed Keystone token answer with a catalog pointing here. */
  tokenAnswer(): ScriptedAnswer {
    const ep = (url: string): object => ({ interface: 'public', region_id: SCRIPTED_REGION, region: SCRIPTED_REGION, url });
    const now = Date.now();
    return {
      status: 201,
      headers: { 'X-Subject-Token': SCRIPTED_TOKEN },
      body: {
        token: {
          issued_at: new Date(now).toISOString(), expires_at: new Date(now + 3_600_000).toISOString(), project: { id: 'p1', name: 'demo' },
          catalog: [
            { type: 'identity', name: 'keystone', endpoints: [ep(`${this.url}/v3`)] },
            { type: 'image', name: 'glance', endpoints: [ep(this.url)] },
            { type: 'compute', name: 'nova', endpoints: [ep(`${this.url}/v2.1`)] },
            { type: 'network', name: 'neutron', endpoints: [ep(this.url)] },
          ],
        },
      },
    };
  }

  /**
   * Adds a route (later routes win over earlier ones). `answers` as an array is played in
   * order, the last one repeating.
   */
  answer(method: string, path: RegExp, answers: Handler | ScriptedAnswer | ScriptedAnswer[]): this {
    let handler: Handler;
    if (typeof answers === 'function') handler = answers;
    else {
      const list = Array.isArray(answers) ? [...answers] : [answers];
      handler = () => (list.length > 1 ? list.shift() : list[0]) as ScriptedAnswer;
    }
    this.routes.unshift({ method, path, handler });
    return this;
  }

  /** Writes a clouds.yaml whose cloud `scripted` is this server. */
  async writeCloudsYaml(file: string): Promise<void> {
    const c = this.creds();
    await writeFile(file, yaml.dump({
      clouds: {
        scripted: {
          auth: { auth_url: c.authUrl, username: c.username, password: c.password, project_name: c.projectName, user_domain_name: 'Default', project_domain_name: 'Default' },
          region_name: SCRIPTED_REGION, identity_api_version: 3,
        },
      },
    }));
  }

  /** Requests whose method and path match. */
  seen(method: string, path: RegExp): SeenRequest[] {
    return this.requests.filter((r) => r.method === method && path.test(r.path));
  }

  /** Closes the server and every connection. */
  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const seen: SeenRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      this.requests.push(seen);
      const pathOnly = seen.path.split('?')[0] ?? '';
      const route = this.routes.find((r) => r.method === seen.method && r.path.test(pathOnly));
      const a: ScriptedAnswer = route ? route.handler(seen) : { status: 404, body: { itemNotFound: { code: 404, message: `no route for ${seen.method} ${pathOnly}` } } };
      if ('hang' in a) return;
      if ('reset' in a) {
        req.socket.resetAndDestroy();
        return;
      }
      if ('truncate' in a) {
        res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': a.truncate.length });
        res.write('x'.repeat(a.truncate.sent), () => req.socket.destroy());
        return;
      }
      const body = a.body === undefined ? '' : typeof a.body === 'string' ? a.body : JSON.stringify(a.body);
      const type = typeof a.body === 'object' ? 'application/json' : 'text/plain';
      res.writeHead(a.status ?? 200, { 'Content-Type': type, ...a.headers });
      res.end(body);
    });
  }
}
