/**
 * What the console tests run against: a config (two labels, a diskimage uploaded to two
 * providers, a static host pool), a real SQLite store in a temp dir, and a real WebServer on
 * 127.0.0.1 serving the console module's routes, with optional extra routes standing in for
 * the write API and build logs other modules serve (they record what they were sent).
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import yaml from 'js-yaml';
import { loadConfig } from '../../../../lib/config/load.js';
import type { Config } from '../../../../lib/config/schema.js';
import { openStore } from '../../../../lib/store/open-store.js';
import type { Store } from '../../../../lib/store/store.js';
import type { LoopHealth } from '../../../../lib/periodic-loop.js';
import type { RequestAuthenticator } from '../../../../lib/web-auth/auth-types.js';
import { consoleModule, type ConsoleOptions } from '../../../../server/web/console/console-module.js';
import type { Route, WebModule } from '../../../../server/web/routes.js';
import type { WebContext } from '../../../../server/web/web-context.js';
import { WebServer } from '../../../../server/web/web-server.js';
import { testLogger } from '../../../support/test-log.js';

/** Reads need no token; the console module never asks this. */
const NO_AUTH: RequestAuthenticator = {
  enabled: false,
  authenticate: () => Promise.resolve({ ok: false, status: 403, message: 'the write API is not configured' }),
};

export interface ConsoleEnv {
  dir: string;
  config: Config;
  store: Store;
  web: WebServer;
  module: WebModule;
  /** Loops the server reports (tests change them). */
  loops: LoopHealth[];
  url(p: string): string;
  close(): Promise<void>;
}

/** Starts the store and the server; `labels` adds to the config's labels. */
export async function startConsoleEnv(opts: { routes?: Route[]; console?: ConsoleOptions; labels?: Array<Record<string, unknown>> } = {}): Promise<ConsoleEnv> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-console-'));
  await mkdir(path.join(dir, 'images'));
  const doc = {
    'images-dir': path.join(dir, 'images'), 'build-log-dir': path.join(dir, 'logs'), 'state-dir': path.join(dir, 'state'),
    'gearman-servers': [{ host: '127.0.0.1', port: 1 }],
    labels: [{ name: 'small', 'min-ready': 2 }, { name: 'large', 'min-ready': 0 }, ...(opts.labels ?? [])],
    diskimages: [{ name: 'deb', elements: ['fake-element'], release: 'bookworm' }],
    providers: [
      { name: 'cloud-a', driver: 'openstack', cloud: 'loopback', 'image-format': 'qcow2', diskimages: [{ name: 'deb' }] },
      { name: 'cloud-b', driver: 'openstack', cloud: 'loopback', 'image-format': 'qcow2', diskimages: [{ name: 'deb' }] },
      { name: 'hosts', driver: 'static', pools: [{ name: 'main', nodes: [{ name: '192.0.2.10', labels: ['small'], 'host-key': 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl' }] }] },
    ],
  };
  await writeFile(path.join(dir, 'nodepool.yaml'), yaml.dump(doc));
  const config = loadConfig(path.join(dir, 'nodepool.yaml'));
  const store = await openStore(config);
  const loops: LoopHealth[] = [];
  const log = testLogger();
  const ctx: WebContext = {
    store, config: () => config, auth: NO_AUTH, status: { store, config: () => config, clock: () => Date.now() },
    loops: () => loops, started: () => true, clock: () => Date.now(), log,
  };
  const module = consoleModule(ctx, opts.console ?? {});
  const web = await WebServer.start({
    host: '127.0.0.1', port: 0, log, cacheMs: 0, status: ctx.status, loops: ctx.loops, started: ctx.started,
    routes: [...(opts.routes ?? []), ...module.routes],
  });
  return {
    dir, config, store, web, module, loops,
    url: (p) => `http://127.0.0.1:${web.port}${p}`,
    async close() {
      await web.stop();
      await module.stop?.();
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A string that would run script if a page put it in as HTML. */
export const HOSTILE = '<img src=x onerror="document.title=\'pwned\'"><b>bold</b>';

/** What {@link seedStore} wrote. */
export interface Seeded {
  ready: string;
  building: string;
  failed: string;
  uploading: string;
  nodes: { ready: string; inUse: string; hostile: string };
}

/**
 * Records as the server would leave them: three builds of `deb` (ready, building, failed and
 * revoked), uploads (ready, uploading at 40 %, failed with a hostile multi-line reason), nodes
 * (a hostile label among them), requests, a pause.
 */
export async function seedStore(store: Store): Promise<Seeded> {
  const now = Date.now();
  const b1 = await store.createBuild({ diskimage: 'deb', formats: ['qcow2'] });
  await store.updateBuild(b1.id, { state: 'ready', builderHostname: 'builder-1', files: [{ format: 'qcow2', size: 1288490189, sha256: 'ab'.repeat(32) }] });
  const b2 = await store.createBuild({ diskimage: 'deb', formats: ['qcow2', 'raw'] });
  await store.updateBuild(b2.id, { builderHostname: 'builder-1', progress: { numerator: 3, denominator: 10 } });
  const b3 = await store.createBuild({ diskimage: 'deb', formats: ['qcow2'] });
  await store.updateBuild(b3.id, { state: 'failed', reason: `dib exited 1\n${HOSTILE}` });
  await store.setRevocation('deb', b3.id, true, `broke boot ${HOSTILE}`);
  const readyUp = await store.createUpload({ buildId: b1.id, provider: 'cloud-a', imageName: 'deb', externalName: 'deb-1' });
  await store.updateUpload(readyUp.id, { state: 'ready', externalId: 'img-1', format: 'qcow2', launches: 5 });
  const failedUp = await store.createUpload({ buildId: b1.id, provider: 'cloud-b', imageName: 'deb', externalName: 'deb-1b' });
  await store.updateUpload(failedUp.id, { state: 'failed', reason: `validation: command exited 1; output tail:\n${HOSTILE}\nlast line` });
  const uploading = await store.createUpload({ buildId: b1.id, provider: 'cloud-b', imageName: 'deb', externalName: 'deb-1c' });
  await store.updateUpload(uploading.id, { progress: { numerator: 429496730, denominator: 1073741824, rate: 52428800, sampledAt: now } });
  await store.setPause('deb', 'cloud-b', true, 'maintenance window');
  const ready = await store.createNode({ state: 'ready', provider: 'hosts', pool: 'main', labels: ['small'], interfaceIp: '192.0.2.10' });
  const inUse = await store.createNode({ state: 'in-use', provider: 'cloud-a', pool: 'main', labels: ['small'], externalId: 'srv-1', interfaceIp: '198.51.100.7' });
  const hostile = await store.createNode({ state: 'hold', provider: 'cloud-a', pool: 'main', labels: [HOSTILE], holdReason: HOSTILE });
  const fulfilled = await store.createRequest({ labels: ['small'], requestor: 'zuul' });
  await store.updateRequest(fulfilled.id, { state: 'fulfilled', nodes: [inUse.id] });
  await store.createRequest({ labels: ['large'], requestor: 'nodepool:min-ready' });
  const failedReq = await store.createRequest({ labels: ['gpu'], requestor: 'zuul' });
  await store.updateRequest(failedReq.id, { state: 'failed', reason: 'no provider serves label gpu' });
  return { ready: b1.id, building: b2.id, failed: b3.id, uploading: uploading.id, nodes: { ready: ready.id, inUse: inUse.id, hostile: hostile.id } };
}
