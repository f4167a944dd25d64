/**
 * What the write API tests run against: a config (a diskimage uploaded to two providers, a
 * static host pool), a real store (SQLite in a temp dir, or a real ZooKeeper under its own
 * chroot), the real HS256 authenticator from `webapp.auth`, and a real WebServer on 127.0.0.1
 * serving the API module's routes; tokens signed with lib/web-auth/sign-token.ts.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import yaml from 'js-yaml';
import { loadConfig } from '../../../../lib/config/load.js';
import type { Config } from '../../../../lib/config/schema.js';
import type { Logger } from '../../../../lib/log.js';
import type { BuildRecord, NodeRecord, UploadRecord } from '../../../../lib/store/models.js';
import { openStore } from '../../../../lib/store/open-store.js';
import type { Store } from '../../../../lib/store/store.js';
import type { AuthenticatorConfig, Role } from '../../../../lib/web-auth/auth-types.js';
import { loadAuthenticators } from '../../../../lib/web-auth/authenticators.js';
import { signToken } from '../../../../lib/web-auth/sign-token.js';
import { apiModule } from '../../../../server/web/api/api-module.js';
import { consoleModule } from '../../../../server/web/console/console-module.js';
import type { RefusalLedger } from '../../../../server/web/api/refusal-ledger.js';
import type { WebContext } from '../../../../server/web/web-context.js';
import { WebServer } from '../../../../server/web/web-server.js';
import { testLogger } from '../../../support/test-log.js';

/** The authenticator the server trusts (its secret is test-only). */
export const LOCAL: AuthenticatorConfig = {
  name: 'local', driver: 'HS256', secret: `test-secret-${randomUUID()}`, issuer: 'nodepool', audience: 'nodepool',
  roleClaim: 'nodepool.role', userClaim: 'sub', skew: 0,
};

/** Same issuer and audience, another secret: its tokens have a bad signature. */
const FORGER: AuthenticatorConfig = { ...LOCAL, secret: `forged-${randomUUID()}` };

/** Options of {@link startApiEnv}. */
export interface ApiEnvOptions {
  /** A ZooKeeper to keep the store in (default: SQLite in the temp dir). */
  zookeeper?: { host: string; port: number };
  /** Configure no authenticator (every write is 403). */
  noAuth?: boolean;
  log?: Logger;
  /** How long the built-in lists are reused (default 0: every read goes to the store). */
  cacheMs?: number;
  /** How often the refusal counts of ended minutes are written (default: the module's). */
  refusalFlushMs?: number;
  /** Serve the console's pages too (as nodepool-server does). */
  console?: boolean;
}

export interface ApiEnv {
  dir: string;
  config: Config;
  store: Store;
  web: WebServer;
  /** The write API module's ledger of refused writes. */
  ledger: RefusalLedger;
  /** A valid token of `role` for `user` (default `<role>-user`). */
  token(role: Role, user?: string): Promise<string>;
  /** A token signed with another secret. */
  forgedToken(role: Role): Promise<string>;
  /** A token that expired an hour ago. */
  expiredToken(role: Role): Promise<string>;
  /**
   * Calls the server on a new connection; a `body` object is sent as JSON. Every method but GET
   * declares `Content-Type: application/json`, as the console does (`contentType: ''` sends none).
   */
  call(method: string, p: string, opts?: { token?: string; body?: unknown; rawBody?: string; contentType?: string; headers?: Record<string, string> }): Promise<{ status: number; json: Record<string, unknown>; headers: http.IncomingHttpHeaders }>;
  close(): Promise<void>;
}

/** Starts the store and the server. */
export async function startApiEnv(opts: ApiEnvOptions = {}): Promise<ApiEnv> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-api-'));
  await mkdir(path.join(dir, 'images'));
  const doc = {
    'images-dir': path.join(dir, 'images'), 'build-log-dir': path.join(dir, 'logs'), 'state-dir': path.join(dir, 'state'),
    'gearman-servers': [{ host: '127.0.0.1', port: 1 }],
    ...(opts.zookeeper ? { 'zookeeper-servers': [{ host: opts.zookeeper.host, port: opts.zookeeper.port, chroot: `/api-${randomUUID()}` }] } : {}),
    labels: [{ name: 'small', 'min-ready': 0 }],
    diskimages: [{ name: 'deb', elements: ['fake-element'], release: 'bookworm' }],
    providers: [
      { name: 'cloud-a', driver: 'openstack', cloud: 'loopback', 'image-format': 'qcow2', diskimages: [{ name: 'deb' }] },
      { name: 'cloud-b', driver: 'openstack', cloud: 'loopback', 'image-format': 'qcow2', diskimages: [{ name: 'deb' }] },
      {
        name: 'hosts', driver: 'static',
        pools: [{ name: 'main', nodes: [{ name: '192.0.2.10', labels: ['small'], 'host-key': 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl' }] }],
      },
    ],
  };
  await writeFile(path.join(dir, 'nodepool.yaml'), yaml.dump(doc));
  const config = loadConfig(path.join(dir, 'nodepool.yaml'));
  const store = await openStore(config);
  const log = opts.log ?? testLogger();
  const auth = await loadAuthenticators(opts.noAuth ? [] : [LOCAL]);
  const ctx: WebContext = {
    store, config: () => config, auth, status: { store, config: () => config, clock: () => Date.now() },
    loops: () => [], started: () => true, clock: () => Date.now(), log,
  };
  const api = apiModule(ctx, opts.refusalFlushMs ? { refusalFlushMs: opts.refusalFlushMs } : {});
  const pages = opts.console ? consoleModule(ctx) : undefined;
  const web = await WebServer.start({
    host: '127.0.0.1', port: 0, log, cacheMs: opts.cacheMs ?? 0, status: ctx.status, loops: ctx.loops, started: ctx.started,
    routes: [...api.routes, ...(pages?.routes ?? [])],
    ...(api.unrouted ? { unrouted: api.unrouted } : {}),
  });
  return {
    dir, config, store, web, ledger: api.ledger,
    token: (role, user) => signToken(LOCAL, { user: user ?? `${role}-user`, role, expiresInS: 600 }),
    forgedToken: (role) => signToken(FORGER, { user: `${role}-user`, role, expiresInS: 600 }),
    expiredToken: (role) => signToken(LOCAL, { user: `${role}-user`, role, expiresInS: 60 }, () => Date.now() - 3600_000),
    async call(method, p, o = {}) {
      const headers: Record<string, string> = { ...o.headers };
      if (o.token !== undefined) headers.Authorization = `Bearer ${o.token}`;
      let body: string | undefined;
      if (o.rawBody !== undefined) body = o.rawBody;
      else if (o.body !== undefined) body = JSON.stringify(o.body);
      if ((body !== undefined || method !== 'GET') && o.contentType !== '') headers['Content-Type'] = o.contentType ?? 'application/json';
      if (body !== undefined) headers['Content-Length'] = String(Buffer.byteLength(body));
      const res = await request(web.port, method, p, headers, body);
      let json: Record<string, unknown>;
      try {
        json = JSON.parse(res.text) as Record<string, unknown>;
      } catch {
        json = { text: res.text };
      }
      return { status: res.status, json, headers: res.headers };
    },
    async close() {
      await web.stop();
      await api.stop?.();
      await pages?.stop?.();
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** What {@link seed} wrote. */
export interface Seeded {
  /** Older ready build of `deb`, ready on cloud-a, failed on cloud-b. */
  older: BuildRecord;
  /** Newer ready build of `deb`, ready on cloud-a. */
  newer: BuildRecord;
  readyUpload: UploadRecord;
  failedUpload: UploadRecord;
  newerUpload: UploadRecord;
  node: NodeRecord;
}

/** Records as the server would leave them. */
export async function seed(store: Store): Promise<Seeded> {
  const mk = async (): Promise<BuildRecord> => {
    const b = await store.createBuild({ diskimage: 'deb', formats: ['qcow2'] });
    return (await store.updateBuild(b.id, { state: 'ready', builderHostname: 'builder-1', files: [{ format: 'qcow2', size: 1024, sha256: 'ab'.repeat(32) }] })) as BuildRecord;
  };
  const older = await mk();
  const newer = await mk();
  const up = async (b: BuildRecord, provider: string, state: 'ready' | 'failed'): Promise<UploadRecord> => {
    const u = await store.createUpload({ buildId: b.id, provider, imageName: 'deb', externalName: `deb-${b.id}` });
    return (await store.updateUpload(u.id, state === 'ready' ? { state, externalId: `img-${u.id}`, format: 'qcow2' } : { state, reason: 'glance said no' })) as UploadRecord;
  };
  const readyUpload = await up(older, 'cloud-a', 'ready');
  const failedUpload = await up(older, 'cloud-b', 'failed');
  const newerUpload = await up(newer, 'cloud-a', 'ready');
  const node = await store.createNode({ state: 'ready', provider: 'hosts', pool: 'main', labels: ['small'], interfaceIp: '192.0.2.10' });
  return { older, newer, readyUpload, failedUpload, newerUpload, node };
}

/** Everything a write could change (the audit trail aside), as comparable JSON. */
export async function stateOf(store: Store): Promise<string> {
  const [builds, uploads, requests, retries, pauses, pins, revocations, nodes] = await Promise.all([
    store.listBuilds(), store.listUploads(), store.listBuildRequests(), store.listUploadRetries(), store.listPauses(),
    store.listPins(), store.listRevocations(), store.listNodes(),
  ]);
  return JSON.stringify({ builds, uploads, requests, retries, pauses, pins, revocations, nodes });
}

/** One request on its own connection (so stopping the server never waits on a kept-alive one), bounded by 15 s. */
function request(port: number, method: string, p: string, headers: Record<string, string>, body?: string): Promise<{ status: number; text: string; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path: p, headers, agent: false, timeout: 15_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8'), headers: res.headers }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${p}: no answer in 15 s`)));
    req.on('error', reject);
    req.end(body);
  });
}
