/**
 * Shared set-up of the static driver's integration tests: a SQLite store in a temp dir, a
 * live session, a config written as YAML and checked by the real loader, a logger that
 * also keeps its lines so tests can assert what an operator would read, and the providers
 * and sshds a test starts (stopped by close()).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { parseConfig } from '../../../../lib/config/load.js';
import type { Config } from '../../../../lib/config/schema.js';
import type { Provider, ProviderContext } from '../../../../lib/drivers/contract/driver.js';
import type { StaticProviderConfig } from '../../../../lib/drivers/static/config.js';
import { staticDriver } from '../../../../lib/drivers/static/index.js';
import type { StaticProvider } from '../../../../lib/drivers/static/provider.js';
import { createRootLogger } from '../../../../lib/log.js';
import { SqliteStore } from '../../../../lib/store/sqlite/sqlite-store.js';
import type { Store } from '../../../../lib/store/store.js';
import { startSshd, type SshdHandle } from '../../../support/sshd.js';

/** A valid ed25519 public key that no fixture sshd has. */
export const FOREIGN_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIM1qNexya9cNGntI0Mw7ddjnvYrt4B9xRaz50xQ7c2+r';

/** One `nodes[]` entry of the test config. */
export interface TestHost {
  name: string;
  port: number;
  labels?: string[];
  hostKey?: string[];
  maxParallelJobs?: number;
  timeout?: number;
  connectionType?: string;
  /** Further node keys as written in the YAML (e.g. `python-path`, `host-key-checking`). */
  extra?: Record<string, unknown>;
}

/** A static provider config named `lab` with pool `main` serving labels small and big. */
export function staticConfigYaml(hosts: readonly TestHost[]): string {
  const node = (h: TestHost): string => JSON.stringify({
    name: h.name,
    'connection-port': h.port,
    labels: h.labels ?? ['small'],
    timeout: h.timeout ?? 30, // seconds a scan of a live sshd may take: over 2 s at load 10
    ...(h.hostKey ? { 'host-key': h.hostKey } : {}),
    ...(h.maxParallelJobs ? { 'max-parallel-jobs': h.maxParallelJobs } : {}),
    ...(h.connectionType ? { 'connection-type': h.connectionType } : {}),
    ...h.extra,
  });
  return [
    'labels: [{name: small}, {name: big}]',
    'providers:',
    '  - name: lab',
    '    driver: static',
    '    pools:',
    '      - name: main',
    '        node-attributes: {rack: r1}',
    `        nodes: [${hosts.map(node).join(', ')}]`,
    '',
  ].join('\n');
}

/** A store, session and log for one test file. */
export class StaticEnv {
  readonly lines: string[] = [];
  private readonly providers: Provider[] = [];
  private readonly sshds: SshdHandle[] = [];
  private constructor(readonly dir: string, readonly store: Store, readonly sessionId: string) {}

  static async create(): Promise<StaticEnv> {
    const dir = await mkdtemp(path.join(tmpdir(), 'static-driver-'));
    const store = await SqliteStore.open(path.join(dir, 'nodepool.db'));
    const session = await store.openSession({ owner: 'static-driver-test', hostname: 'localhost', pid: process.pid, ttlMs: 600_000 });
    return new StaticEnv(dir, store, session.id);
  }

  /** Loads the YAML with the real loader; returns the whole config and the `lab` provider. */
  config(hosts: readonly TestHost[]): { config: Config; provider: StaticProviderConfig } {
    const config = parseConfig(staticConfigYaml(hosts), path.join(this.dir, 'nodepool.yaml'));
    const provider = config.providers.find((p) => p.name === 'lab');
    if (provider?.driver !== 'static') throw new Error('test config has no static provider lab');
    return { config, provider };
  }

  /** The provider context (under this env's session unless `sessionId` is given); log lines are kept in {@link lines} (JSON). */
  ctx(config: Config, sessionId: () => string = () => this.sessionId): ProviderContext {
    const sink = new Writable({ write: (chunk: Buffer, _enc, cb) => { this.lines.push(...chunk.toString('utf8').split('\n').filter(Boolean)); cb(); } });
    return {
      store: this.store,
      log: createRootLogger({ level: 'debug', format: 'json', stream: sink }),
      clock: Date.now,
      config,
      sessionId,
    };
  }

  /** Log lines (parsed) at a level. */
  logged(level: string): Array<{ message: string; host?: string } & Record<string, unknown>> {
    return this.lines.map((l) => JSON.parse(l) as { level: string; message: string }).filter((l) => l.level === level);
  }

  /** Stops `p` in close(). */
  track<P extends Provider>(p: P): P {
    this.providers.push(p);
    return p;
  }

  /** Stops `s` in close(), after the providers. */
  trackSshd(s: SshdHandle): SshdHandle {
    this.sshds.push(s);
    return s;
  }

  /** An sshd on `host` (a loopback address), stopped in close(). */
  async sshd(host: string): Promise<SshdHandle> {
    return this.trackSshd(await startSshd({ host }));
  }

  /** Creates and starts the `lab` provider for these hosts (as the launcher does on a config change), stopped in close(). */
  async provider(hosts: TestHost[]): Promise<{ p: StaticProvider; config: StaticProviderConfig }> {
    const { config, provider: pc } = this.config(hosts);
    const p = this.track(staticDriver.createProvider(pc, this.ctx(config)) as StaticProvider);
    await p.start();
    return { p, config: pc };
  }

  /** Stops what the test started: providers, then sshds. */
  async stopStarted(): Promise<void> {
    await Promise.all(this.providers.splice(0).map((p) => p.stop()));
    await Promise.all(this.sshds.splice(0).map((s) => s.stop()));
  }

  async close(): Promise<void> {
    await this.stopStarted();
    await this.store.close();
    await rm(this.dir, { recursive: true, force: true });
  }
}
