/**
 * A launcher under test: a temp dir with a nodepool.yaml (labels + providers given raw, a
 * fast `launcher` section), nodepool-server in this process or as child processes (several
 * may share the store, each limited with `--provider`), a store handle and consumer clients.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import yaml from 'js-yaml';
import { NodepoolClient } from '../../lib/client/nodepool-client.js';
import { loadConfig } from '../../lib/config/load.js';
import { testImageServices } from './image-services.js';
import { waitFor } from '../../lib/lifecycle.js';
import type { NodeRecord, NodeRequestRecord } from '../../lib/store/models.js';
import { openStore } from '../../lib/store/open-store.js';
import type { Store } from '../../lib/store/store.js';
import { NodepoolServer } from '../../server/main.js';
import { startProcess, type TrackedProcess } from './processes.js';
import { testLogger } from './test-log.js';
import { nodeScript } from './node-command.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Raw YAML pieces of the config under test. */
export interface LauncherConfigParts {
  labels: Array<Record<string, unknown>>;
  providers: Array<Record<string, unknown>>;
  /** Other top-level keys (clouds-file, diskimages, max-hold-age, …). */
  extra?: Record<string, unknown>;
  /** Overrides of the fast test `launcher` section. */
  launcher?: Record<string, unknown>;
}

export class LauncherSystem {
  private servers = new Map<string, NodepoolServer>();
  private processes = new Map<string, TrackedProcess>();
  private clients: NodepoolClient[] = [];

  private constructor(readonly dir: string, readonly configPath: string, readonly store: Store, private parts: LauncherConfigParts) {}

  static async create(parts: LauncherConfigParts): Promise<LauncherSystem> {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-launcher-'));
    const configPath = path.join(dir, 'nodepool.yaml');
    await writeFile(configPath, LauncherSystem.render(dir, parts));
    const store = await openStore(loadConfig(configPath));
    return new LauncherSystem(dir, configPath, store, parts);
  }

  private static render(dir: string, parts: LauncherConfigParts): string {
    return yaml.dump({
      'state-dir': path.join(dir, 'state'),
      'images-dir': path.join(dir, 'images'),
      'build-log-dir': path.join(dir, 'logs'),
      launcher: { interval: 0.2, 'delete-interval': 0.5, 'cleanup-interval': 1, 'session-ttl': 3, ...parts.launcher },
      labels: parts.labels,
      providers: parts.providers,
      ...parts.extra,
    });
  }

  /** Rewrites the config and hands it to the in-process servers (processes watch the file). */
  async rewrite(update: (parts: LauncherConfigParts) => LauncherConfigParts): Promise<void> {
    this.parts = update(structuredClone(this.parts));
    await writeFile(this.configPath, LauncherSystem.render(this.dir, this.parts));
    const config = loadConfig(this.configPath);
    for (const s of this.servers.values()) {
      s.reconfigure(config);
      await s.launcher.reconfigure();
    }
  }

  /** Starts nodepool-server in this process (optionally limited to some providers). */
  async startServer(name = 'server', providers?: string[]): Promise<NodepoolServer> {
    const config = loadConfig(this.configPath);
    const log = testLogger();
    const server = await NodepoolServer.create({
      config, log, hostname: name, ...(providers ? { providers } : {}),
      imageServices: testImageServices(() => config.cloudsFile, log),
    });
    this.servers.set(name, server);
    return server;
  }

  /** Starts `nodepool-server` as a child process (log in `<dir>/<name>.log`). */
  startServerProcess(name = 'server', providers: string[] = []): TrackedProcess {
    const p = startProcess(name, process.execPath, [
      ...nodeScript('bin/nodepool-server.ts'), '-c', this.configPath, '--hostname', name, '--log-level', 'debug',
      ...providers.flatMap((pr) => ['--provider', pr]),
    ], { cwd: ROOT, logFile: path.join(this.dir, `${name}.log`), env: { ...process.env, NODEPOOL_CONFIG: '' } });
    this.processes.set(name, p);
    return p;
  }

  async stopServer(name = 'server'): Promise<void> {
    await this.servers.get(name)?.stop();
    this.servers.delete(name);
    await this.processes.get(name)?.stop();
    this.processes.delete(name);
  }

  /** A consumer client on this system's store. */
  async client(requestor = 'test-consumer'): Promise<NodepoolClient> {
    const c = await NodepoolClient.open({ config: loadConfig(this.configPath), requestor });
    this.clients.push(c);
    return c;
  }

  waitForNodes(what: string, pred: (nodes: NodeRecord[]) => boolean, timeoutMs = 60_000): Promise<NodeRecord[]> {
    return waitFor(async () => {
      const nodes = await this.store.listNodes();
      return pred(nodes) ? nodes : undefined;
    }, { timeoutMs, what, intervalMs: 100 });
  }

  waitForRequest(id: string, states: ReadonlyArray<NodeRequestRecord['state']>, timeoutMs = 60_000): Promise<NodeRequestRecord> {
    return waitFor(async () => {
      const r = await this.store.getRequest(id);
      return r && states.includes(r.state) ? r : undefined;
    }, { timeoutMs, what: `request ${id} ${states.join('/')}`, intervalMs: 100 });
  }

  async stop(): Promise<void> {
    for (const c of this.clients) await c.close().catch(() => undefined);
    for (const name of [...this.servers.keys(), ...this.processes.keys()]) await this.stopServer(name).catch(() => undefined);
    await this.store.close();
    await rm(this.dir, { recursive: true, force: true });
  }
}
