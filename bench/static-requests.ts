/**
 * Node request benchmark with the static driver: one real sshd listening on HOSTS loopback
 * addresses (127.0.0.2…), each a static host with `max-parallel-jobs` JOBS, so HOSTS×JOBS
 * ready slots; one nodepool-server process (one launcher); requests from this process. sshd
 * runs with `-r` (no re-exec per connection): the hosts it stands in for would spend their own
 * CPU on each liveness connect, not the launcher machine's.
 *
 *   node --import tsx bench/static-requests.ts [hosts=100] [jobs=10] [sequential=200]
 *
 * burst: HOSTS×JOBS one-node requests created at once; rate = requests / (last fulfilled −
 * first created); latency = fulfilled − created per request (store clock).
 * sequential: one request at a time (create, wait fulfilled); p50/p99 latency.
 * Both at a pool-worker interval of 0.05 s and at the default 1 s (an idle worker passes once
 * per interval, and at once when the store tells it of a change; a busy one goes on at once).
 * reference: the same store calls one request cycle makes (create, lock, read, pending,
 * allocate, fulfilled, unlock) in a tight loop in one process: the store-bound ceiling.
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
import { startProcess, stopAllProcesses, type TrackedProcess } from '../test/support/processes.js';
import { startSshd } from '../test/support/sshd.js';
import { nodeLock, requestLock } from '../lib/store/lock-names.js';

const HOSTS = Number(process.argv[2] ?? 100);
const JOBS = Number(process.argv[3] ?? 10);
const SEQUENTIAL = Number(process.argv[4] ?? 200);
const ROOT = fileURLToPath(new URL('../', import.meta.url));
const SLOTS = HOSTS * JOBS;

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
};

async function referenceRate(store: Store, n: number): Promise<number> {
  const session = await store.openSession({ owner: 'bench-reference', hostname: 'bench', pid: process.pid, ttlMs: 30_000 });
  const nodes = [];
  for (let i = 0; i < n; i++) nodes.push(await store.createNode({ state: 'ready', provider: 'reference', pool: 'main', labels: ['ref'] }));
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
  for (const node of nodes) await store.deleteNode(node.id);
  for (const r of await store.listRequests({ requestor: 'bench-reference' })) await store.deleteRequest(r.id);
  await store.closeSession(session.id);
  return rate;
}

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-bench-requests-'));
  const addresses = Array.from({ length: HOSTS }, (_, i) => `127.0.${Math.floor((i + 2) / 256)}.${(i + 2) % 256}`);
  const port = 20000 + Math.floor(Math.random() * 20000);
  const sshd = await startSshd({ addresses: addresses.map((a) => `${a}:${port}`), keyTypes: ['ed25519'], reexec: false });
  const configPath = path.join(dir, 'nodepool.yaml');
  const write = (interval: number): Promise<void> => writeFile(configPath, yaml.dump({
    'state-dir': path.join(dir, 'state'),
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
    const ref = await referenceRate(store, 1000);
    const prof = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
    server = startProcess('nodepool-server', process.execPath, [...prof, '--import', 'tsx', path.join(ROOT, 'bin/nodepool-server.ts'), '-c', configPath, '--log-level', 'warn'],
      { cwd: ROOT, logFile: path.join(dir, 'server.log'), env: { ...process.env, NODEPOOL_CONFIG: '' } });
    const regStart = performance.now();
    await waitFor(async () => (await store.listNodes({ states: ['ready'] })).length >= SLOTS, { timeoutMs: 600_000, what: `${SLOTS} ready slots`, intervalMs: 500 });
    const regS = (performance.now() - regStart) / 1000;

    /** SLOTS one-node requests at once; then the slots are freed again (deleted requests → the deleter returns their nodes). */
    const burst = async (): Promise<{ rate: number; lat: number[] }> => {
      for (let i = 0; i < SLOTS; i++) await store.createRequest({ labels: ['bench'], requestor: 'bench' });
      await waitFor(async () => (await store.listRequests({ states: ['fulfilled'] })).length >= SLOTS, { timeoutMs: 600_000, what: 'every request fulfilled', intervalMs: 200 });
      const reqs = await store.listRequests({ requestor: 'bench' });
      const first = Math.min(...reqs.map((r) => r.created));
      const last = Math.max(...reqs.map((r) => r.stateTime));
      for (const r of reqs) await store.deleteRequest(r.id);
      await waitFor(async () => (await store.listNodes({ states: ['ready'] })).filter((n) => n.allocatedTo === null).length >= SLOTS,
        { timeoutMs: 120_000, what: 'slots back in stock', intervalMs: 500 });
      return { rate: SLOTS / ((last - first) / 1000), lat: reqs.map((r) => r.stateTime - r.created) };
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
    const fastBurst = await burst();
    const fastLat = await sequential();
    await write(1);
    await new Promise((r) => setTimeout(r, 1500)); // the server reloads the changed file
    const defaultBurst = await burst();
    const defaultLat = await sequential();

    console.log(`static driver, ${HOSTS} hosts × ${JOBS} jobs = ${SLOTS} slots on one sshd; one nodepool-server process`);
    console.log(`registration of ${SLOTS} slots: ${regS.toFixed(1)} s`);
    console.log('');
    console.log('| run | requests | rate (req/s) | p50 ms | p99 ms | max ms |');
    console.log('|---|---:|---:|---:|---:|---:|');
    const burstRow = (name: string, b: { rate: number; lat: number[] }): void =>
      console.log(`| ${name} | ${SLOTS} | ${b.rate.toFixed(0)} | ${pct(b.lat, 50)} | ${pct(b.lat, 99)} | ${Math.max(...b.lat)} |`);
    burstRow('burst, interval 0.05 s', fastBurst);
    burstRow('burst, interval 1 s (default)', defaultBurst);
    console.log(`| sequential, interval 0.05 s | ${SEQUENTIAL} | – | ${pct(fastLat, 50)} | ${pct(fastLat, 99)} | ${Math.max(...fastLat)} |`);
    console.log(`| sequential, interval 1 s (default) | ${SEQUENTIAL} | – | ${pct(defaultLat, 50)} | ${pct(defaultLat, 99)} | ${Math.max(...defaultLat)} |`);
    console.log(`| reference: raw store calls of one cycle | 1000 | ${ref.toFixed(0)} | – | – | – |`);
    console.log('');
    for (const [name, b] of [['interval 0.05 s', fastBurst], ['default interval', defaultBurst]] as const) {
      console.log(`burst (${name}) / target 200 req/s: ${(b.rate / 200).toFixed(2)}×; / store-bound reference: ${(b.rate / ref).toFixed(2)}×`);
    }
  } finally {
    await server?.stop();
    await store.close();
    await sshd.stop();
    await stopAllProcesses();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
