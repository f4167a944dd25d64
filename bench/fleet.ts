/**
 * Fleet benchmark (issue 35, docs/fleet.md): nodepool-server processes without `--provider` on
 * one ZooKeeper share six static pools (three providers of two pools; H hosts × J jobs on one
 * real sshd, all serving label `bench`).
 *
 *   node --import tsx bench/fleet.ts [--requests N=300] [--warmup W=300] [--hosts H=12] [--jobs J=5] [--kills K=5]
 *
 * churn, with 1, 2 and 3 launchers (a fresh chroot each): N one-node requests created at once, a
 * consumer in this process returning each node as soon as its request is fulfilled (Zuul's
 * flow, bench/churn-consumer.ts); requests/s = served / (first created → last fulfilled), after W
 * such requests not measured. Every pool runs on one launcher at a time, so more launchers share
 * the pools' work, not the same slots.
 * takeover, with 3 launchers and `launcher.takeover-timeout: 10`: K times the launcher running
 * the most pools is killed with -9 and the time until each of its pools is registered by
 * another is taken (p50 and max); the killed launcher then starts again and the pools settle.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import yaml from 'js-yaml';
import { loadConfig } from '../lib/config/load.js';
import { waitFor } from '../lib/lifecycle.js';
import { openStore } from '../lib/store/open-store.js';
import type { Store } from '../lib/store/store.js';
import { startProcess, type TrackedProcess } from '../test/support/processes.js';
import type { SshdHandle } from '../test/support/sshd.js';
import { startZooKeeper, type ZooKeeperHandle } from '../test/support/zookeeper.js';
import { ChurnConsumer } from './churn-consumer.js';
import { pct } from './percentile.js';
import { onStaticHosts } from './static-hosts.js';

const argv = process.argv.slice(2);
function count(name: string, def: number, min: number): number {
  const i = argv.indexOf(name);
  const v = Number(i >= 0 ? argv[i + 1] : def);
  if (!Number.isInteger(v) || v < min) {
    console.error(`${name}: expected a whole number ≥ ${min}, got ${String(argv[i + 1])}`);
    process.exit(2);
  }
  return v;
}
const REQUESTS = count('--requests', 300, 1);
const WARMUP = count('--warmup', 300, 0);
const HOSTS = count('--hosts', 12, 6);
const JOBS = count('--jobs', 5, 1);
const KILLS = count('--kills', 5, 1);
const TAKEOVER_S = 10;
const ROOT = fileURLToPath(new URL('../', import.meta.url));
const POOLS = ['f1', 'f2', 'f3'].flatMap((provider) => ['p1', 'p2'].map((pool) => `${provider}/${pool}`));

/** What one fleet size gave. */
interface ChurnRun {
  launchers: number;
  rate: number;
  failed: number;
  latency: number[];
}

/** One fleet on its own chroot: its config, store handle and server processes. */
class Fleet {
  private readonly servers = new Map<string, TrackedProcess>();

  private constructor(private readonly dir: string, private readonly configPath: string, readonly store: Store) {}

  static async create(zk: ZooKeeperHandle, sshd: SshdHandle, addresses: string[], port: number, chroot: string): Promise<Fleet> {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-bench-fleet-'));
    const configPath = path.join(dir, 'nodepool.yaml');
    const host = (a: string): Record<string, unknown> => ({ name: a, 'connection-port': port, labels: ['bench'], 'max-parallel-jobs': JOBS, 'host-key': sshd.hostKey('ed25519'), timeout: 5 });
    const perPool = Math.floor(addresses.length / POOLS.length);
    await writeFile(configPath, yaml.dump({
      'state-dir': path.join(dir, 'state'),
      'zookeeper-servers': [{ host: zk.host, port: zk.port, chroot }], 'zookeeper-timeout': 10,
      launcher: { 'takeover-timeout': TAKEOVER_S },
      labels: [{ name: 'bench' }],
      providers: ['f1', 'f2', 'f3'].map((name, p) => ({
        name, driver: 'static',
        pools: ['p1', 'p2'].map((pool, i) => ({ name: pool, nodes: addresses.slice((p * 2 + i) * perPool, (p * 2 + i + 1) * perPool).map(host) })),
      })),
    }));
    return new Fleet(dir, configPath, await openStore(loadConfig(configPath)));
  }

  get slots(): number {
    return Math.floor(HOSTS / POOLS.length) * POOLS.length * JOBS;
  }

  start(name: string): void {
    this.servers.set(name, startProcess(name, process.execPath, [
      '--import', 'tsx', path.join(ROOT, 'bin/nodepool-server.ts'), '-c', this.configPath, '--hostname', name, '--log-level', 'warn', '--no-webapp',
    ], { cwd: ROOT, logFile: path.join(this.dir, `${name}.log`), env: { ...process.env, NODEPOOL_CONFIG: '' } }));
  }

  async kill(name: string): Promise<void> {
    await this.servers.get(name)?.kill();
  }

  /** Pool → hostnames of the servers registering it. */
  async registrations(): Promise<Map<string, string[]>> {
    const hosts = new Map((await this.store.listSessions()).map((s) => [s.id, s.hostname]));
    const out = new Map<string, string[]>();
    for (const l of await this.store.listLaunchers()) {
      const key = `${l.provider}/${l.pool}`;
      out.set(key, [...(out.get(key) ?? []), hosts.get(l.sessionId) ?? l.sessionId]);
    }
    return out;
  }

  /** Waits until every pool is registered once, by one of `members`, and every slot is ready. */
  async settled(members: readonly string[]): Promise<Map<string, string>> {
    return waitFor(async () => {
      const regs = await this.registrations();
      const owners = new Map<string, string>();
      for (const pool of POOLS) {
        const r = regs.get(pool);
        if (r?.length !== 1 || !members.includes(r[0] as string)) return undefined;
        owners.set(pool, r[0] as string);
      }
      return (await this.store.listNodes({ states: ['ready'] })).length >= this.slots ? owners : undefined;
    }, { timeoutMs: 180_000, intervalMs: 200, what: `every pool run once by ${members.join(', ')} and ${this.slots} slots ready` });
  }

  async stop(): Promise<void> {
    for (const s of this.servers.values()) await s.stop();
    await this.store.close();
    await rm(this.dir, { recursive: true, force: true });
  }
}

/** `n` requests through the fleet and the consumer. */
async function churn(store: Store, n: number, requestor: string): Promise<Omit<ChurnRun, 'launchers'>> {
  const session = await store.openSession({ owner: 'bench-fleet-consumer', hostname: 'bench', pid: process.pid, ttlMs: 60_000 });
  const consumer = new ChurnConsumer(store, session.id, requestor);
  const renew = setInterval(() => { void store.renewSession(session.id).catch(() => undefined); }, 10_000);
  try {
    await Promise.all(Array.from({ length: n }, () => store.createRequest({ labels: ['bench'], requestor })));
    await consumer.done(n);
  } finally {
    consumer.stop();
    clearInterval(renew);
    await store.closeSession(session.id);
  }
  const first = Math.min(...consumer.fulfilled.map((f) => f.created));
  const last = Math.max(...consumer.fulfilled.map((f) => f.at));
  return { rate: consumer.fulfilled.length / ((last - first) / 1000), failed: consumer.failed, latency: consumer.fulfilled.map((f) => f.at - f.created) };
}

/** Kills the launcher running the most pools `KILLS` times; the takeover times (ms). */
async function takeovers(fleet: Fleet, members: string[]): Promise<number[]> {
  const times: number[] = [];
  for (let round = 1; round <= KILLS; round++) {
    const owners = await fleet.settled(members);
    const counts = new Map<string, number>();
    for (const m of owners.values()) counts.set(m, (counts.get(m) ?? 0) + 1);
    const victim = [...counts].sort((a, b) => b[1] - a[1])[0]?.[0] as string;
    const lost = POOLS.filter((p) => owners.get(p) === victim);
    const killed = Date.now();
    await fleet.kill(victim);
    await waitFor(async () => {
      const regs = await fleet.registrations();
      return lost.every((p) => regs.get(p)?.length === 1 && regs.get(p)?.[0] !== victim) ? true : undefined;
    }, { timeoutMs: 120_000, intervalMs: 50, what: `${victim}'s pools run elsewhere` });
    times.push(Date.now() - killed);
    console.error(`takeover ${round}: ${victim} killed with ${lost.length} pools; they ran elsewhere after ${((Date.now() - killed) / 1000).toFixed(1)} s`);
    fleet.start(victim);
  }
  await fleet.settled(members);
  return times;
}

await onStaticHosts(HOSTS, async (sshd, addresses, port) => {
  const zk = await startZooKeeper({ tickTimeMs: 2000 });
  const runs: ChurnRun[] = [];
  let takeover: number[] = [];
  try {
    for (const size of [1, 2, 3]) {
      const fleet = await Fleet.create(zk, sshd, addresses, port, `/fleet-${size}`);
      const members = Array.from({ length: size }, (_, i) => `fleet-${i + 1}`);
      try {
        for (const m of members) fleet.start(m);
        await fleet.settled(members);
        if (WARMUP > 0) await churn(fleet.store, WARMUP, 'bench-warmup');
        runs.push({ launchers: size, ...await churn(fleet.store, REQUESTS, 'bench-churn') });
        console.error(`${size} launcher(s): ${runs[runs.length - 1]?.rate.toFixed(0)} requests/s`);
        if (size === 3) takeover = await takeovers(fleet, members);
      } finally {
        await fleet.stop();
      }
    }
  } finally {
    await zk.stop();
  }
  console.log(`fleet: ${REQUESTS} requests (after ${WARMUP} not measured) over six static pools (${Math.floor(HOSTS / POOLS.length) * POOLS.length} hosts × ${JOBS} jobs on one sshd) on one ZooKeeper (tickTime 2 s); ${os.cpus().length} CPUs, load ${os.loadavg()[0]?.toFixed(1)} at the end`);
  console.log('');
  console.log('| launchers | requests/s | failed | latency p50 (ms) | latency p99 (ms) |');
  console.log('|---:|---:|---:|---:|---:|');
  for (const r of runs) console.log(`| ${r.launchers} | ${r.rate.toFixed(0)} | ${r.failed} | ${pct(r.latency, 50).toFixed(0)} | ${pct(r.latency, 99).toFixed(0)} |`);
  console.log('');
  console.log(`takeover after kill -9 of the launcher with the most pools (3 launchers, takeover-timeout ${TAKEOVER_S} s, ${KILLS} runs): p50 ${(pct(takeover, 50) / 1000).toFixed(1)} s, max ${(Math.max(...takeover) / 1000).toFixed(1)} s`);
});
