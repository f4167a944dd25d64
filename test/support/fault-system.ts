/**
 * Test support for the fault suite (test/faults/): the image system on real parts — gearmand,
 * the run's loopback Keystone+Glance (reached through a {@link GlanceFaultProxy}), a
 * `nodepool-builder` and a `nodepool-server` as processes (killed and restarted by the
 * scenarios; only their command lines are used), one SQLite state dir — with two diskimages:
 * `base`, built and uploaded before the fault (what must not be lost), and `victim`, whose
 * build (paused in fake-dib) or upload (held by the proxy) the fault hits. The provider's name
 * is unique per system, so the server's leak check and the audit see only this system's images
 * on a shared cloud. {@link FaultSystem.audit} counts what was lost and leaked.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { mkdtemp, mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import yaml from 'js-yaml';
import { loadConfig } from '../../lib/config/load.js';
import { waitFor } from '../../lib/lifecycle.js';
import type { BuildRecord, UploadRecord } from '../../lib/store/models.js';
import { openStore } from '../../lib/store/open-store.js';
import type { Store } from '../../lib/store/store.js';
import { createBuilderEnv, fakeDiskimage, glanceAdmin, loopbackProvider, type BuilderEnv, type RawDiskimage, type RawProvider } from './builder-env.js';
import { startGearmand, type GearmandHandle, type StartGearmandOptions } from './gearmand.js';
import { GlanceFaultProxy } from './glance-fault-proxy.js';
import { useLoopbackCloud, type LoopbackCloud } from './openstack.js';
import { startProcess, startTogether, type TrackedProcess } from './processes.js';
import { secretsIn } from './secret-scan.js';
import { nodeScript } from './node-command.js';

const ROOT = path.resolve('.');
const FINAL_BUILD = new Set(['ready', 'failed', 'lost']);
const FINAL_UPLOAD = new Set(['ready', 'failed']);

/** Options of {@link FaultSystem.start}. */
export interface FaultSystemOptions {
  gearmand?: StartGearmandOptions;
  /** Extra fake-dib knobs for `victim`. */
  victimEnv?: Record<string, string>;
  /** Diskimages instead of `base` + `victim`. */
  diskimages?: RawDiskimage[];
  /** The format of both diskimages and the provider's `image-format` (default raw). */
  format?: string;
  /** More keys of the provider entry (e.g. `image-upload-timeout`). */
  provider?: Record<string, unknown>;
  /**
   * Keep the state in this ZooKeeper (a chroot of its own per system) instead of SQLite,
   * with this session timeout in seconds (the server's `zookeeper-timeout`).
   */
  zookeeper?: { port: number; sessionTimeoutS: number };
}

/** The builder of a system: one images-dir, run as a process (restartable on the same files). */
export interface FaultBuilder {
  env: BuilderEnv;
  hostname: string;
  process?: TrackedProcess;
}

/** What {@link FaultSystem.audit} found. */
export interface FaultAudit {
  lost: number;
  leaked: number;
  /** One line per lost or leaked thing, for assertion messages. */
  details: string[];
}

export class FaultSystem {
  builder: FaultBuilder | undefined;
  server: TrackedProcess | undefined;
  /**
   * Every upload record a {@link waitForState} poll saw `failed`, by id, as first seen. Retention
   * deletes a failed upload once a newer one is ready (the pass after), so a listing made after
   * {@link settled} may no longer hold them (CI 2026-12-02: glance-hash-mismatch read 0 of 2).
   */
  readonly failedUploadsSeen = new Map<string, UploadRecord>();
  private readonly pause: string;

  private constructor(
    readonly gearmand: GearmandHandle,
    readonly cloud: LoopbackCloud,
    readonly proxy: GlanceFaultProxy,
    readonly dir: string,
    readonly provider: string,
    readonly diskimages: RawDiskimage[],
    readonly serverConfigPath: string,
    readonly store: Store,
    private readonly providerEntry: RawProvider,
  ) {
    this.pause = path.join(dir, 'victim.pause');
  }

  static async start(opts: FaultSystemOptions = {}): Promise<FaultSystem> {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-fault-'));
    const [gearmand, cloud] = await startTogether([startGearmand(opts.gearmand), useLoopbackCloud()]);
    const proxy = await GlanceFaultProxy.start(cloud, dir);
    const provider = `fault-${randomBytes(4).toString('hex')}`;
    const format = opts.format ?? 'raw';
    const diskimages = opts.diskimages ?? [
      fakeDiskimage('base', { formats: [format] }),
      // 16 MiB (raw is sent in full): more than the loopback socket buffers hold, so a held upload really waits.
      fakeDiskimage('victim', { formats: [format] }, { FAKE_DIB_SIZE_MIB: '16', FAKE_DIB_PAUSE_FILE: path.join(dir, 'victim.pause'), ...opts.victimEnv }),
    ];
    const providerEntry = { ...loopbackProvider(provider, diskimages.map((d) => d.name), format), ...opts.provider };
    const serverConfigPath = path.join(dir, 'server.yaml');
    await mkdir(path.join(dir, 'state'), { recursive: true });
    await writeFile(serverConfigPath, yaml.dump({
      'gearman-servers': [{ host: '127.0.0.1', port: gearmand.port }],
      'state-dir': path.join(dir, 'state'),
      ...(opts.zookeeper ? {
        'zookeeper-servers': [{ host: '127.0.0.1', port: opts.zookeeper.port, chroot: `/${provider}` }],
        'zookeeper-timeout': opts.zookeeper.sessionTimeoutS,
      } : {}),
      'clouds-file': proxy.cloudsYamlPath,
      'image-lifecycle': { interval: 1, 'retry-delay': 1, 'max-retry-delay': 4, 'build-timeout-grace': 5, 'leak-check-interval': 2, 'stray-grace': 2, 'lost-grace': 120 },
      launcher: { 'session-ttl': 3 },
      diskimages,
      providers: [providerEntry],
    }));
    const store = await openStore(loadConfig(serverConfigPath));
    return new FaultSystem(gearmand, cloud, proxy, dir, provider, diskimages, serverConfigPath, store, providerEntry);
  }

  /** Makes `victim`'s next DIB run wait (before writing outputs) until {@link resumeBuild}. */
  async pauseBuild(): Promise<void> {
    await writeFile(this.pause, '');
  }

  async resumeBuild(): Promise<void> {
    await rm(this.pause, { force: true });
  }

  /** Resolves once a victim DIB run sits at the pause. */
  waitBuildPaused(timeoutMs = 60_000): Promise<boolean> {
    return waitFor(async () => (await readdir(this.dir)).includes('victim.pause.started'), { timeoutMs, what: 'victim build paused in fake-dib' });
  }

  /** Creates the builder's env (first call; `beforeStart` runs then) and starts `nodepool-builder` on it. */
  async startBuilder(opts: { shutdownTimeoutS?: number; beforeStart?: (env: BuilderEnv) => Promise<void> } = {}): Promise<FaultBuilder> {
    if (!this.builder) {
      const env = await createBuilderEnv({
        name: 'fault', gearmanPort: this.gearmand.port, cloud: { ...this.cloud, cloudsYamlPath: this.proxy.cloudsYamlPath },
        diskimages: this.diskimages, providers: [this.providerEntry],
      });
      this.builder = { env, hostname: 'builder-fault' };
      await opts.beforeStart?.(env);
    }
    const b = this.builder;
    // Two build workers: base builds while victim's DIB waits at its pause.
    b.process = startProcess('nodepool-builder', process.execPath, [
      ...nodeScript('bin/nodepool-builder.ts'), '-c', b.env.configPath, '--hostname', b.hostname,
      '--build-workers', '2', '--shutdown-timeout', String(opts.shutdownTimeoutS ?? 1), '--log-level', 'debug',
    ], { cwd: ROOT, logFile: path.join(b.env.dir, 'builder.log'), env: { ...process.env, NODEPOOL_CONFIG: '' } });
    return b;
  }

  async stopBuilder(): Promise<void> {
    await this.builder?.process?.stop();
    if (this.builder) this.builder.process = undefined;
  }

  /** Starts `nodepool-server` (its log goes to `<dir>/server.log`). */
  startServer(): TrackedProcess {
    this.server = startProcess('nodepool-server', process.execPath, [
      ...nodeScript('bin/nodepool-server.ts'), '-c', this.serverConfigPath, '--hostname', 'fault-server', '--log-level', 'debug',
    ], { cwd: ROOT, logFile: path.join(this.dir, 'server.log'), env: { ...process.env, NODEPOOL_CONFIG: '' } });
    return this.server;
  }

  async stopServer(): Promise<void> {
    await this.server?.stop();
    this.server = undefined;
  }

  /** Waits until `cond` holds over the builds and uploads (bounded). */
  waitForState(what: string, cond: (s: { builds: BuildRecord[]; uploads: UploadRecord[] }) => boolean, timeoutMs = 60_000): Promise<{ builds: BuildRecord[]; uploads: UploadRecord[] }> {
    return waitFor(async () => {
      const s = { builds: await this.store.listBuilds(), uploads: await this.store.listUploads() };
      for (const u of s.uploads) if (u.state === 'failed' && !this.failedUploadsSeen.has(u.id)) this.failedUploadsSeen.set(u.id, u);
      return cond(s) ? s : undefined;
    }, { timeoutMs, what, intervalMs: 100 });
  }

  /** Waits until every record is final and each diskimage has a ready build uploaded (bounded). */
  settled(timeoutMs = 90_000): Promise<{ builds: BuildRecord[]; uploads: UploadRecord[] }> {
    return this.waitForState('every build and upload final, each diskimage ready and uploaded', (s) =>
      s.builds.every((b) => FINAL_BUILD.has(b.state)) && s.uploads.every((u) => FINAL_UPLOAD.has(u.state))
      && this.diskimages.every((d) => s.builds.some((b) => b.diskimage === d.name && b.state === 'ready'
        && s.uploads.some((u) => u.buildId === b.id && u.state === 'ready'))), timeoutMs);
  }

  /** Ids of the ready builds and uploads now (what must not be lost). */
  async readyIds(): Promise<{ builds: string[]; uploads: string[] }> {
    return {
      builds: (await this.store.listBuilds()).filter((b) => b.state === 'ready').map((b) => b.id),
      uploads: (await this.store.listUploads()).filter((u) => u.state === 'ready').map((u) => u.id),
    };
  }

  /**
   * Lost: `before`'s ready records not ready now. Leaked (after giving the server's leak check
   * `graceMs`): this provider's Glance images that no ready upload names; files in the
   * images-dir and build dirs in its tmp dir that no ready build wants; processes whose
   * environment points into this system's directories (they are killed after counting). The
   * grace is a bound, not a wait: 60 s, as a clean-clone run at load 9-10 saw a killed build's
   * files still being removed past 20 s.
   */
  async audit(before: { builds: string[]; uploads: string[] }, graceMs = 60_000): Promise<FaultAudit> {
    const details: string[] = [];
    const builds = new Map((await this.store.listBuilds()).map((b) => [b.id, b]));
    const uploads = new Map((await this.store.listUploads()).map((u) => [u.id, u]));
    for (const id of before.builds) if (builds.get(id)?.state !== 'ready') details.push(`lost build ${id} (${builds.get(id)?.state ?? 'gone'})`);
    for (const id of before.uploads) if (uploads.get(id)?.state !== 'ready') details.push(`lost upload ${id} (${uploads.get(id)?.state ?? 'gone'})`);
    const lost = details.length;
    const leaks = [...await this.leaks(graceMs), ...await this.secretsInLogs()];
    details.push(...leaks);
    return { lost, leaked: leaks.length, details };
  }

  /**
   * The clouds.yaml passwords the daemons were given, wherever they appear in the server's or
   * the builder's log or a build log (a leaked secret counts as leaked, like a stray image).
   */
  private async secretsInLogs(): Promise<string[]> {
    const env = this.builder?.env;
    const logs = [path.join(this.dir, 'server.log'), ...(env ? [path.join(env.dir, 'builder.log')] : [])];
    if (env) logs.push(...(await readdir(env.buildLogDir).catch(() => [] as string[])).map((f) => path.join(env.buildLogDir, f)));
    return secretsIn(this.proxy.cloudsYamlPath, logs);
  }


  private async leaks(graceMs: number): Promise<string[]> {
    const glance = await glanceAdmin(this.cloud);
    const strayImages = async (): Promise<string[]> => {
      const wanted = new Set((await this.store.listUploads()).filter((u) => u.state === 'ready').map((u) => u.externalId));
      return (await glance.list({ properties: { nodepool_provider_name: this.provider } }))
        .filter((i) => !wanted.has(i.externalId)).map((i) => `Glance image ${i.externalId} (${i.name}, ${i.status})`);
    };
    const strayFiles = async (): Promise<string[]> => {
      const env = this.builder?.env;
      if (!env) return [];
      const wanted = new Set((await this.store.listBuilds()).filter((b) => b.state === 'ready').map((b) => b.id));
      const out = (await readdir(env.imagesDir)).filter((f) => f !== 'builder_id.txt' && f !== '.tmp' && !wanted.has(f.replace(/\..*$/, '')))
        .map((f) => `file ${f} in images-dir`);
      const tmp = path.join(env.imagesDir, '.tmp');
      const tmpEntries = await readdir(tmp).catch(() => [] as string[]);
      return out.concat(tmpEntries.filter((f) => f !== 'image-cache').map((f) => `build dir .tmp/${f}`));
    };
    let last: string[] = [];
    try {
      await waitFor(async () => (last = [...await strayImages(), ...await strayFiles(), ...this.strayProcesses().map(([pid, c]) => `process ${pid} (${c})`)]).length === 0,
        { timeoutMs: graceMs, what: 'no stray image, file or process', intervalMs: 500 });
    } catch {
      // counted below
    }
    for (const [pid] of this.strayProcesses()) {
      try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
    }
    return last;
  }

  /** Processes (fake-dib and its children) whose environment names this system's directories. */
  private strayProcesses(): Array<[number, string]> {
    const roots = [this.dir, this.builder?.env.dir].filter((d): d is string => !!d);
    const out: Array<[number, string]> = [];
    for (const name of readdirSync('/proc')) {
      if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
      try {
        const env = readFileSync(`/proc/${name}/environ`, 'latin1').split('\0');
        if (!env.some((kv) => roots.some((r) => kv.includes(`=${r}`)))) continue;
        out.push([Number(name), readFileSync(`/proc/${name}/comm`, 'utf8').trim()]);
      } catch {
        // gone, or not ours to read
      }
    }
    return out;
  }

  /** The last lines of the server's and the builder's logs (for failure messages). */
  async logTails(lines = 15): Promise<string> {
    const tail = async (file: string): Promise<string> => (await readFile(file, 'utf8').catch(() => '(no log)')).trimEnd().split('\n').slice(-lines).join('\n');
    const b = this.builder;
    return `server (${this.server?.alive() ? 'running' : 'not running'}):\n${await tail(path.join(this.dir, 'server.log'))}\n`
      + `builder (${b?.process?.alive() ? 'running' : 'not running'}):\n${b ? await tail(path.join(b.env.dir, 'builder.log')) : ''}`;
  }

  /** Stops everything this system started, and removes its files. */
  async stop(): Promise<void> {
    await this.resumeBuild();
    await this.stopServer().catch(() => undefined);
    await this.stopBuilder().catch(() => undefined);
    await this.store.close();
    await this.proxy.stop();
    await this.gearmand.stop();
    await this.cloud.stop();
    // NODEPOOL_FAULTS_KEEP=1 keeps the directories (server.log, builder.log, build logs) for a look after a failure.
    if (process.env.NODEPOOL_FAULTS_KEEP) return;
    await this.builder?.env.remove();
    await rm(this.dir, { recursive: true, force: true });
  }
}
