/**
 * Test support for the whole image system on loopback: a real gearmand, the loopback
 * Keystone+Glance, builders (each with its own images-dir, in-process or as processes) and a
 * nodepool-server (in-process or as a process) sharing one SQLite state dir, plus a store
 * handle for assertions.
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import yaml from 'js-yaml';
import { loadConfig } from '../../lib/config/load.js';
import type { Config } from '../../lib/config/schema.js';
import { testImageServices } from './image-services.js';
import { waitFor } from '../../lib/lifecycle.js';
import type { BuildRecord, UploadRecord } from '../../lib/store/models.js';
import { openStore } from '../../lib/store/open-store.js';
import type { Store } from '../../lib/store/store.js';
import type { ImageLifecycle } from '../../server/image-lifecycle/image-lifecycle.js';
import { NodepoolServer } from '../../server/main.js';
import type { DibBuilder } from '../../workers/builder/dib-builder.js';
import {
  builderProcess, createBuilderEnv, glanceAdmin, inProcessBuilder, type BuilderEnv, type RawDiskimage, type RawProvider,
} from './builder-env.js';
import { startGearmand, type GearmandHandle, type StartGearmandOptions } from './gearmand.js';
import { useLoopbackCloud, type LoopbackCloud } from './openstack.js';
import type { ListedImage } from '../../lib/drivers/contract/image-service.js';
import { INSTALLATION_PROPERTY } from '../../lib/store/installation.js';
import { startProcess, startTogether, type TrackedProcess } from './processes.js';
import { testLogger } from './test-log.js';
import { nodeScript } from './node-command.js';

const ROOT = path.resolve('.');

/** Options of {@link startImageSystem}. */
export interface ImageSystemOptions {
  diskimages: RawDiskimage[];
  providers: RawProvider[];
  /** `image-lifecycle` block; defaults to fast test values. */
  lifecycle?: Record<string, number | boolean>;
  gearmand?: StartGearmandOptions;
  /** Keep the state in this ZooKeeper (under `chroot`, default `/image-system`) instead of SQLite. */
  zookeeper?: { port: number; chroot?: string };
}

/** One builder of the system. */
export interface SystemBuilder {
  name: string;
  env: BuilderEnv;
  inProcess?: DibBuilder;
  process?: TrackedProcess;
}

export class ImageSystem {
  readonly builders = new Map<string, SystemBuilder>();
  private readonly envs: BuilderEnv[] = [];
  server: NodepoolServer | undefined;
  serverProcess: TrackedProcess | undefined;
  private diskimages: RawDiskimage[];
  private providers: RawProvider[];
  private readonly zookeeper: ImageSystemOptions['zookeeper'];

  private constructor(
    readonly gearmand: GearmandHandle,
    readonly cloud: LoopbackCloud,
    readonly dir: string,
    readonly store: Store,
    readonly serverConfigPath: string,
    private readonly lifecycle: Record<string, number | boolean>,
    opts: ImageSystemOptions,
  ) {
    this.zookeeper = opts.zookeeper;
    this.diskimages = opts.diskimages;
    this.providers = opts.providers;
  }

  /**
   * Starts gearmand, writes the server config and opens the store; Keystone+Glance is the run's
   * shared one (a private one outside the runner). Other test files' images in it are never
   * this system's: the server's leak check and retention touch only images carrying its store's
   * installation id, and tests list Glance through {@link glanceImages}, which filters by it.
   */
  static async start(opts: ImageSystemOptions): Promise<ImageSystem> {
    const [gearmand, cloud] = await startTogether([startGearmand(opts.gearmand), useLoopbackCloud()]);
    const probe = await createBuilderEnv({ name: 'server', gearmanPort: gearmand.port, cloud });
    const lifecycle = { interval: 1, 'retry-delay': 2, 'max-retry-delay': 8, 'build-timeout-grace': 5, 'leak-check-interval': 2, 'stray-grace': 2, ...opts.lifecycle };
    const serverConfigPath = path.join(probe.dir, 'server.yaml');
    const sys = new ImageSystem(gearmand, cloud, probe.dir, undefined as unknown as Store, serverConfigPath, lifecycle, opts);
    const config = await sys.writeServerConfig();
    (sys as { store: Store }).store = await openStore(config);
    return sys;
  }

  /** Rewrites the server's config (and every builder's) with changed diskimages/providers. */
  async reconfigure(changes: { diskimages?: RawDiskimage[]; providers?: RawProvider[] }): Promise<Config> {
    this.diskimages = changes.diskimages ?? this.diskimages;
    this.providers = changes.providers ?? this.providers;
    for (const b of this.builders.values()) {
      const c = await b.env.rewrite({ diskimages: this.diskimages, providers: this.providers });
      b.inProcess?.reconfigure(c);
    }
    const config = await this.writeServerConfig();
    this.server?.reconfigure(config);
    return config;
  }

  private async writeServerConfig(): Promise<Config> {
    await mkdir(path.join(this.dir, 'state'), { recursive: true });
    await writeFile(this.serverConfigPath, yaml.dump({
      'gearman-servers': [{ host: '127.0.0.1', port: this.gearmand.port }],
      'state-dir': path.join(this.dir, 'state'),
      ...(this.zookeeper ? { 'zookeeper-servers': [{ host: '127.0.0.1', port: this.zookeeper.port, chroot: this.zookeeper.chroot ?? '/image-system' }] } : {}),
      'clouds-file': this.cloud.cloudsYamlPath,
      'image-lifecycle': this.lifecycle,
      // A killed server's session (and its image-lifecycle leadership) lapses after this.
      launcher: { 'session-ttl': 3 },
      diskimages: this.diskimages,
      providers: this.providers,
    }));
    return loadConfig(this.serverConfigPath);
  }

  /** Adds and starts a builder (`builder-<name>`), in-process unless `process` is set. */
  async addBuilder(name: string, opts: { process?: boolean; diskimages?: RawDiskimage[] } = {}): Promise<SystemBuilder> {
    const env = await createBuilderEnv({
      name, gearmanPort: this.gearmand.port, cloud: this.cloud,
      diskimages: opts.diskimages ?? this.diskimages, providers: this.providers,
    });
    this.envs.push(env);
    const b: SystemBuilder = { name, env };
    if (opts.process) b.process = builderProcess(env, { hostname: `builder-${name}` });
    else {
      b.inProcess = inProcessBuilder(env, { hostname: `builder-${name}` });
      await b.inProcess.start();
    }
    this.builders.set(name, b);
    return b;
  }

  /** Stops a builder gracefully (drains for `abortAfterMs`). */
  async stopBuilder(name: string, abortAfterMs = 2000): Promise<void> {
    const b = this.builders.get(name);
    if (!b) return;
    await b.inProcess?.stop({ abortAfterMs });
    await b.process?.stop();
    this.builders.delete(name);
  }

  /** Starts nodepool-server in this process. */
  async startServer(): Promise<NodepoolServer> {
    const config = loadConfig(this.serverConfigPath);
    const log = testLogger();
    this.server = await NodepoolServer.create({
      config, log, hostname: 'test-server',
      imageServices: testImageServices(() => config.cloudsFile, log),
    });
    return this.server;
  }

  /** Starts `nodepool-server` as a child process (log in `<dir>/server.log`). */
  startServerProcess(): TrackedProcess {
    this.serverProcess = startProcess('nodepool-server', process.execPath, [
      ...nodeScript('bin/nodepool-server.ts'), '-c', this.serverConfigPath, '--hostname', 'test-server', '--log-level', 'debug',
    ], { cwd: ROOT, logFile: path.join(this.dir, 'server.log'), env: { ...process.env, NODEPOOL_CONFIG: '' } });
    return this.serverProcess;
  }

  async stopServer(): Promise<void> {
    await this.server?.stop();
    this.server = undefined;
    await this.serverProcess?.stop();
    this.serverProcess = undefined;
  }

  /** Resolves after the in-process server's image lifecycle has completed `n` more passes (bounded). */
  passes(n: number, timeoutMs = 30_000): Promise<void> {
    const lifecycle = this.server?.lifecycle;
    if (!lifecycle) return Promise.reject(new Error('no in-process server with an image lifecycle'));
    return lifecyclePasses(lifecycle, n, timeoutMs, 'image-lifecycle passes');
  }


  /** Waits for a build matching `pred` (bounded). */
  waitForBuild(what: string, pred: (b: BuildRecord, all: BuildRecord[]) => boolean, timeoutMs = 60_000): Promise<BuildRecord> {
    return waitFor(async () => {
      const all = await this.store.listBuilds();
      return all.find((b) => pred(b, all));
    }, { timeoutMs, what, intervalMs: 100 });
  }

  /** Waits until `cond` holds over the builds and uploads (bounded). */
  waitForState(what: string, cond: (s: { builds: BuildRecord[]; uploads: UploadRecord[] }) => boolean, timeoutMs = 60_000): Promise<{ builds: BuildRecord[]; uploads: UploadRecord[] }> {
    return waitFor(async () => {
      const s = { builds: await this.store.listBuilds(), uploads: await this.store.listUploads() };
      return cond(s) ? s : undefined;
    }, { timeoutMs, what, intervalMs: 100 });
  }

  /** The admin's Glance, made at the first {@link glanceImages}. */
  private glance: ReturnType<typeof glanceAdmin> | undefined;

  /** This installation's Glance images with `properties` (the cloud may be shared with other test files). */
  async glanceImages(properties: Record<string, string>): Promise<ListedImage[]> {
    this.glance ??= glanceAdmin(this.cloud);
    return (await this.glance).list({ properties: { ...properties, [INSTALLATION_PROPERTY]: await this.store.installationId() } });
  }

  /** Stops everything this system started, and removes its files. */
  async stop(): Promise<void> {
    await this.stopServer().catch(() => undefined);
    for (const name of [...this.builders.keys()]) await this.stopBuilder(name, 1000).catch(() => undefined);
    await this.store.close();
    await this.gearmand.stop();
    await this.cloud.stop();
    for (const env of this.envs) await env.remove();
    await rm(this.dir, { recursive: true, force: true });
  }
}

export type { BuilderEnv };

/** Resolves after `n` more complete passes of `lifecycle`; rejects (naming `what`) after `timeoutMs`. */
export function lifecyclePasses(lifecycle: ImageLifecycle, n: number, timeoutMs: number, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let left = n;
    const done = (err?: Error): void => {
      clearTimeout(timer);
      lifecycle.off('pass:complete', onPass);
      if (err) reject(err);
      else resolve();
    };
    const onPass = (): void => { if (--left === 0) done(); };
    const timer = setTimeout(() => done(new Error(`${n} ${what} did not complete within ${timeoutMs} ms`)), timeoutMs);
    lifecycle.on('pass:complete', onPass);
  });
}
