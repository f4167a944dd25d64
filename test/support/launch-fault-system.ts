/**
 * Test support for the launch faults of the fault suite (test/faults/): a {@link LauncherSystem}
 * whose one openstack provider boots servers in the run's shared full cloud (Nova with the fake
 * virt driver) through a {@link NovaFaultProxy}, with `nodepool-server` run as a process
 * (killed and restarted by the scenarios). Two labels on m1.tiny: `steady` (min-ready 1, the
 * ready node that must not be lost) and `victim` (what the test requests while the fault hits).
 * The provider's name is unique per system, so the leak check and the audit see only this
 * system's servers in the shared Nova. {@link LaunchFaultSystem.settled} and
 * {@link LaunchFaultSystem.audit} say whether the system recovered and what was lost or leaked;
 * {@link finishLaunchFault} records the figures (test/support/fault-report.ts) and asserts.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadCloud } from '../../lib/drivers/openstack/clouds-yaml.js';
import { KeystoneSession } from '../../lib/drivers/openstack/keystone.js';
import { NovaClient, type NovaServer } from '../../lib/drivers/openstack/nova.js';
import { waitFor } from '../../lib/lifecycle.js';
import { secretsIn } from './secret-scan.js';
import type { NodeRecord, NodeRequestRecord } from '../../lib/store/models.js';
import type { NodepoolClient } from '../../lib/client/nodepool-client.js';
import { recordFault } from './fault-report.js';
import { LauncherSystem } from './launcher-system.js';
import { NovaFaultProxy } from './nova-fault-proxy.js';
import type { NovaCloud } from './openstack-full.js';
import type { TrackedProcess } from './processes.js';

/** Node states a settled system may have (the rest are on their way somewhere). */
const FINAL_NODE = new Set<NodeRecord['state']>(['ready', 'in-use', 'hold']);

/** Ready nodes before the fault (id → server id): what must not be lost. */
export type ReadyNodes = Map<string, string | null>;

/** What {@link LaunchFaultSystem.audit} found. */
export interface LaunchAudit {
  lost: number;
  leaked: number;
  /** One line per lost or leaked thing, for assertion messages. */
  details: string[];
}

export class LaunchFaultSystem {
  server: TrackedProcess | undefined;
  private client: NodepoolClient | undefined;
  private restarts = 0;

  private constructor(
    readonly nova: NovaCloud,
    readonly proxy: NovaFaultProxy,
    readonly launcher: LauncherSystem,
    readonly dir: string,
    readonly provider: string,
    /** Nova as the demo user, straight (not through the proxy): what the audit sees. */
    private readonly direct: NovaClient,
    private readonly session: KeystoneSession,
  ) {}

  /** `store` adds top-level config keys (a ZooKeeper store's `zookeeper-servers`), `launcher` overrides the fast launcher section. */
  static async start(nova: NovaCloud, opts: { store?: Record<string, unknown>; launcher?: Record<string, number> } = {}): Promise<LaunchFaultSystem> {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-launch-fault-'));
    const proxy = await NovaFaultProxy.start(nova, dir);
    const provider = `lfault-${randomBytes(4).toString('hex')}`;
    const label = (name: string): Record<string, unknown> => ({ name, 'cloud-image': nova.image.name, 'flavor-name': 'm1.tiny' });
    const launcher = await LauncherSystem.create({
      labels: [{ name: 'steady', 'min-ready': 1 }, { name: 'victim' }],
      providers: [{
        name: provider, driver: 'openstack', cloud: nova.cloud, 'region-name': nova.region, 'launch-timeout': 60, 'launch-retries': 3,
        'cloud-images': [{ name: nova.image.name, username: 'cirros' }],
        pools: [{ name: 'main', networks: [nova.network.name], 'host-key-checking': false, 'max-servers': 4, labels: [label('steady'), label('victim')] }],
      }],
      extra: { 'clouds-file': proxy.cloudsYamlPath, ...opts.store },
      ...(opts.launcher ? { launcher: opts.launcher } : {}),
    });
    const session = await KeystoneSession.authenticate(await loadCloud(nova.cloud, { path: nova.cloudsFile }));
    return new LaunchFaultSystem(nova, proxy, launcher, dir, provider, new NovaClient(session), session);
  }

  /** Starts `nodepool-server` as a process (a new name per start, so each keeps its own log). */
  startServer(): TrackedProcess {
    this.server = this.launcher.startServerProcess(`server-${this.restarts++}`);
    return this.server;
  }

  /** A consumer client (one per system, closed by {@link stop}). */
  async consumer(): Promise<NodepoolClient> {
    this.client ??= await this.launcher.client('fault-consumer');
    return this.client;
  }

  /** Requests one `victim` node. */
  async requestVictim(): Promise<NodeRequestRecord> {
    return (await this.consumer()).request(['victim']);
  }

  /** Waits for the min-ready `steady` node; returns the ready nodes now (what must not be lost). */
  async reachSteady(timeoutMs = 90_000): Promise<ReadyNodes> {
    try {
      await this.launcher.waitForNodes('the min-ready steady node ready', (ns) => ns.some((n) => n.labels.includes('steady') && n.state === 'ready'), timeoutMs);
    } catch (err) {
      throw new Error(`${(err as Error).message}; nodes: ${JSON.stringify(await this.launcher.store.listNodes())}\n${await this.logTails()}`, { cause: err });
    }
    return new Map((await this.launcher.store.listNodes()).filter((n) => n.state === 'ready').map((n) => [n.id, n.externalId]));
  }

  /** This provider's servers in Nova (straight, not through the proxy). */
  async servers(): Promise<NovaServer[]> {
    return (await this.direct.listServers()).filter((s) => s.metadata.nodepool_provider_name === this.provider);
  }

  /**
   * Waits (bounded) until the system is settled: each of `requests` is in `want` (fulfilled by
   * default), every node is ready, in use or held, and every server of the provider in Nova
   * is the server of a node record (and every record's server exists).
   */
  async settled(requests: readonly string[], timeoutMs = 90_000, want: ReadonlyArray<NodeRequestRecord['state']> = ['fulfilled']): Promise<void> {
    await waitFor(async () => {
      for (const id of requests) {
        const r = await this.launcher.store.getRequest(id);
        if (!r || !want.includes(r.state)) return false;
      }
      const nodes = await this.launcher.store.listNodes({ provider: this.provider });
      if (!nodes.every((n) => FINAL_NODE.has(n.state) && n.externalId)) return false;
      const servers = new Set((await this.servers()).map((s) => s.id));
      return servers.size === nodes.length && nodes.every((n) => servers.has(n.externalId as string));
    }, { timeoutMs, what: `requests ${want.join('/')}, every node final, every server a node's`, intervalMs: 250 });
  }

  /**
   * Lost: `before`'s ready nodes that are gone, not ready or on another server now. Leaked
   * (after `graceMs` for the leak check): this provider's servers in Nova that no node record
   * names, and processes (but the running server) started on this system's config.
   */
  async audit(before: ReadyNodes, graceMs = 20_000): Promise<LaunchAudit> {
    const details: string[] = [];
    for (const [id, externalId] of before) {
      const n = await this.launcher.store.getNode(id);
      if (n?.state !== 'ready' || n.externalId !== externalId) details.push(`lost node ${id} (${n ? `${n.state}, server ${n.externalId}` : 'gone'})`);
    }
    const lost = details.length;
    let leaks: string[] = [];
    const find = async (): Promise<string[]> => {
      const named = new Set((await this.launcher.store.listNodes()).flatMap((n) => (n.externalId ? [n.externalId] : [])));
      return [
        ...(await this.servers()).filter((s) => !named.has(s.id)).map((s) => `server ${s.id} (${s.name}, ${s.status}) without a node record`),
        ...this.strayProcesses().map(([pid, c]) => `process ${pid} (${c})`),
      ];
    };
    try {
      await waitFor(async () => (leaks = await find()).length === 0, { timeoutMs: graceMs, what: 'no stray server or process', intervalMs: 500 });
    } catch {
      // counted below
    }
    for (const [pid] of this.strayProcesses()) {
      try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
    }
    // A clouds.yaml password in any server log counts as leaked too.
    const logs = Array.from({ length: this.restarts }, (_, i) => path.join(this.launcher.dir, `server-${i}.log`));
    leaks.push(...await secretsIn(this.proxy.cloudsYamlPath, logs));
    details.push(...leaks);
    return { lost, leaked: leaks.length, details };
  }

  /** Processes other than the running server whose command line names this system's config. */
  private strayProcesses(): Array<[number, string]> {
    const out: Array<[number, string]> = [];
    for (const name of readdirSync('/proc')) {
      if (!/^\d+$/.test(name) || Number(name) === process.pid || Number(name) === this.server?.pid) continue;
      try {
        if (!readFileSync(`/proc/${name}/cmdline`, 'latin1').includes(this.launcher.configPath)) continue;
        out.push([Number(name), readFileSync(`/proc/${name}/comm`, 'utf8').trim()]);
      } catch {
        // gone, or not ours to read
      }
    }
    return out;
  }

  /** The last lines of each server's log (for failure messages). */
  async logTails(lines = 15): Promise<string> {
    const out: string[] = [];
    for (let i = 0; i < this.restarts; i++) {
      const log = await readFile(path.join(this.launcher.dir, `server-${i}.log`), 'utf8').catch(() => '(no log)');
      out.push(`server-${i}:\n${log.trimEnd().split('\n').slice(-lines).join('\n')}`);
    }
    return out.join('\n');
  }

  /** Stops the servers, deletes this provider's servers in Nova (bounded), removes the files. */
  async stop(): Promise<void> {
    await this.client?.close().catch(() => undefined);
    this.client = undefined;
    await this.launcher.stop();
    try {
      for (const s of await this.servers()) await this.direct.deleteServer(s.id).catch(() => false);
      await waitFor(async () => (await this.servers()).length === 0, { timeoutMs: 60_000, what: `no server of ${this.provider} left`, intervalMs: 500 });
    } finally {
      this.session.close();
      await this.proxy.stop();
      await rm(this.dir, { recursive: true, force: true });
    }
  }
}

/**
 * Waits (bounded) for `sys` to settle after a fault injected at `faultAt`, audits it, records
 * the figures of `runs` injections, then asserts: recovered, nothing lost, nothing leaked.
 */
export async function finishLaunchFault(sys: LaunchFaultSystem, o: {
  scenario: string; faultAt: number; before: ReadyNodes; requests: readonly string[]; runs?: number; notes?: string; timeoutMs?: number;
}): Promise<void> {
  const runs = o.runs ?? 1;
  let recoverMs: number | null = null;
  let stuck: Error | undefined;
  try {
    await sys.settled(o.requests, o.timeoutMs ?? 90_000);
    recoverMs = Date.now() - o.faultAt;
  } catch (err) {
    stuck = err as Error;
  }
  const audit = await sys.audit(o.before, stuck ? 2000 : 20_000);
  recordFault({
    scenario: o.scenario, runs, recovered: stuck ? 0 : runs, lost: audit.lost, leaked: audit.leaked, recoverMs,
    ...(o.notes ? { notes: o.notes } : {}),
  });
  if (stuck) {
    const state = { requests: await sys.launcher.store.listRequests(), nodes: await sys.launcher.store.listNodes(), servers: (await sys.servers()).map((s) => `${s.id} ${s.status}`) };
    assert.fail(`${o.scenario}: not recovered: ${stuck.message}; ${JSON.stringify(state)}; ${audit.details.join('; ')}\n${await sys.logTails()}`);
  }
  assert.deepEqual(audit.details, [], `${o.scenario}: nothing lost or leaked`);
}
