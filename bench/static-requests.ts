/**
 * Node request benchmark with the static driver, on the SQLite store, the ZooKeeper store, or
 * both side by side: one real sshd listening on HOSTS loopback addresses (127.0.0.2…), each a
 * static host with `max-parallel-jobs` JOBS, so HOSTS×JOBS ready slots; one nodepool-server
 * process (one launcher); requests from this process. sshd runs with `-r` (no re-exec per
 * connection): the hosts it stands in for would spend their own CPU on each liveness connect,
 * not the launcher machine's. ZooKeeper is Debian's 3.8 on 127.0.0.1 (test/support/zookeeper.ts),
 * without fsync per write by default (`--zk-fsync` turns it on), like the SQLite store's WAL
 * with synchronous=NORMAL, which does not fsync per commit either.
 *
 *   node --import tsx bench/static-requests.ts [--store sqlite|zookeeper|both] [--zk-fsync] [hosts=100] [jobs=10] [sequential=200]
 *
 * burst: HOSTS×JOBS one-node requests created at once (all creates sent together; before
 * 2026-11-24 one after the other, which on ZooKeeper bounded the rate by the creates' own
 * round trips); rate = requests / (last fulfilled − first created); latency = fulfilled −
 * created per request (store clock).
 * sequential: one request at a time (create, wait fulfilled); p50/p99 latency.
 * Both at a pool-worker interval of 0.05 s and at the default 1 s (an idle worker passes once
 * per interval, and at once when the store tells it of a change; a busy one goes on at once).
 * reference: the same store calls one request cycle makes (create, lock, read, pending,
 * allocate, fulfilled, unlock) in a tight loop in one process: the store-bound ceiling.
 * Goal (issue 12): on ZooKeeper, burst ≥ 500 requests/s from one launcher. The ZooKeeper / SQLite
 * ratio is printed, but no longer a goal (issue 22): it measured the two stores sharing two
 * cores with ZooKeeper's JVM.
 * warm-up: `--warmup N` (default 1) bursts at interval 0.05 s before the measured ones, not
 * measured (the first burst after start also pays for JIT compiling, most of all ZooKeeper's JVM:
 * its C2 compiler thread used ~3.6 s of CPU in one run; a launcher in service is past that); the
 * first one's rate is printed as the cold burst.
 * CPU per request served: each process's user+system time over the burst (children included,
 * from /proc), ZooKeeper's JVM, the server, this process (the consumer), and the rest of the
 * machine (sshd, the probes' processes, anything else running), divided by the requests.
 * `BENCH_CPU_PROF=<dir>` writes the server's CPU profile per store (bench/cpuprofile-top.ts reads it).
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
import { startZooKeeper } from '../test/support/zookeeper.js';
import { nodeLock, requestLock } from '../lib/store/lock-names.js';
import { pct } from './percentile.js';
import { machineBusyMs, processCpuMs } from './proc-cpu.js';
import { onStaticHosts } from './static-hosts.js';

type StoreKind = 'sqlite' | 'zookeeper';
const argv = process.argv.slice(2);
const storeArg = argv.includes('--store') ? argv[argv.indexOf('--store') + 1] : 'both';
if (!['sqlite', 'zookeeper', 'both'].includes(storeArg ?? '')) {
  console.error(`--store: expected sqlite, zookeeper or both, got ${storeArg}`);
  process.exit(2);
}
const KINDS: StoreKind[] = storeArg === 'both' ? ['sqlite', 'zookeeper'] : [storeArg as StoreKind];
const ZK_FSYNC = argv.includes('--zk-fsync');
const WARMUP = argv.includes('--warmup') ? Number(argv[argv.indexOf('--warmup') + 1]) : 1;
if (!Number.isInteger(WARMUP) || WARMUP < 0) {
  console.error(`--warmup: expected a whole number of bursts, got ${String(argv[argv.indexOf('--warmup') + 1])}`);
  process.exit(2);
}
const positional = argv.filter((a, i) => !a.startsWith('--') && argv[i - 1] !== '--store' && argv[i - 1] !== '--warmup');
const HOSTS = Number(positional[0] ?? 100);
const JOBS = Number(positional[1] ?? 10);
const SEQUENTIAL = Number(positional[2] ?? 200);
const ROOT = fileURLToPath(new URL('../', import.meta.url));
const SLOTS = HOSTS * JOBS;

/** CPU per request served of one burst (ms), by process. */
interface BurstCpu { zookeeper: number; server: number; bench: number; rest: number }

async function referenceRate(store: Store, n: number, zkRequests: () => Promise<number>): Promise<{ rate: number; zkPerCycle: number }> {
  const session = await store.openSession({ owner: 'bench-reference', hostname: 'bench', pid: process.pid, ttlMs: 30_000 });
  const nodes = [];
  for (let i = 0; i < n; i++) nodes.push(await store.createNode({ state: 'ready', provider: 'reference', pool: 'main', labels: ['ref'] }));
  const zk0 = await zkRequests();
  const t0 = performance.now();
  for (const node of nodes) {
    const r = await store.createRequest({ labels: ['ref'], requestor: 'bench-reference' });
    await store.listRequests({ states: ['requested'] });
    await store.tryLock(requestLock(r.id), session.id);
    await store.getRequest(r.id);
    await store.updateRequest(r.id, { state: 'pending' });
    await store.tryLock(nodeLock(node.id), session.id);
    await store.getNode(node.id);
    await store.updateNode(node.id, { allocatedTo: r.id });
    await store.getNode(node.id);
    await store.updateRequest(r.id, { state: 'fulfilled', nodes: [node.id] });
    await store.unlock(nodeLock(node.id), session.id);
    await store.unlock(requestLock(r.id), session.id);
  }
  const rate = n / ((performance.now() - t0) / 1000);
  const zkPerCycle = ((await zkRequests()) - zk0) / n;
  for (const node of nodes) await store.deleteNode(node.id);
  for (const r of await store.listRequests({ requestor: 'bench-reference' })) await store.deleteRequest(r.id);
  await store.closeSession(session.id);
  return { rate, zkPerCycle };
}

/** What one store's run measured. */
interface StoreRun {
  kind: StoreKind;
  registrationS: number;
  reference: number;
  /** ZooKeeper requests per reference cycle; NaN on SQLite. */
  referenceZk: number;
  /** The first (warm-up) burst, when there was one. */
  coldBurst: Burst | undefined;
  fastBurst: Burst;
  defaultBurst: Burst;
  fastLat: number[];
  defaultLat: number[];
}

interface Burst {
  rate: number;
  lat: number[];
  /** ZooKeeper requests (every client's, this bench's creates and polls included) per request served; NaN on SQLite. */
  zkPerRequest: number;
  /** How long this process took to create the burst's requests. */
  createMs: number;
  cpu: BurstCpu;
}

/** Runs the whole measurement on one store (a fresh state dir or ZooKeeper chroot) with a fresh nodepool-server. */
async function runOn(kind: StoreKind, sshd: SshdHandle, addresses: string[], port: number): Promise<StoreRun> {
  const dir = await mkdtemp(path.join(os.tmpdir(), `nodepool-bench-requests-${kind}-`));
  const zk = kind === 'zookeeper' ? await startZooKeeper({ forceSync: ZK_FSYNC }) : undefined;
  const configPath = path.join(dir, 'nodepool.yaml');
  const write = (interval: number): Promise<void> => writeFile(configPath, yaml.dump({
    'state-dir': path.join(dir, 'state'),
    ...(zk ? { 'zookeeper-servers': [{ host: zk.host, port: zk.port, chroot: '/bench' }], 'zookeeper-timeout': 30 } : {}),
    launcher: { interval, 'delete-interval': 1, 'cleanup-interval': 30, 'session-ttl': 30 },
    labels: [{ name: 'bench' }],
    providers: [{
      name: 'bench-static', driver: 'static',
      pools: [{ name: 'main', nodes: addresses.map((a) => ({ name: a, 'connection-port': port, labels: ['bench'], 'max-parallel-jobs': JOBS, 'host-key': sshd.hostKey('ed25519'), timeout: 5 })) }],
    }],
  }));
  await write(0.05);
  const store = await openStore(loadConfig(configPath));
  let server: TrackedProcess | undefined;
  try {
    /** Requests ZooKeeper has received so far, from every client (`mntr`); NaN on SQLite. */
    const zkRequests = async (): Promise<number> => (zk ? Number(/zk_packets_received\s+(\d+)/.exec(await zk.fourLetter('mntr'))?.[1]) : NaN);
    const { rate: reference, zkPerCycle: referenceZk } = await referenceRate(store, 1000, zkRequests);
    const profDir = process.env.BENCH_CPU_PROF ? path.join(process.env.BENCH_CPU_PROF, kind) : undefined;
    const prof = profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [];
    server = startProcess('nodepool-server', process.execPath, [...prof, '--import', 'tsx', path.join(ROOT, 'bin/nodepool-server.ts'), '-c', configPath, '--log-level', 'warn', '--no-webapp'],
      { cwd: ROOT, logFile: path.join(dir, 'server.log'), env: { ...process.env, NODEPOOL_CONFIG: '' } });
    const regStart = performance.now();
    await waitFor(async () => (await store.listNodes({ states: ['ready'] })).length >= SLOTS, { timeoutMs: 600_000, what: `${SLOTS} ready slots`, intervalMs: 500 });
    const registrationS = (performance.now() - regStart) / 1000;

    /** SLOTS one-node requests at once; then the slots are freed again (deleted requests → the deleter returns their nodes). */
    const burst = async (): Promise<Burst> => {
      const zkBefore = await zkRequests();
      const pids = { zookeeper: zk?.pid, server: server?.pid, bench: process.pid };
      const cpu0 = { zookeeper: zk ? processCpuMs(zk.pid) : 0, server: processCpuMs(pids.server ?? 0), bench: processCpuMs(process.pid), machine: machineBusyMs() };
      // All at once, as many Zuul schedulers would (one after the other, ZooKeeper's creates alone
      // took ~1.5 s for 1,000: the bench's own create loop, not the launcher, bounded the rate).
      const c0 = performance.now();
      await Promise.all(Array.from({ length: SLOTS }, () => store.createRequest({ labels: ['bench'], requestor: 'bench' })));
      const createMs = performance.now() - c0;
      await waitFor(async () => (await store.listRequests({ states: ['fulfilled'] })).length >= SLOTS, { timeoutMs: 600_000, what: 'every request fulfilled', intervalMs: 200 });
      const zkPerRequest = ((await zkRequests()) - zkBefore) / SLOTS;
      const used = {
        zookeeper: zk ? processCpuMs(zk.pid) - cpu0.zookeeper : 0,
        server: processCpuMs(pids.server ?? 0) - cpu0.server,
        bench: processCpuMs(process.pid) - cpu0.bench,
        machine: machineBusyMs() - cpu0.machine,
      };
      const cpu: BurstCpu = {
        zookeeper: used.zookeeper / SLOTS, server: used.server / SLOTS, bench: used.bench / SLOTS,
        rest: Math.max(0, used.machine - used.zookeeper - used.server - used.bench) / SLOTS,
      };
      const reqs = await store.listRequests({ requestor: 'bench' });
      const first = Math.min(...reqs.map((r) => r.created));
      const last = Math.max(...reqs.map((r) => r.stateTime));
      for (const r of reqs) await store.deleteRequest(r.id);
      await waitFor(async () => (await store.listNodes({ states: ['ready'] })).filter((n) => n.allocatedTo === null).length >= SLOTS,
        { timeoutMs: 120_000, what: 'slots back in stock', intervalMs: 500 });
      return { rate: SLOTS / ((last - first) / 1000), lat: reqs.map((r) => r.stateTime - r.created), zkPerRequest, createMs, cpu };
    };
    const sequential = async (): Promise<number[]> => {
      const lat: number[] = [];
      for (let i = 0; i < SEQUENTIAL; i++) {
        const r = await store.createRequest({ labels: ['bench'], requestor: 'bench-seq' });
        const done = await waitFor(async () => {
          const x = await store.getRequest(r.id);
          return x?.state === 'fulfilled' ? x : undefined;
        }, { timeoutMs: 30_000, what: 'a sequential request', intervalMs: 2 });
        lat.push(done.stateTime - done.created);
        await store.deleteRequest(r.id);
      }
      return lat;
    };
    let coldBurst: Burst | undefined;
    for (let i = 0; i < WARMUP; i++) {
      const b = await burst();
      coldBurst ??= b;
    }
    const fastBurst = await burst();
    const fastLat = await sequential();
    await write(1);
    await new Promise((r) => setTimeout(r, 1500)); // the server reloads the changed file
    const defaultBurst = await burst();
    const defaultLat = await sequential();
    return { kind, registrationS, reference, referenceZk, coldBurst, fastBurst, defaultBurst, fastLat, defaultLat };
  } finally {
    await server?.stop();
    await store.close();
    await zk?.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

const NAMES: Record<StoreKind, string> = { sqlite: 'SQLite', zookeeper: 'ZooKeeper' };

function report(runs: StoreRun[]): void {
  console.log(`static driver, ${HOSTS} hosts × ${JOBS} jobs = ${SLOTS} slots on one sshd; one nodepool-server process (one launcher); ${WARMUP} warm-up burst(s) before the measured ones; ${os.cpus().length} CPUs, load ${os.loadavg()[0]?.toFixed(1)} at the end`);
  if (runs.some((r) => r.kind === 'zookeeper')) console.log(`ZooKeeper 3.8 on 127.0.0.1, forceSync=${ZK_FSYNC ? 'yes' : 'no'}; SQLite WAL, synchronous=NORMAL`);
  console.log('');
  const cols = runs.map((r) => NAMES[r.kind]);
  const both = runs.length === 2;
  console.log(`| run | ${cols.join(' | ')} |${both ? ' ZooKeeper / SQLite |' : ''}`);
  console.log(`|---|${cols.map(() => '---:').join('|')}|${both ? '---:|' : ''}`);
  const row = (name: string, value: (r: StoreRun) => number, digits = 0, ratio = both): void => {
    const vs = runs.map(value);
    const r = ratio && vs[0] ? `${((vs[1] as number) / (vs[0] as number)).toFixed(2)}× |` : both ? ' |' : '';
    console.log(`| ${name} | ${vs.map((v) => (Number.isNaN(v) ? '–' : v.toFixed(digits))).join(' | ')} |${r}`);
  };
  row(`registration of ${SLOTS} slots (s)`, (r) => r.registrationS, 1);
  if (WARMUP > 0) row(`cold burst (the first, warm-up of ${WARMUP}, not compared), interval 0.05 s: rate (req/s)`, (r) => r.coldBurst?.rate ?? NaN, 0, false);
  for (const [label, pick] of [['interval 0.05 s', (r: StoreRun) => r.fastBurst], ['interval 1 s (default)', (r: StoreRun) => r.defaultBurst]] as const) {
    row(`burst of ${SLOTS}, ${label}: creating them (ms)`, (r) => pick(r).createMs);
    row(`burst of ${SLOTS}, ${label}: rate (req/s)`, (r) => pick(r).rate);
    row(`burst, ${label}: p50 latency (ms)`, (r) => pct(pick(r).lat, 50));
    row(`burst, ${label}: p99 latency (ms)`, (r) => pct(pick(r).lat, 99));
    if (runs.some((r) => r.kind === 'zookeeper')) row(`burst, ${label}: ZooKeeper requests per request served`, (r) => pick(r).zkPerRequest, 1, false);
    if (runs.some((r) => r.kind === 'zookeeper')) row(`burst, ${label}: CPU per request, ZooKeeper's JVM (ms)`, (r) => (r.kind === 'zookeeper' ? pick(r).cpu.zookeeper : NaN), 2, false);
    row(`burst, ${label}: CPU per request, nodepool-server (ms)`, (r) => pick(r).cpu.server, 2);
    row(`burst, ${label}: CPU per request, the bench as consumer (ms)`, (r) => pick(r).cpu.bench, 2);
    row(`burst, ${label}: CPU per request, rest of the machine (ms)`, (r) => pick(r).cpu.rest, 2);
  }
  for (const [label, pick] of [['interval 0.05 s', (r: StoreRun) => r.fastLat], ['interval 1 s (default)', (r: StoreRun) => r.defaultLat]] as const) {
    row(`${SEQUENTIAL} sequential, ${label}: p50 latency (ms)`, (r) => pct(pick(r), 50));
    row(`${SEQUENTIAL} sequential, ${label}: p99 latency (ms)`, (r) => pct(pick(r), 99));
  }
  row('reference: raw store calls of one cycle (cycles/s)', (r) => r.reference);
  if (runs.some((r) => r.kind === 'zookeeper')) row('reference: ZooKeeper requests per cycle', (r) => r.referenceZk, 1, false);
  console.log('');
  const zk = runs.find((r) => r.kind === 'zookeeper');
  const sq = runs.find((r) => r.kind === 'sqlite');
  if (zk) {
    for (const [label, b] of [['interval 0.05 s', zk.fastBurst], ['default interval', zk.defaultBurst]] as const) {
      const vsSqlite = sq ? `; ${(b.rate / (label === 'default interval' ? sq.defaultBurst : sq.fastBurst).rate).toFixed(2)}× SQLite` : '';
      console.log(`ZooKeeper burst (${label}): ${b.rate.toFixed(0)} req/s (goal ≥ 500: ${b.rate >= 500 ? 'met' : 'missed'})${vsSqlite}`);
    }
  }
}

await onStaticHosts(HOSTS, async (sshd, addresses, port) => {
  const runs: StoreRun[] = [];
  for (const kind of KINDS) runs.push(await runOn(kind, sshd, addresses, port));
  report(runs);
});
