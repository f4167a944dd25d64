/**
 * Fault suite: a /metrics scrape storm. 2,000 scrapes at once (from a process of their own)
 * against a real nodepool-server on a ZooKeeper store, and against a real nodepool-builder's
 * metrics port, while this process polls `/health/live` on new connections. Wanted: health
 * answers every poll in under a second, the server keeps its store session (same id, no
 * lapse logged), every scrape ends (answered, or refused at the connection bound), and no
 * connection is left open afterwards.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readdir, readFile, readlink } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { waitFor } from '../../lib/lifecycle.js';
import { createBuilderEnv, fakeDiskimage, type BuilderEnv } from '../support/builder-env.js';
import { recordFault } from '../support/fault-report.js';
import { startGearmand, type GearmandHandle } from '../support/gearmand.js';
import { LauncherSystem } from '../support/launcher-system.js';
import { freePort, runningProcesses, startProcess, type TrackedProcess } from '../support/processes.js';
import type { StormResult } from '../support/scrape-storm.js';
import { startZooKeeper, type ZooKeeperHandle } from '../support/zookeeper.js';
import { nodeScript } from '../support/node-command.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SCRAPES = 2000;
/** The issue's bound on a health answer during the storm: the fault row counts a run as recovered only within it. */
const HEALTH_BOUND_MS = 1000;
/**
 * What the test asserts: nine probes in ten within the bound and none past 5 s. The runner runs
 * this file alone after the others (test/run.ts), but a 2-core machine still shares the CPU with
 * the storm's own client, so one probe's SYN can wait for TCP's 1 s retransmit: the row shows
 * the strict figure, the assertion catches a server that stalls (before the fix: 7.7-16 s).
 */
const HEALTH_P90_MS = HEALTH_BOUND_MS;
const HEALTH_MAX_MS = 5000;

/** The share of probes answered within `ms`. */
function within(health: ReadonlyArray<{ ms: number }>, ms: number): number {
  return health.filter((h) => h.ms < ms).length / Math.max(1, health.length);
}

/** One GET on a new connection; its latency, or the error that ended it. */
function probe(port: number, urlPath: string): Promise<{ ms: number; status: number | null; error: string | null }> {
  const t0 = Date.now();
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: urlPath, agent: false, timeout: 10_000 }, (res) => {
      res.resume();
      res.on('end', () => resolve({ ms: Date.now() - t0, status: res.statusCode ?? null, error: null }));
    });
    req.on('timeout', () => req.destroy(new Error('no answer in 10 s')));
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ ms: Date.now() - t0, status: null, error: err.code ?? err.message }));
  });
}

/** Sockets a process holds open (from /proc). */
async function socketCount(pid: number): Promise<number> {
  const dir = `/proc/${pid}/fd`;
  const links = await Promise.all((await readdir(dir)).map((fd) => readlink(path.join(dir, fd)).catch(() => '')));
  return links.filter((l) => l.startsWith('socket:')).length;
}

/**
 * The sockets of a process that has settled after its start: the same count over a second
 * (a daemon answers health before its last Gearman or store connection is open), at most 10 s.
 */
async function steadySocketCount(pid: number): Promise<number> {
  let last = await socketCount(pid);
  let since = Date.now();
  for (const until = Date.now() + 10_000; Date.now() < until && Date.now() - since < 1000;) {
    await new Promise((r) => setTimeout(r, 100));
    const n = await socketCount(pid);
    if (n !== last) [last, since] = [n, Date.now()];
  }
  return last;
}

/** Runs the storm in its own process and polls `/health/live` until it ends. */
async function storm(port: number, logDir: string, name: string): Promise<{ result: StormResult; health: Array<{ ms: number; status: number | null; error: string | null }> }> {
  const logFile = path.join(logDir, `${name}.out`);
  const proc: TrackedProcess = startProcess(name, process.execPath, [
    '--import', 'tsx', path.join(ROOT, 'test/support/scrape-storm.ts'), String(port), '/metrics', String(SCRAPES),
  ], { cwd: ROOT, logFile });
  const health: Array<{ ms: number; status: number | null; error: string | null }> = [];
  let ended = false;
  void proc.exited.then(() => { ended = true; });
  const deadline = Date.now() + 120_000;
  while (!ended && Date.now() < deadline) {
    health.push(await probe(port, '/health/live'));
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.ok(ended, 'the storm ended within 120 s');
  const exit = await proc.exited;
  assert.equal(exit.code, 0, `the storm process exited 0; see ${logFile}`);
  const line = await waitFor(async () => (await readFile(logFile, 'utf8')).split('\n').find((l) => l.startsWith('{')),
    { timeoutMs: 5000, what: 'the storm result line', intervalMs: 50 });
  return { result: JSON.parse(line) as StormResult, health };
}

function summary(s: { result: StormResult; health: Array<{ ms: number; error: string | null }> }): string {
  const max = Math.max(...s.health.map((h) => h.ms));
  const failed = s.health.filter((h) => h.error !== null).length;
  return `storm ${s.result.ms} ms; scrapes by status ${JSON.stringify(s.result.statuses)}, refused ${JSON.stringify(s.result.errors)}; ` +
    `/health/live max ${max} ms, ${Math.round(within(s.health, HEALTH_BOUND_MS) * 100)} % under ${HEALTH_BOUND_MS} ms, over ${s.health.length} polls, ${failed} unanswered`;
}

describe('faults: 2,000 concurrent /metrics scrapes', () => {
  let zk: ZooKeeperHandle;
  let gearmand: GearmandHandle;

  before(async () => {
    zk = await startZooKeeper();
    gearmand = await startGearmand();
  });

  after(async () => {
    await gearmand?.stop();
    await zk?.stop();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  it('nodepool-server keeps answering health and keeps its store session', async () => {
    const port = await freePort();
    const sys = await LauncherSystem.create({
      // The store session's default TTL (LauncherSystem's 3 s is for fast lapse tests).
      labels: [{ name: 'small' }], providers: [], launcher: { 'session-ttl': 30 },
      extra: { 'zookeeper-servers': [{ host: zk.host, port: zk.port, chroot: `/storm-${randomUUID()}` }], webapp: { port, 'listen-address': '127.0.0.1' } },
    });
    try {
      // Something to read at each scrape: requests no provider serves stay in the store.
      for (let i = 0; i < 200; i += 1) await sys.store.createRequest({ labels: ['small'], requestor: 'storm-test' });
      const server = sys.startServerProcess('storm-server');
      await waitFor(async () => {
        if (!server.alive()) throw new Error(`nodepool-server exited; see ${sys.dir}/storm-server.log`);
        return (await probe(port, '/ready')).status === 200;
      }, { timeoutMs: 30_000, what: 'nodepool-server /ready 200', intervalMs: 100 });
      const sessions = async (): Promise<string[]> => (await sys.store.listSessions()).filter((s) => s.owner.startsWith('nodepool-server')).map((s) => s.id);
      const before = await sessions();
      assert.equal(before.length, 1);
      const socketsBefore = await steadySocketCount(server.pid);
      const s = await storm(port, sys.dir, 'storm-client');
      const after = await sessions();
      const log = await readFile(path.join(sys.dir, 'storm-server.log'), 'utf8');
      const lapses = log.split('\n').filter((l) => /session (lapsed|lost|expired)/i.test(l));
      const kept = after.length === 1 && after[0] === before[0] && lapses.length === 0 && server.alive();
      // Connections the storm opened are all closed again (give the server a moment to close them).
      const socketsAfter = await waitFor(async () => {
        const n = await socketCount(server.pid);
        return n <= socketsBefore ? n : undefined;
      }, { timeoutMs: 10_000, what: 'the server to close the storm connections', intervalMs: 100 }).catch(() => socketCount(server.pid));
      const maxHealth = Math.max(...s.health.map((h) => h.ms));
      const unanswered = s.health.filter((h) => h.status !== 200).length;
      const ended = Object.values(s.result.statuses).reduce((a, b) => a + b, 0) + Object.values(s.result.errors).reduce((a, b) => a + b, 0);
      recordFault({
        scenario: '2,000 concurrent /metrics scrapes (nodepool-server, ZooKeeper store)', runs: 1,
        recovered: maxHealth < HEALTH_BOUND_MS && unanswered === 0 && kept ? 1 : 0,
        lost: unanswered, leaked: Math.max(0, socketsAfter - socketsBefore), recoverMs: s.result.ms,
        notes: `${summary(s)}; store session ${kept ? 'kept' : `NOT kept (${before.join(',')} → ${after.join(',')}, ${lapses.length} lapse lines)`}`,
      });
      assert.equal(ended, SCRAPES, 'every scrape ended');
      assert.ok((s.result.statuses['200'] ?? 0) > 0, summary(s));
      assert.equal(unanswered, 0, summary(s));
      assert.ok(within(s.health, HEALTH_P90_MS) >= 0.9 && maxHealth < HEALTH_MAX_MS, summary(s));
      assert.ok(kept, `store session kept: ${before.join(',')} → ${after.join(',')}; ${lapses.join('\n')}`);
      assert.ok(socketsAfter <= socketsBefore, `sockets ${socketsBefore} → ${socketsAfter}`);
      await sys.stopServer('storm-server');
      assert.equal((await server.exited).code, 0);
    } finally {
      await sys.stop();
    }
  });

  it('nodepool-builder keeps answering health on its metrics port', async () => {
    const env: BuilderEnv = await createBuilderEnv({ name: 'storm', gearmanPort: gearmand.port, diskimages: [fakeDiskimage('deb')] });
    const port = await freePort();
    const builder = startProcess('storm-builder', process.execPath, [
      ...nodeScript('bin/nodepool-builder.ts'), '-c', env.configPath, '--hostname', 'storm-builder', '--metrics-port', String(port),
    ], { cwd: ROOT, logFile: path.join(env.dir, 'storm-builder.log'), env: { ...process.env, NODEPOOL_CONFIG: '' } });
    try {
      await waitFor(async () => {
        if (!builder.alive()) throw new Error(`nodepool-builder exited; see ${env.dir}/storm-builder.log`);
        return (await probe(port, '/health/live')).status === 200;
      }, { timeoutMs: 30_000, what: 'the builder metrics port', intervalMs: 100 });
      const socketsBefore = await steadySocketCount(builder.pid);
      const s = await storm(port, env.dir, 'storm-client-builder');
      const socketsAfter = await waitFor(async () => {
        const n = await socketCount(builder.pid);
        return n <= socketsBefore ? n : undefined;
      }, { timeoutMs: 10_000, what: 'the builder to close the storm connections', intervalMs: 100 }).catch(() => socketCount(builder.pid));
      const maxHealth = Math.max(...s.health.map((h) => h.ms));
      const unanswered = s.health.filter((h) => h.status !== 200).length;
      recordFault({
        scenario: '2,000 concurrent /metrics scrapes (nodepool-builder)', runs: 1,
        recovered: maxHealth < HEALTH_BOUND_MS && unanswered === 0 && builder.alive() ? 1 : 0,
        lost: unanswered, leaked: Math.max(0, socketsAfter - socketsBefore), recoverMs: s.result.ms, notes: summary(s),
      });
      assert.equal(unanswered, 0, summary(s));
      assert.ok(within(s.health, HEALTH_P90_MS) >= 0.9 && maxHealth < HEALTH_MAX_MS, summary(s));
      assert.ok(socketsAfter <= socketsBefore, `sockets ${socketsBefore} → ${socketsAfter}`);
    } finally {
      await builder.stop();
      await env.remove();
    }
  });
});
