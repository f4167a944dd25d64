/**
 * Cloud churn benchmark: how fast the launcher turns nodes over on the loopback cloud's Nova
 * (fake virt driver, the full cloud the tests start: test/support/openstack-full.ts), next to
 * what Nova itself allows.
 *
 *   node --import tsx bench/cloud-churn.ts [--nodes N] [--max-servers C] [--warmup W] [--timeout S]
 *
 * (env BENCH_CLOUD_NODES, BENCH_CLOUD_MAX_SERVERS, BENCH_CLOUD_WARMUP and BENCH_CLOUD_TIMEOUT
 * too; defaults 20, 10, 2, 1200.) The cloud is started for the run (a minute or more) and
 * stopped at its end; with NODEPOOL_TEST_NOVA_CLOUD=<info.json> a running one is used instead
 * (then only this run's servers are deleted, and the cloud's CPU is in "rest of the machine").
 *
 * direct: N × (create a server, poll until ACTIVE, delete it, poll until Nova no longer knows
 * it), C at a time, by this process through the project's Nova client
 * (lib/drivers/openstack/nova.ts on a Keystone session): Nova's own rate. It polls as the
 * launcher does (ACTIVE: after 0.25, 0.5, 1, then every 2 s; gone: every 0.25 s), since on a
 * loaded machine a tighter poll slows Nova's one API worker down more than it saves.
 * launcher: one nodepool-server process (SQLite store, the launcher's default intervals) with
 * an openstack provider on the same cloud, project, flavor, cloud image and network,
 * `max-servers` C, no host key checking and no floating IP (the direct cycle has neither); N
 * one-node requests created at once; a consumer in this process takes each node as soon as its
 * request is fulfilled and returns it at once (accept, then release: used). Rate = N / (first
 * request → last node deleted, i.e. its server gone from Nova: the deleter removes the record
 * only then). Goal (issue 22): ≥ 0.7× the direct rate.
 * Before each, W cycles of the same kind, not measured (first boots, JIT, the provider's caches).
 * CPU per node: user + system time over the measured part, of this process, nodepool-server,
 * the cloud's processes (the process tree the cloud runs in) and the rest of the machine.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import yaml from 'js-yaml';
import { NodeLockedError } from '../lib/errors.js';
import { NodepoolClient } from '../lib/client/nodepool-client.js';
import { loadConfig } from '../lib/config/load.js';
import { loadCloud } from '../lib/drivers/openstack/clouds-yaml.js';
import { KeystoneSession } from '../lib/drivers/openstack/keystone.js';
import { NovaClient, type CreateServerSpec } from '../lib/drivers/openstack/nova.js';
import { pollUntil, waitFor } from '../lib/lifecycle.js';
import { novaCloudFromInfo, readNovaCloudInfo, type NovaCloud } from '../test/support/openstack-full.js';
import { startProcess, type TrackedProcess } from '../test/support/processes.js';
import { pct } from './percentile.js';
import { machineBusyMs, processCpuMs, processTreeCpuMs } from './proc-cpu.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const argv = process.argv.slice(2);
/** A whole-number setting from `--flag N`, else env, else the default. */
function setting(flag: string, env: string, def: number, min: number): number {
  const i = argv.indexOf(flag);
  const raw = i >= 0 ? argv[i + 1] : process.env[env];
  const v = raw === undefined ? def : Number(raw);
  if (!Number.isInteger(v) || v < min) {
    console.error(`${flag} (or ${env}): expected a whole number ≥ ${min}, got ${String(raw)}`);
    process.exit(2);
  }
  return v;
}
const NODES = setting('--nodes', 'BENCH_CLOUD_NODES', 20, 1);
const MAX_SERVERS = setting('--max-servers', 'BENCH_CLOUD_MAX_SERVERS', 10, 1);
const WARMUP = setting('--warmup', 'BENCH_CLOUD_WARMUP', 2, 0);
const TIMEOUT_MS = setting('--timeout', 'BENCH_CLOUD_TIMEOUT', 1200, 10) * 1000;
const FLAVOR = 'm1.tiny';
const LABEL = 'churn';
const GOAL = 0.7;
const RUN = `bench-churn-${process.pid}`;

/** CPU used so far (ms) by the processes the figures name. */
interface CpuSnap { bench: number; server: number; cloud: number; machine: number }
/** CPU per node (ms) by process. */
type CpuPerNode = Record<'bench' | 'server' | 'cloud' | 'rest', number>;

function cpuSnap(serverPid: number | undefined, cloudPid: number | undefined): CpuSnap {
  return {
    bench: processCpuMs(process.pid), server: serverPid ? processCpuMs(serverPid) : 0,
    cloud: cloudPid ? processTreeCpuMs(cloudPid) : NaN, machine: machineBusyMs(),
  };
}

function cpuPerNode(a: CpuSnap, b: CpuSnap, n: number): CpuPerNode {
  const d = { bench: b.bench - a.bench, server: b.server - a.server, cloud: b.cloud - a.cloud, machine: b.machine - a.machine };
  const known = d.bench + d.server + (Number.isNaN(d.cloud) ? 0 : d.cloud);
  return { bench: d.bench / n, server: d.server / n, cloud: d.cloud / n, rest: Math.max(0, d.machine - known) / n };
}

/** What one side measured. */
interface Churn {
  rate: number;
  wallS: number;
  /** direct: create → ACTIVE; launcher: request → fulfilled (ms). */
  upMs: number[];
  /** direct: delete → gone; launcher: used → node deleted (ms). */
  downMs: number[];
  cpu: CpuPerNode;
}

/** Nodes of this run still in Nova, by the bench's tag or the launcher's provider metadata. */
async function ourServers(nova: NovaClient, provider: string): Promise<string[]> {
  return (await nova.listServers())
    .filter((s) => s.metadata['nodepool-bench'] === RUN || s.metadata.nodepool_provider_name === provider).map((s) => s.id);
}

/** Polls a server until `done` says so, as often as the launcher does (`intervalMs`); ERROR throws. */
async function pollServer(nova: NovaClient, id: string, what: string, done: (status: string | undefined) => boolean, intervalMs: (n: number) => number): Promise<void> {
  const ok = await pollUntil(async () => {
    const s = await nova.getServer(id);
    if (s?.status === 'ERROR' && !done('ERROR')) throw new Error(`server ${id} went to ERROR: ${s.fault ?? 'no fault message'}`);
    return done(s?.status) ? true : undefined;
  }, { timeoutMs: TIMEOUT_MS, intervalMs });
  if (!ok) throw new Error(`server ${id} not ${what} within ${TIMEOUT_MS / 1000} s`);
}

/** n create → ACTIVE → delete → gone cycles straight to Nova, `concurrency` at a time. */
async function direct(nova: NovaClient, spec: Omit<CreateServerSpec, 'name'>, n: number, concurrency: number, cloudPid: number | undefined): Promise<Churn> {
  const upMs: number[] = [];
  const downMs: number[] = [];
  let next = 0;
  const cpu0 = cpuSnap(undefined, cloudPid);
  const t0 = performance.now();
  const worker = async (): Promise<void> => {
    while (next < n) {
      const i = next++;
      const c0 = performance.now();
      const id = await nova.createServer({ ...spec, name: `${RUN}-${i}` });
      await pollServer(nova, id, 'ACTIVE', (s) => s === 'ACTIVE', (k) => 250 * 2 ** Math.min(k, 3));
      const d0 = performance.now();
      upMs.push(d0 - c0);
      await nova.deleteServer(id);
      await pollServer(nova, id, 'gone', (s) => s === undefined || s === 'DELETED', () => 250);
      downMs.push(performance.now() - d0);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, worker));
  const wallS = (performance.now() - t0) / 1000;
  return { rate: n / wallS, wallS, upMs, downMs, cpu: cpuPerNode(cpu0, cpuSnap(undefined, cloudPid), n) };
}

/**
 * n one-node requests at once; each node is taken when its request is fulfilled and returned
 * at once (used); done when every node is deleted. One loop every 100 ms does both.
 */
async function launcherChurn(client: NodepoolClient, provider: string, n: number, serverPid: number, cloudPid: number | undefined): Promise<Churn> {
  const store = client.store;
  const cpu0 = cpuSnap(serverPid, cloudPid);
  const t0 = Date.now();
  const requests = new Set((await Promise.all(Array.from({ length: n }, () => client.request([LABEL])))).map((r) => r.id));
  const upMs: number[] = [];
  const usedAt = new Map<string, number>();
  const deletedAt = new Map<string, number>();
  const done = await pollUntil(async () => {
    for (const r of await store.listRequests({ requestor: client.requestor })) {
      if (!requests.has(r.id) || r.state === 'requested' || r.state === 'pending') continue;
      if (r.state !== 'fulfilled') throw new Error(`request ${r.id} ${r.state}: ${r.reason ?? 'no reason given'}`);
      let nodes;
      try {
        nodes = await client.accept(r);
      } catch (err) {
        // The launcher may still hold the node's lock for a moment after fulfilling: next pass, as Zuul retries.
        if (err instanceof NodeLockedError) continue;
        throw err;
      }
      requests.delete(r.id);
      upMs.push(r.stateTime - r.created);
      for (const node of nodes) {
        await client.release(node.id);
        usedAt.set(node.id, Date.now());
      }
    }
    const present = new Set((await store.listNodes({ provider })).map((x) => x.id));
    for (const id of usedAt.keys()) if (!present.has(id) && !deletedAt.has(id)) deletedAt.set(id, Date.now());
    return deletedAt.size >= n ? true : undefined;
  }, { timeoutMs: TIMEOUT_MS, intervalMs: 100 });
  if (!done) throw new Error(`launcher churn: ${deletedAt.size} of ${n} nodes deleted within ${TIMEOUT_MS / 1000} s`);
  const cpu = cpuPerNode(cpu0, cpuSnap(serverPid, cloudPid), n);
  const wallS = (Math.max(...deletedAt.values()) - t0) / 1000;
  const downMs = [...deletedAt].map(([id, at]) => at - (usedAt.get(id) as number));
  return { rate: n / wallS, wallS, upMs, downMs, cpu };
}

/** Steps that undo what the run started, last first; run once, also on SIGINT/SIGTERM. */
const undo: Array<{ what: string; run: () => Promise<unknown> }> = [];
let cleaning: Promise<void> | undefined;
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    for (const step of undo.reverse()) {
      await step.run().catch((err: unknown) => console.error(`cleanup: ${step.what}: ${String(err)}`));
    }
  })();
  return cleaning;
}

/** The cloud: the one NODEPOOL_TEST_NOVA_CLOUD names, else a private one in a child process (its pid is returned). */
async function startCloud(): Promise<{ cloud: NovaCloud; pid: number | undefined; startS: number }> {
  const shared = process.env.NODEPOOL_TEST_NOVA_CLOUD;
  if (shared) return { cloud: await novaCloudFromInfo(await readNovaCloudInfo(shared)), pid: undefined, startS: 0 };
  const dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-bench-cloud-'));
  const info = path.join(dir, 'nova-cloud.json');
  const log = path.join(os.tmpdir(), `${RUN}-cloud.log`);
  const t0 = performance.now();
  // `--parent`: the cloud also stops when this process dies without cleaning up.
  const proc: TrackedProcess = startProcess('nova-cloud', process.execPath,
    ['--import', 'tsx', path.join(ROOT, 'test/support/openstack-full.ts'), 'up', info, '--parent', String(process.pid)],
    { cwd: ROOT, logFile: log });
  undo.push({
    what: 'stop the cloud', run: async () => {
      await proc.stop(180_000);
      await rm(dir, { recursive: true, force: true });
      if (!process.exitCode) await rm(log, { force: true }); // kept when the run failed
    },
  });
  await waitFor(() => {
    if (!proc.alive()) throw new Error(`the cloud exited while starting; see ${log}`);
    return existsSync(info);
  }, { timeoutMs: 600_000, what: 'the loopback cloud to start', intervalMs: 500 });
  return { cloud: await novaCloudFromInfo(await readNovaCloudInfo(info)), pid: proc.pid, startS: (performance.now() - t0) / 1000 };
}

/** Starts nodepool-server on a config with one openstack provider; returns the consumer and the server. */
async function startLauncher(cloud: NovaCloud, provider: string): Promise<{ client: NodepoolClient; server: TrackedProcess; intervals: string }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-bench-cloud-churn-'));
  undo.push({
    what: 'remove the launcher dir', run: async () => {
      if (process.exitCode) console.error(`the launcher's config, state and log are kept in ${dir}`);
      else await rm(dir, { recursive: true, force: true });
    },
  });
  const configPath = path.join(dir, 'nodepool.yaml');
  await writeFile(configPath, yaml.dump({
    'state-dir': path.join(dir, 'state'),
    'clouds-file': cloud.cloudsFile,
    labels: [{ name: LABEL }],
    providers: [{
      name: provider, driver: 'openstack', cloud: cloud.cloud, 'region-name': cloud.region, 'launch-timeout': 300,
      'cloud-images': [{ name: cloud.image.name, username: 'cirros' }],
      pools: [{
        name: 'main', networks: [cloud.network.name], 'host-key-checking': false, 'auto-floating-ip': false, 'max-servers': MAX_SERVERS,
        labels: [{ name: LABEL, 'cloud-image': cloud.image.name, 'flavor-name': FLAVOR }],
      }],
    }],
  }));
  const config = loadConfig(configPath);
  const server = startProcess('nodepool-server', process.execPath,
    ['--import', 'tsx', path.join(ROOT, 'bin/nodepool-server.ts'), '-c', configPath, '--log-level', 'warn', '--no-webapp'],
    { cwd: ROOT, logFile: path.join(dir, 'server.log'), env: { ...process.env, NODEPOOL_CONFIG: '' } });
  undo.push({ what: 'stop nodepool-server', run: () => server.stop(60_000) });
  const client = await NodepoolClient.open({ config, requestor: RUN });
  undo.push({ what: 'close the consumer', run: () => client.close() });
  await waitFor(async () => {
    if (!server.alive()) throw new Error(`nodepool-server exited; see ${dir}/server.log`);
    return (await client.store.listLaunchers()).length > 0;
  }, { timeoutMs: 120_000, what: 'the launcher to register', intervalMs: 250 });
  const l = config.launcher;
  return { client, server, intervals: `interval ${l.interval} s, delete-interval ${l.deleteInterval} s, delete-concurrency ${l.deleteConcurrency}` };
}

function report(d: Churn, l: Churn, header: string): void {
  console.log(header);
  console.log('');
  console.log('| | Nova direct | launcher | launcher / direct |');
  console.log('|---|---:|---:|---:|');
  const row = (name: string, pick: (c: Churn) => number, digits: number, ratio = true): void => {
    const [a, b] = [pick(d), pick(l)];
    const f = (v: number): string => (Number.isNaN(v) ? '–' : v.toFixed(digits));
    console.log(`| ${name} | ${f(a)} | ${f(b)} | ${ratio && a ? `${(b / a).toFixed(2)}×` : ''} |`);
  };
  row('nodes/s (request → server deleted)', (c) => c.rate, 3);
  row('wall time (s)', (c) => c.wallS, 1);
  row('p50 up (s): direct create → ACTIVE, launcher request → fulfilled', (c) => pct(c.upMs, 50) / 1000, 2);
  row('p99 up (s)', (c) => pct(c.upMs, 99) / 1000, 2);
  row('p50 down (s): direct delete → gone, launcher used → node deleted', (c) => pct(c.downMs, 50) / 1000, 2);
  row('p99 down (s)', (c) => pct(c.downMs, 99) / 1000, 2);
  row('CPU per node, this process (ms): Nova client / consumer', (c) => c.cpu.bench, 1, false);
  row('CPU per node, nodepool-server (ms)', (c) => c.cpu.server, 1, false);
  row('CPU per node, the cloud: Nova, Neutron, Keystone, MariaDB, … (ms)', (c) => c.cpu.cloud, 1);
  row('CPU per node, rest of the machine (ms)', (c) => c.cpu.rest, 1, false);
  console.log('');
  const ratio = l.rate / d.rate;
  console.log(`launcher ${l.rate.toFixed(3)} nodes/s vs Nova direct ${d.rate.toFixed(3)} nodes/s: ${ratio.toFixed(2)}× (goal ≥ ${GOAL}×: ${ratio >= GOAL ? 'met' : 'missed'})`);
}

async function main(): Promise<void> {
  const provider = `churn-${process.pid}`;
  const { cloud, pid: cloudPid, startS } = await startCloud();
  // A call may wait longer than the default 60 s for an answer on a loaded machine; one timed-out call would end the run.
  const session = await KeystoneSession.authenticate(await loadCloud(cloud.cloud, { path: cloud.cloudsFile }), { timeoutMs: 300_000 });
  const nova = new NovaClient(session);
  undo.push({
    what: 'delete this run\'s servers', run: async () => {
      for (const id of await ourServers(nova, provider)) await nova.deleteServer(id);
      await waitFor(async () => (await ourServers(nova, provider)).length === 0, { timeoutMs: 180_000, what: 'this run\'s servers gone', intervalMs: 1000 });
    },
  });
  const flavor = cloud.flavors.find((f) => f.name === FLAVOR);
  if (!flavor) throw new Error(`the loopback cloud has no flavor ${FLAVOR}`);
  const spec = { imageId: cloud.image.id, flavorId: flavor.id, networkIds: [cloud.network.id], metadata: { 'nodepool-bench': RUN } };
  if (WARMUP) await direct(nova, spec, WARMUP, MAX_SERVERS, cloudPid);
  const d = await direct(nova, spec, NODES, MAX_SERVERS, cloudPid);
  const { client, server, intervals } = await startLauncher(cloud, provider);
  if (WARMUP) await launcherChurn(client, provider, WARMUP, server.pid, cloudPid);
  const l = await launcherChurn(client, provider, NODES, server.pid, cloudPid);
  const left = await ourServers(nova, provider);
  if (left.length) throw new Error(`${left.length} of the launcher's servers are still in Nova after their nodes were deleted`);
  report(d, l, [
    `cloud churn: ${NODES} nodes (after ${WARMUP} unmeasured), ${MAX_SERVERS} at a time (max-servers), flavor ${FLAVOR}, cloud image ${cloud.image.name};`,
    `loopback Nova with the fake virt driver (${cloudPid ? `started for this run in ${startS.toFixed(0)} s` : 'a running one, NODEPOOL_TEST_NOVA_CLOUD'});`,
    `one nodepool-server, SQLite store, launcher ${intervals}; ${os.cpus().length} CPUs, load ${os.loadavg()[0]?.toFixed(1)} at the end`,
  ].join('\n'));
}

for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => void cleanup().finally(() => process.exit(130)));
}
try {
  await main();
} catch (err) {
  console.error((err as Error).stack ?? String(err));
  process.exitCode = 1;
} finally {
  await cleanup();
}
