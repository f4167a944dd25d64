/**
 * Shared set-up of the openstack driver's integration tests: a SQLite store in a temp dir,
 * a live session, a config written as YAML against the loopback Nova cloud and checked by
 * the real loader, image services from its clouds.yaml, and a logger that keeps its lines
 * so tests can count what the driver did (e.g. servers created per node).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { parseConfig } from '../../../../lib/config/load.js';
import type { Config } from '../../../../lib/config/schema.js';
import type { ProviderContext } from '../../../../lib/drivers/contract/driver.js';
import { openstackHostAccess, type OpenStackAccess } from '../../../../lib/drivers/openstack/access.js';
import { KeptUnlessFailed, waitFor } from '../../../../lib/lifecycle.js';
import type { OpenStackProviderConfig } from '../../../../lib/drivers/openstack/config.js';
import { OpenStackProvider } from '../../../../lib/drivers/openstack/provider.js';
import { createRootLogger } from '../../../../lib/log.js';
import { SqliteStore } from '../../../../lib/store/sqlite/sqlite-store.js';
import type { NodeRecord } from '../../../../lib/store/models.js';
import type { Store } from '../../../../lib/store/store.js';
import type { NovaCloud } from '../../../support/openstack-full.js';
import type { ServerSummary } from '../../../support/openstack-full-admin.js';

/** How long a launch may take on a loaded machine before a test fails. */
const LAUNCH_TIMEOUT_MS = 120_000;

/** Knobs of the test provider. */
export interface ProviderYamlOptions {
  /** Provider-level keys (over launch-timeout 60, boot-timeout 5). */
  extra?: Record<string, string | number | boolean>;
  /** Keys of pool `main` (over host-key-checking false). */
  poolExtra?: Record<string, string | number | boolean>;
  /** `max-servers` of pool `capped` (serves `tiny`). */
  cappedMaxServers?: number;
}

/**
 * A provider with pool `main` (labels tiny: m1.tiny, small: min-ram 1024, huge: np.huge,
 * disk: diskimage `deb` on m1.tiny; host-key-checking off, the private network) and pool
 * `capped` (tiny, max-servers 2 by default).
 */
export function providerYaml(cloud: NovaCloud, name: string, o: ProviderYamlOptions = {}): string {
  return [
    `clouds-file: ${JSON.stringify(cloud.cloudsFile)}`,
    'labels: [{name: tiny}, {name: small}, {name: huge}, {name: disk}]',
    'diskimages: [{name: deb}]',
    'providers:',
    `  - name: ${name}`,
    `    cloud: ${cloud.cloud}`,
    `    region-name: ${cloud.region}`,
    ...Object.entries({ 'launch-timeout': 60, 'boot-timeout': 5, ...o.extra }).map(([k, v]) => `    ${k}: ${JSON.stringify(v)}`),
    '    diskimages: [{name: deb, username: debian}]',
    `    cloud-images: [{name: ${cloud.image.name}, username: cirros}]`,
    '    pools:',
    '      - name: main',
    `        networks: [${cloud.network.name}]`,
    ...Object.entries({ 'host-key-checking': false, ...o.poolExtra }).map(([k, v]) => `        ${k}: ${JSON.stringify(v)}`),
    '        labels:',
    `          - {name: tiny, cloud-image: ${cloud.image.name}, flavor-name: m1.tiny}`,
    `          - {name: small, cloud-image: ${cloud.image.name}, min-ram: 1024}`,
    `          - {name: huge, cloud-image: ${cloud.image.name}, flavor-name: np.huge}`,
    '          - {name: disk, diskimage: deb, flavor-name: m1.tiny, instance-properties: {owner: ci, nodepool_node_id: spoofed}}',
    '      - name: capped',
    `        max-servers: ${o.cappedMaxServers ?? 2}`,
    `        networks: [${cloud.network.id}]`,
    '        host-key-checking: false',
    `        labels: [{name: tiny, cloud-image: ${cloud.image.name}, flavor-name: m1.tiny}]`,
    '',
  ].join('\n');
}

/** A store, session and log for one test file. */
export class OpenStackEnv {
  readonly lines: string[] = [];
  private constructor(readonly cloud: NovaCloud, readonly dir: string, readonly store: Store, readonly sessionId: string,
    /** A provider name of this file only (the cloud is shared with other test files), unless given. */
    readonly providerName: string) {}

  /** `providerName`: the same name as another env's (a second installation with its own store on one cloud). */
  static async create(cloud: NovaCloud, providerName = `os-${randomUUID().slice(0, 8)}`): Promise<OpenStackEnv> {
    const dir = await mkdtemp(path.join(tmpdir(), 'openstack-driver-'));
    const store = await SqliteStore.open(path.join(dir, 'nodepool.db'));
    const session = await store.openSession({ owner: 'openstack-driver-test', hostname: 'localhost', pid: process.pid, ttlMs: 600_000 });
    return new OpenStackEnv(cloud, dir, store, session.id, providerName);
  }

  /** The SQLite file of {@link store} (for test/contract/spoil.ts). */
  get dbFile(): string {
    return path.join(this.dir, 'nodepool.db');
  }

  /** Loads the test provider with the real loader. */
  config(o: ProviderYamlOptions = {}): { config: Config; provider: OpenStackProviderConfig } {
    const config = parseConfig(providerYaml(this.cloud, this.providerName, o), path.join(this.dir, 'nodepool.yaml'));
    const provider = config.providers.find((p) => p.name === this.providerName);
    if (provider?.driver !== 'openstack') throw new Error('test config has no openstack provider');
    return { config, provider };
  }

  /** Providers from {@link startProvider} not yet stopped. */
  private readonly started: OpenStackProvider[] = [];

  /**
   * A started provider of the test config, without quota or image caches (tests change both);
   * {@link reset} and {@link close} stop it.
   */
  async startProvider(o: ProviderYamlOptions = {}): Promise<OpenStackProvider> {
    const { config, provider } = this.config(o);
    const p = new OpenStackProvider(provider, this.ctx(config), { quotaCacheMs: 0, imageCacheMs: 0 });
    this.started.push(p);
    await p.start();
    return p;
  }

  private async stopProviders(): Promise<void> {
    for (const p of this.started.splice(0)) await p.stop();
  }

  /** Between tests: stops the started providers, deletes this file's servers and every node record. */
  async reset(): Promise<void> {
    await this.stopProviders();
    await this.removeServers();
    for (const n of await this.store.listNodes()) await this.store.deleteNode(n.id);
  }

  /** Creates a building node of `label` in `pool`, launches it on `p` and waits (bounded) for its outcome. */
  async launch(p: OpenStackProvider, label: string, pool = 'main'): Promise<NodeRecord> {
    const handler = p.getRequestHandler(pool, await this.store.createRequest({ labels: [label], requestor: 'openstack-test' }));
    const node = await this.store.createNode({
      state: 'building', provider: p.name, pool, labels: [label], launcher: `${hostname()}-test`, ...handler.nodeMetadata(label),
    });
    handler.launch(node);
    await waitFor(() => handler.launchesComplete(), { timeoutMs: LAUNCH_TIMEOUT_MS, what: `the launch of node ${node.id}` });
    const done = await this.store.getNode(node.id);
    if (!done) throw new Error(`node ${node.id} vanished during its launch`);
    return done;
  }

  /** The servers in Nova of this env's provider name (the cloud is shared: never count others'). */
  async servers(): Promise<ServerSummary[]> {
    return (await this.cloud.listAllServers()).filter((s) => s.metadata.nodepool_provider_name === this.providerName);
  }

  /** What providers made from {@link ctx} reported through `onLeak`. */
  readonly leaks: Array<[string, number]> = [];

  /** The provider context; log lines are kept in {@link lines} (JSON). */
  ctx(config: Config): ProviderContext<OpenStackAccess> {
    const sink = new Writable({ write: (chunk: Buffer, _enc, cb) => { this.lines.push(...chunk.toString('utf8').split('\n').filter(Boolean)); cb(); } });
    const log = createRootLogger({ level: 'debug', format: 'json', stream: sink });
    const provider = config.providers.find((p) => p.name === this.providerName);
    if (provider?.driver !== 'openstack') throw new Error('test config has no openstack provider');
    // Only the config's clouds-file: a developer's ~/.config/openstack must never leak into a test.
    const access = new KeptUnlessFailed(() => openstackHostAccess(provider, {
      settings: { cloudsFile: config.cloudsFile }, env: {}, homeDir: '/nonexistent', cwd: '/nonexistent', log,
    }));
    return {
      store: this.store,
      log,
      clock: Date.now,
      config,
      sessionId: () => this.sessionId,
      hostAccess: () => access.get(),
      onLeak: (resource, count) => { this.leaks.push([resource, count]); },
    };
  }

  /** Log lines (parsed) with this message. */
  logged(message: string): Array<Record<string, unknown>> {
    return this.lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.message === message);
  }

  /**
   * Deletes this file's servers (those with its provider name) and waits until they are
   * gone. Not `deleteAllServers`: the cloud may be shared with test files running at once.
   */
  async removeServers(): Promise<void> {
    const { config, provider } = this.config();
    const p = new OpenStackProvider(provider, this.ctx(config));
    for (const s of await p.listNodes()) await p.deleteServer(s.externalId);
    await p.stop();
  }

  /** At the end of a file: {@link reset}, then {@link close}; fails when a server of this file is left in Nova. */
  async finish(): Promise<void> {
    await this.reset();
    // The provider counts a server that Nova shows as DELETED as gone (its delete is done);
    // Nova may still list it so for a moment before the record goes (ci38: clean-floating-ips'
    // server, listed DELETED just after its delete). So the listing is read again, up to 60 s,
    // until no server of this file is in it; what is left then fails the file, DELETED or not.
    let left = await this.servers();
    if (left.length > 0 && left.every((s) => s.status === 'DELETED')) {
      left = await waitFor(async () => {
        const now = await this.servers();
        return now.length === 0 || now.some((s) => s.status !== 'DELETED') ? now : undefined;
      }, { timeoutMs: 60_000, intervalMs: 500, what: 'the deleted servers of this file to leave the listing' }).catch(() => left);
    }
    await this.close();
    assert.deepEqual(left, [], 'no server of this file is left');
  }

  /** Stops the started providers and removes the store. */
  async close(): Promise<void> {
    await this.stopProviders();
    await this.store.close();
    await rm(this.dir, { recursive: true, force: true });
  }
}
