/**
 * Static churn benchmark: N one-node requests over S static slots (S/J hosts with
 * `max-parallel-jobs` J on one real sshd, 127.0.0.2…), each node returned as soon as its
 * request is served, on SQLite and on ZooKeeper in one run. One nodepool-server process (the
 * launcher's default intervals: `interval` 1 s, `delete-interval` 5 s, `delete-concurrency` 10)
 * and, in this process, a consumer that follows Zuul's flow for every fulfilled request: lock
 * the node, delete the request, mark the node in-use, then used, unlock. The launcher's deleter
 * then puts the slot back as a new ready node, which serves the next waiting request.
 *
 *   node --import tsx bench/static-churn.ts [--store sqlite|zookeeper|both] [--requests N=500] [--slots S=50] [--jobs J=10] [--warmup W=1000] [--zk-ops]
 *
 * requests/s = requests served / (first request created → last fulfilled); a request that
 * fails (the launcher gave up on it) is counted and printed, not waited for; request latency =
 * fulfilled − created (all N created at once, so it includes the wait for a slot); slot turnaround = the
 * consumer marking a node used → the next ready node of the same host slot created. Before the
 * measured run, W requests the same way (not measured: JIT, ZooKeeper's JVM, first scans).
 * CPU per request: user + system time over the measured run of ZooKeeper's JVM, the server, this
 * process (the consumer) and the rest of the machine (sshd, the liveness probes, anything else).
 * `BENCH_CPU_PROF=<dir>` writes the server's CPU profile per store (bench/cpuprofile-top.ts).
 * `--zk-ops` counts ZooKeeper requests per request served, by process and caller
 * (bench/zk-op-count.ts; the stack captures cost CPU, so take rates from a run without it).
 * Goals (issue 22): ≥ 150 requests/s on ZooKeeper, ≥ 300 on SQLite, slot turnaround p50 < 200 ms.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
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
import { startZooKeeper } from '../test/support/zookeeper.js';
import { ChurnConsumer, turnarounds } from './churn-consumer.js';
import { pct } from './percentile.js';
import { machineBusyMs, processCpuMs } from './proc-cpu.js';
import { onStaticHosts } from './static-hosts.js';
import { installZkOpCounter, opCounts, opDelta, opTotal, type OpCounts } from './zk-op-count.js';

type StoreKind = 'sqlite' | 'zookeeper';
const argv = process.argv.slice(2);
const flag = (name: string): string | undefined => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);
function count(name: string, def: number): number {
  const v = Number(flag(name) ?? def);
  if (!Number.isInteger(v) || v < 0) {
    console.error(`${name}: expected a whole number, got ${String(flag(name))}`);
    process.exit(2);
  }
  return v;
}
const storeArg = flag('--store') ?? 'both';
if (!['sqlite', 'zookeeper', 'both'].includes(storeArg)) {
  console.error(`--store: expected sqlite, zookeeper or both, got ${storeArg}`);
  process.exit(2);
}
const KINDS: StoreKind[] = storeArg === 'both' ? ['sqlite', 'zookeeper'] : [storeArg as StoreKind];
const REQUESTS = count('--requests', 500);
const SLOTS = count('--slots', 50);
const JOBS = Math.min(count('--jobs', 10), SLOTS);
// A site's ZooKeeper and launcher run for months: measured after both JITs have settled. On
// this machine ZooKeeper's JVM took 16.3 ms of CPU per request after 50 warm-up requests and
// 9.7 ms after 1,500 (the server 8.2 and 4.9 ms): 58 and 90 requests/s.
const WARMUP = count('--warmup', 1000);
const ZK_OPS = argv.includes('--zk-ops');
if (ZK_OPS) installZkOpCounter();
if (JOBS < 1 || SLOTS % JOBS !== 0) {
  console.error(`--slots (${SLOTS}) must be a multiple of --jobs (${JOBS})`);
  process.exit(2);
}
const HOSTS = SLOTS / JOBS;
const ROOT = fileURLToPath(new URL('../', import.meta.url));
const GOALS: Record<StoreKind, number> = { sqlite: 300, zookeeper: 150 };
const TURNAROUND_GOAL_MS = 200;

/** What one store's measured run gave. */
interface Run {
  kind: StoreKind;
  rate: number;
  latency: number[];
  turnaround: number[];
  /** Requests that failed instead of being served (not in the rate). */
  failed: number;
  /** CPU per request (ms) by process. */
  cpu: { zookeeper: number; server: number; bench: number; rest: number };
  /** ZooKeeper requests over the measured run by process (`--zk-ops`). */
  ops?: { server: OpCounts; bench: OpCounts };
}

/** The server's op counts so far: asks it (SIGUSR2) to write them to `file`, then reads them. */
async function serverOps(pid: number, file: string): Promise<OpCounts> {
  await rm(file, { force: true });
  process.kill(pid, 'SIGUSR2');
  let text = '';
  await waitFor(async () => (text = await readFile(file, 'utf8').catch(() => '')) !== '', { timeoutMs: 10_000, what: 'the server\'s op counts', intervalMs: 20 });
  return JSON.parse(text) as OpCounts;
}

/** Runs `n` requests through the launcher and the consumer; the measured figures. */
async function churn(store: Store, n: number, requestor: string, pids: { zookeeper?: number; server: number }, opsFile?: string): Promise<Omit<Run, 'kind'>> {
  const session = await store.openSession({ owner: 'bench-churn-consumer', hostname: 'bench', pid: process.pid, ttlMs: 60_000 });
  const consumer = new ChurnConsumer(store, session.id, requestor);
  const renew = setInterval(() => { void store.renewSession(session.id).catch(() => undefined); }, 10_000);
  const ops0 = opsFile ? { server: await serverOps(pids.server, opsFile), bench: opCounts() } : undefined;
  const cpu0 = { zookeeper: pids.zookeeper ? processCpuMs(pids.zookeeper) : 0, server: processCpuMs(pids.server), bench: processCpuMs(process.pid), machine: machineBusyMs() };
  try {
    await Promise.all(Array.from({ length: n }, () => store.createRequest({ labels: ['bench'], requestor })));
    await consumer.done(n);
  } finally {
    consumer.stop();
    clearInterval(renew);
  }
  const used = {
    zookeeper: pids.zookeeper ? processCpuMs(pids.zookeeper) - cpu0.zookeeper : 0,
    server: processCpuMs(pids.server) - cpu0.server,
    bench: processCpuMs(process.pid) - cpu0.bench,
    machine: machineBusyMs() - cpu0.machine,
  };
  // Every slot back before the turnaround is read (the last returns' new records included).
  await waitFor(async () => (await store.listNodes({ states: ['ready'] })).length >= SLOTS, { timeoutMs: 120_000, what: `${SLOTS} slots ready again`, intervalMs: 50 });
  // Counted once every slot is back: the last returns' deletes and refills included.
  const ops = opsFile && ops0 ? { server: opDelta(await serverOps(pids.server, opsFile), ops0.server), bench: opDelta(opCounts(), ops0.bench) } : undefined;
  const all = [...consumer.seen.values(), ...await store.listNodes({ states: ['ready'] })];
  await store.closeSession(session.id);
  const first = Math.min(...consumer.fulfilled.map((f) => f.created));
  const last = Math.max(...consumer.fulfilled.map((f) => f.at));
  return {
    failed: consumer.failed,
    rate: consumer.fulfilled.length / ((last - first) / 1000),
    latency: consumer.fulfilled.map((f) => f.at - f.created),
    turnaround: turnarounds(consumer.used, all),
    cpu: {
      zookeeper: used.zookeeper / n, server: used.server / n, bench: used.bench / n,
      rest: Math.max(0, used.machine - used.zookeeper - used.server - used.bench) / n,
    },
    ...(ops ? { ops } : {}),
  };
}

/** One store: a fresh state dir (or ZooKeeper), a fresh nodepool-server, warm-up, then the measured churn. */
async function runOn(kind: StoreKind, sshd: SshdHandle, addresses: string[], port: number): Promise<Run> {
  const dir = await mkdtemp(path.join(os.tmpdir(), `nodepool-bench-churn-${kind}-`));
  const zk = kind === 'zookeeper' ? await startZooKeeper() : undefined;
  const configPath = path.join(dir, 'nodepool.yaml');
  await writeFile(configPath, yaml.dump({
    'state-dir': path.join(dir, 'state'),
    ...(zk ? { 'zookeeper-servers': [{ host: zk.host, port: zk.port, chroot: '/bench' }], 'zookeeper-timeout': 30 } : {}),
    labels: [{ name: 'bench' }],
    providers: [{
      name: 'bench-static', driver: 'static',
      pools: [{ name: 'main', nodes: addresses.map((a) => ({ name: a, 'connection-port': port, labels: ['bench'], 'max-parallel-jobs': JOBS, 'host-key': sshd.hostKey('ed25519'), timeout: 5 })) }],
    }],
  }));
  const store = await openStore(loadConfig(configPath));
  let server: TrackedProcess | undefined;
  try {
    const profDir = process.env.BENCH_CPU_PROF ? path.join(process.env.BENCH_CPU_PROF, kind) : undefined;
    const prof = profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [];
    const opsFile = ZK_OPS && zk ? path.join(dir, 'server-ops.json') : undefined;
    const counter = opsFile ? ['--import', path.join(ROOT, 'bench/zk-op-count.ts')] : [];
    server = startProcess('nodepool-server', process.execPath, [...prof, '--import', 'tsx', ...counter, path.join(ROOT, 'bin/nodepool-server.ts'), '-c', configPath, '--log-level', 'warn', '--no-webapp'],
      { cwd: ROOT, logFile: path.join(dir, 'server.log'), env: { ...process.env, NODEPOOL_CONFIG: '', ...(opsFile ? { BENCH_ZK_OPS: opsFile } : {}) } });
    await waitFor(async () => (await store.listNodes({ states: ['ready'] })).length >= SLOTS, { timeoutMs: 120_000, what: `${SLOTS} ready slots`, intervalMs: 200 });
    const pids = { ...(zk ? { zookeeper: zk.pid } : {}), server: server.pid };
    if (WARMUP > 0) await churn(store, WARMUP, 'bench-warmup', pids);
    return { kind, ...await churn(store, REQUESTS, 'bench-churn', pids, opsFile) };
  } finally {
    await server?.stop();
    await store.close();
    await zk?.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

const NAMES: Record<StoreKind, string> = { sqlite: 'SQLite', zookeeper: 'ZooKeeper' };

function report(runs: Run[]): void {
  console.log(`static churn: ${REQUESTS} requests over ${SLOTS} slots (${HOSTS} hosts × ${JOBS} jobs on one sshd), each node returned at once (Zuul's flow); one nodepool-server, default launcher intervals; ${WARMUP} warm-up requests; ${os.cpus().length} CPUs, load ${os.loadavg()[0]?.toFixed(1)} at the end`);
  console.log('');
  console.log(`| measure | ${runs.map((r) => NAMES[r.kind]).join(' | ')} |`);
  console.log(`|---|${runs.map(() => '---:').join('|')}|`);
  const row = (name: string, value: (r: Run) => number, digits = 0): void => {
    console.log(`| ${name} | ${runs.map(value).map((v) => (Number.isNaN(v) ? '–' : v.toFixed(digits))).join(' | ')} |`);
  };
  row('requests/s', (r) => r.rate);
  row('requests failed (not served)', (r) => r.failed);
  row('request latency p50 (ms)', (r) => pct(r.latency, 50));
  row('request latency p99 (ms)', (r) => pct(r.latency, 99));
  row('slot turnaround p50 (ms)', (r) => pct(r.turnaround, 50));
  row('slot turnaround p99 (ms)', (r) => pct(r.turnaround, 99));
  row('CPU per request, ZooKeeper\'s JVM (ms)', (r) => (r.kind === 'zookeeper' ? r.cpu.zookeeper : NaN), 2);
  row('CPU per request, nodepool-server (ms)', (r) => r.cpu.server, 2);
  row('CPU per request, the bench as consumer (ms)', (r) => r.cpu.bench, 2);
  row('CPU per request, rest of the machine (ms)', (r) => r.cpu.rest, 2);
  console.log('');
  for (const r of runs) if (r.ops) printOps(r.ops);
  for (const r of runs) {
    const t = pct(r.turnaround, 50);
    console.log(`${NAMES[r.kind]}: ${r.rate.toFixed(0)} requests/s (goal ≥ ${GOALS[r.kind]}: ${r.rate >= GOALS[r.kind] ? 'met' : 'missed'}); slot turnaround p50 ${t.toFixed(0)} ms (goal < ${TURNAROUND_GOAL_MS}: ${t < TURNAROUND_GOAL_MS ? 'met' : 'missed'})`);
  }
}

/** ZooKeeper requests per request served, by process, then by kind and caller. */
function printOps(ops: NonNullable<Run['ops']>): void {
  const per = (v: number): string => (v / REQUESTS).toFixed(2);
  console.log(`ZooKeeper requests per request served: nodepool-server ${per(opTotal(ops.server))}, the consumer ${per(opTotal(ops.bench))}`);
  for (const [who, c] of [['server', ops.server], ['consumer', ops.bench]] as const) {
    for (const [key, v] of Object.entries(c).sort((a, b) => b[1] - a[1])) if (v / REQUESTS >= 0.05) console.log(`  ${who} ${per(v)} ${key}`);
  }
  console.log('');
}

await onStaticHosts(HOSTS, async (sshd, addresses, port) => {
  const runs: Run[] = [];
  for (const kind of KINDS) runs.push(await runOn(kind, sshd, addresses, port));
  report(runs);
});
