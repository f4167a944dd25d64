/**
 * The whole system the console end-to-end test (issue 25, "What must show") drives a browser
 * against: the run's full loopback cloud (real Nova with the fake virt driver, real Glance)
 * reached through the Glance fault proxy (so an upload can be held mid-transfer and its progress
 * seen), a real gearmand, `nodepool-builder` as a process with the fake disk-image-create and
 * its build log port, and nodepool-server in this process on SQLite with `webapp.auth` (one
 * local HS256 authenticator) serving the console, the write API and the build log route. One
 * diskimage `deb` is uploaded to one openstack provider whose label `disk` boots it.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import yaml from 'js-yaml';
import { NodepoolClient } from '../../lib/client/nodepool-client.js';
import { loadConfig } from '../../lib/config/load.js';
import type { Config } from '../../lib/config/schema.js';
import { loadCloud } from '../../lib/drivers/openstack/clouds-yaml.js';
import { KeystoneSession } from '../../lib/drivers/openstack/keystone.js';
import { waitFor } from '../../lib/lifecycle.js';
import type { NodeRecord } from '../../lib/store/models.js';
import { openStore } from '../../lib/store/open-store.js';
import type { Store } from '../../lib/store/store.js';
import { signToken } from '../../lib/web-auth/sign-token.js';
import { NodepoolServer } from '../../server/main.js';
import { cloudProvider, DISKIMAGE, RolloutCloud } from '../integration/rollout/rollout-env.js';
import { fakeDiskimage } from './builder-env.js';
import { startGearmand, type GearmandHandle } from './gearmand.js';
import { GlanceFaultProxy } from './glance-fault-proxy.js';
import { testImageServices } from './image-services.js';
import type { LoopbackCloud } from './openstack.js';
import { freePort, startProcess, stopAllProcesses, waitForPort, type TrackedProcess } from './processes.js';
import { testLogger } from './test-log.js';
import { nodeScript } from './node-command.js';

const ROOT = path.resolve('.');

/** The label that boots {@link DISKIMAGE}. */
export const LABEL = 'disk';

/** The size of the fake image (MiB of raw): big enough that a held upload stops well short of its end. */
const IMAGE_MIB = 64;

/** Knobs of {@link ConsoleE2eSystem.start}. */
export interface ConsoleE2eOptions {
  /** Seconds the fake disk-image-create sleeps in each of its eight phases. */
  dibPhaseDelayS: number;
}

export class ConsoleE2eSystem {
  private readonly clients: NodepoolClient[] = [];

  private constructor(
    readonly dir: string,
    readonly cloud: RolloutCloud,
    readonly proxy: GlanceFaultProxy,
    readonly gearmand: GearmandHandle,
    readonly config: Config,
    readonly store: Store,
    readonly builder: TrackedProcess,
    readonly server: NodepoolServer,
    /** The provider's name (unique: the cloud is shared with other files). */
    readonly provider: string,
    /** While this file exists the fake disk-image-create waits after its install phase. */
    readonly pauseFile: string,
    /** A Keystone session of the demo project (Glance clean-up). */
    private readonly session: KeystoneSession,
  ) {}

  /** Starts every part; on a failure stops what had started and throws. */
  static async start(opts: ConsoleE2eOptions): Promise<ConsoleE2eSystem> {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-console-e2e-'));
    const parts: { cloud?: RolloutCloud; proxy?: GlanceFaultProxy; gearmand?: GearmandHandle; store?: Store; server?: NodepoolServer; session?: KeystoneSession } = {};
    try {
      parts.cloud = await RolloutCloud.open();
      const nova = parts.cloud.nova;
      parts.session = await KeystoneSession.authenticate(await loadCloud(nova.cloud, { path: nova.cloudsFile }));
      // The proxy needs only the two ports of the cloud's Keystone and Glance.
      const ports = { keystonePort: Number(new URL(nova.authUrl).port), glancePort: Number(new URL(parts.session.endpoint('image')).port) };
      parts.proxy = await GlanceFaultProxy.start(ports as LoopbackCloud, dir);
      parts.gearmand = await startGearmand();
      const provider = RolloutCloud.unique('console');
      const pauseFile = path.join(dir, 'dib-pause');
      const [webPort, builderPort] = [await freePort(), await freePort()];
      const configPath = path.join(dir, 'nodepool.yaml');
      await mkdir(path.join(dir, 'images'));
      await writeFile(configPath, yaml.dump({
        'gearman-servers': [{ host: '127.0.0.1', port: parts.gearmand.port }],
        'state-dir': path.join(dir, 'state'), 'images-dir': path.join(dir, 'images'), 'build-log-dir': path.join(dir, 'logs'),
        'clouds-file': parts.proxy.cloudsYamlPath,
        'image-lifecycle': { interval: 1, 'retry-delay': 2, 'max-retry-delay': 8, 'leak-check-interval': 5, 'stray-grace': 5 },
        launcher: { interval: 0.2, 'delete-interval': 0.5, 'cleanup-interval': 1, 'session-ttl': 3 },
        webapp: {
          'listen-address': '127.0.0.1', port: webPort,
          auth: [{ name: 'local', driver: 'HS256', secret: randomBytes(32).toString('hex'), issuer: 'nodepool', audience: 'nodepool' }],
        },
        labels: [{ name: LABEL }],
        diskimages: [fakeDiskimage(DISKIMAGE, { formats: ['raw'] }, {
          FAKE_DIB_DELAY: String(opts.dibPhaseDelayS), FAKE_DIB_SIZE_MIB: String(IMAGE_MIB), FAKE_DIB_PAUSE_FILE: pauseFile,
        })],
        providers: [{ ...cloudProvider(nova, provider, { label: LABEL }), 'image-format': 'raw' }],
      }));
      const config = loadConfig(configPath);
      parts.store = await openStore(config);
      const builder = startProcess('nodepool-builder', process.execPath, [
        ...nodeScript('bin/nodepool-builder.ts'), '-c', configPath, '--hostname', 'builder-e2e',
        '--metrics-port', String(builderPort), '--advertise-host', '127.0.0.1', '--shutdown-timeout', '5', '--log-level', 'debug',
      ], { cwd: ROOT, logFile: path.join(dir, 'builder.log'), env: { ...process.env, NODEPOOL_CONFIG: '' } });
      await waitForPort(builderPort, 'nodepool-builder\'s build log port', 60_000);
      const log = testLogger();
      parts.server = await NodepoolServer.create({
        config, log, hostname: 'server-e2e', webapp: true, imageServices: testImageServices(() => config.cloudsFile, log),
      });
      if (!parts.server.web) throw new Error(`nodepool-server did not serve its webapp on 127.0.0.1:${webPort}`);
      return new ConsoleE2eSystem(dir, parts.cloud, parts.proxy, parts.gearmand, config, parts.store, builder, parts.server, provider, pauseFile, parts.session);
    } catch (err) {
      await parts.server?.stop().catch(() => undefined);
      await stopAllProcesses();
      await parts.store?.close().catch(() => undefined);
      await parts.gearmand?.stop().catch(() => undefined);
      await parts.proxy?.stop().catch(() => undefined);
      parts.session?.close();
      await parts.cloud?.close().catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
      throw err;
    }
  }

  /** The console's URL of `p`. */
  url(p: string): string {
    return `http://127.0.0.1:${this.config.webapp.port}${p}`;
  }

  /** A token of the local authenticator for `user` with role operator (an hour). */
  operatorToken(user: string): Promise<string> {
    const auth = this.config.webapp.auth[0];
    if (!auth) throw new Error('the config has no authenticator');
    return signToken(auth, { user, role: 'operator', expiresInS: 3600 });
  }

  /** A consumer client on the store. */
  async client(): Promise<NodepoolClient> {
    const c = await NodepoolClient.open({ config: this.config, requestor: 'console-e2e' });
    this.clients.push(c);
    return c;
  }

  /** Holds the next uploads' data after `afterBytes` until {@link releaseUploads}. */
  holdUploads(afterBytes: number): void {
    this.proxy.fault = { kind: 'hold', afterBytes };
  }

  releaseUploads(): void {
    this.proxy.release();
  }

  /** Makes the fake disk-image-create wait after its install phase (until {@link resumeBuilds}). */
  pauseBuilds(): Promise<void> {
    return writeFile(this.pauseFile, '');
  }

  resumeBuilds(): Promise<void> {
    return rm(this.pauseFile, { force: true });
  }

  /** One node of {@link LABEL}, kept by `client`; the Glance image its Nova server was booted from. */
  async launch(client: NodepoolClient): Promise<{ node: NodeRecord; glanceImage: string | undefined }> {
    const [node] = await client.requestNodes([LABEL], { timeoutMs: 180_000 });
    if (!node?.externalId) throw new Error('the request was fulfilled without a node that has a server');
    return { node, glanceImage: await this.cloud.serverImage(node.externalId) };
  }

  /**
   * Stops everything: nodes of the provider returned and their servers waited out (bounded),
   * the server, the builder and gearmand, the Glance images its uploads made, the proxy.
   */
  async stop(): Promise<void> {
    await this.resumeBuilds();
    this.proxy.release();
    await waitFor(async () => {
      for (const n of await this.store.listNodes({ provider: this.provider, states: ['ready', 'in-use', 'hold'] })) {
        await this.store.updateNode(n.id, { state: 'used' }).catch(() => undefined);
      }
      return (await this.cloud.serversOf(this.provider)) === 0 && (await this.store.listNodes({ provider: this.provider })).length === 0;
    }, { timeoutMs: 120_000, what: `no server or node of ${this.provider} left`, intervalMs: 500 }).catch((err: unknown) => console.error(`drain: ${String(err)}`));
    const images = (await this.store.listUploads()).flatMap((u) => (u.externalId ? [u.externalId] : []));
    for (const c of this.clients) await c.close().catch(() => undefined);
    await this.server.stop().catch(() => undefined);
    await this.builder.stop();
    await this.gearmand.stop();
    const glance = this.session.endpoint('image');
    for (const id of images) {
      await this.session.request(`${glance}/v2/images/${id}`, { method: 'DELETE', service: 'Glance', expect: [204, 404] }).catch(() => undefined);
    }
    this.session.close();
    await this.store.close();
    await this.proxy.stop();
    await this.cloud.close();
    await rm(this.dir, { recursive: true, force: true });
  }
}

