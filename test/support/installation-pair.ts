/**
 * Test support for more than one installation on one gearmand and one cloud: each
 * installation has its own server config, SQLite state dir (so its own installation id), and
 * in-process builders with their own images-dirs; all of them share the gearmand and the
 * loopback Keystone+Glance given. Builders can be stopped and started again on the same
 * images-dir (their files and builder id stay).
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import yaml from 'js-yaml';
import { loadConfig } from '../../lib/config/load.js';
import type { Config } from '../../lib/config/schema.js';
import { waitFor } from '../../lib/lifecycle.js';
import type { BuildRecord, UploadRecord } from '../../lib/store/models.js';
import { openStore } from '../../lib/store/open-store.js';
import type { Store } from '../../lib/store/store.js';
import { NodepoolServer } from '../../server/main.js';
import type { DibBuilder } from '../../workers/builder/dib-builder.js';
import { createBuilderEnv, inProcessBuilder, type BuilderEnv, type RawDiskimage, type RawProvider } from './builder-env.js';
import type { GearmandHandle } from './gearmand.js';
import { testImageServices } from './image-services.js';
import { lifecyclePasses } from './image-system.js';
import type { LoopbackCloud } from './openstack.js';
import { testLogger } from './test-log.js';

/** Options of {@link Installation.create}. */
export interface InstallationOptions {
  name: string;
  gearmand: GearmandHandle;
  cloud: LoopbackCloud;
  diskimages: RawDiskimage[];
  providers: RawProvider[];
  /** `image-lifecycle` keys laid over fast test values. */
  lifecycle?: Record<string, number | boolean>;
}

/** One in-process builder of an installation. */
export interface InstallationBuilder {
  env: BuilderEnv;
  builder: DibBuilder | undefined;
}

export class Installation {
  readonly builders = new Map<string, InstallationBuilder>();
  server: NodepoolServer | undefined;

  private constructor(readonly opts: InstallationOptions, readonly dir: string, readonly configPath: string, readonly store: Store) {}

  /** Writes the server config (state in `<dir>/state`) and opens the store; starts nothing. */
  static async create(opts: InstallationOptions): Promise<Installation> {
    const dir = await mkdtemp(path.join(os.tmpdir(), `nodepool-installation-${opts.name}-`));
    await mkdir(path.join(dir, 'state'), { recursive: true });
    const configPath = path.join(dir, 'server.yaml');
    await writeFile(configPath, yaml.dump({
      'gearman-servers': [{ host: '127.0.0.1', port: opts.gearmand.port }],
      'state-dir': path.join(dir, 'state'),
      'clouds-file': opts.cloud.cloudsYamlPath,
      'image-lifecycle': { interval: 1, 'retry-delay': 2, 'max-retry-delay': 8, 'build-timeout-grace': 5, 'leak-check-interval': 1, 'stray-grace': 2, ...opts.lifecycle },
      launcher: { 'session-ttl': 3 },
      diskimages: opts.diskimages,
      providers: opts.providers,
    }));
    return new Installation(opts, dir, configPath, await openStore(loadConfig(configPath)));
  }

  get config(): Config {
    return loadConfig(this.configPath);
  }

  /** Starts builder `builder-<installation>-<name>`, on its existing images-dir when it ran before. */
  async startBuilder(name: string): Promise<DibBuilder> {
    let b = this.builders.get(name);
    if (!b) {
      const env = await createBuilderEnv({
        name: `${this.opts.name}-${name}`, gearmanPort: this.opts.gearmand.port, cloud: this.opts.cloud,
        diskimages: this.opts.diskimages, providers: this.opts.providers,
      });
      b = { env, builder: undefined };
      this.builders.set(name, b);
    }
    if (b.builder) return b.builder;
    const builder = inProcessBuilder(b.env, { hostname: `builder-${this.opts.name}-${name}` });
    await builder.start();
    b.builder = builder;
    return builder;
  }

  /** Stops a builder; its images-dir stays. */
  async stopBuilder(name: string): Promise<void> {
    const b = this.builders.get(name);
    await b?.builder?.stop({ abortAfterMs: 1000 });
    if (b) b.builder = undefined;
  }

  async startServer(): Promise<NodepoolServer> {
    const config = this.config;
    const log = testLogger();
    this.server = await NodepoolServer.create({ config, log, hostname: `server-${this.opts.name}`, imageServices: testImageServices(() => config.cloudsFile, log) });
    return this.server;
  }

  async stopServer(): Promise<void> {
    await this.server?.stop();
    this.server = undefined;
  }

  /** Resolves after the server's image lifecycle has completed `n` more passes (bounded). */
  passes(n: number, timeoutMs = 60_000): Promise<void> {
    const lifecycle = this.server?.lifecycle;
    if (!lifecycle) return Promise.reject(new Error(`installation ${this.opts.name} has no server with an image lifecycle`));
    return lifecyclePasses(lifecycle, n, timeoutMs, `passes of ${this.opts.name}`);
  }


  /** Waits until `cond` holds over this installation's builds and uploads (bounded). */
  waitForState(what: string, cond: (s: { builds: BuildRecord[]; uploads: UploadRecord[] }) => boolean, timeoutMs = 90_000): Promise<{ builds: BuildRecord[]; uploads: UploadRecord[] }> {
    return waitFor(async () => {
      const s = { builds: await this.store.listBuilds(), uploads: await this.store.listUploads() };
      return cond(s) ? s : undefined;
    }, { timeoutMs, what: `${this.opts.name}: ${what}`, intervalMs: 100 });
  }

  /** Stops the server and builders, closes the store, removes every file. */
  async stop(): Promise<void> {
    await this.stopServer().catch(() => undefined);
    for (const name of this.builders.keys()) await this.stopBuilder(name).catch(() => undefined);
    await this.store.close();
    for (const b of this.builders.values()) await b.env.remove();
    await rm(this.dir, { recursive: true, force: true });
  }
}
