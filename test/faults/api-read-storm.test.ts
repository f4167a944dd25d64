/**
 * Fault suite: an API read storm. 2,000 reads at once, from three processes of their own (700
 * `GET /api/audit` and 700 `GET /api/image-list` with a read token, 600 unauthenticated
 * `GET /api/node-list`), against a real nodepool-server (its webapp with the write API and
 * `webapp.auth`) on a real ZooKeeper store, while this process polls `/health/ready` on new
 * connections. Wanted: health answers within a
 * second (nine probes in ten; none past 5 s, as the metrics storm allows on 2 shared cores),
 * the store session stays the same and never lapses, every read ends (answered, or refused at
 * the connection bound), none is refused for its token and none fails.
 *
 * The storm clients are test/support/scrape-storm.ts processes (a client with a token is given
 * it in `STORM_AUTHORIZATION`).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { waitFor } from '../../lib/lifecycle.js';
import { signToken } from '../../lib/web-auth/sign-token.js';
import { LOCAL } from '../integration/web/api/api-env.js';
import { recordFault } from '../support/fault-report.js';
import { LauncherSystem } from '../support/launcher-system.js';
import { freePort, runningProcesses, startProcess } from '../support/processes.js';
import type { StormResult } from '../support/scrape-storm.js';
import { startZooKeeper, type ZooKeeperHandle } from '../support/zookeeper.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const HEALTH_BOUND_MS = 1000;
const HEALTH_MAX_MS = 5000;
const STORMS = [
  { name: 'audit', path: '/api/audit?limit=50', count: 700, token: true },
  { name: 'image-list', path: '/api/image-list', count: 700, token: true },
  { name: 'node-list', path: '/api/node-list', count: 600, token: false },
] as const;

type Probe = { ms: number; status: number | null; error: string | null };
/** One GET on a new connection; its latency, or the error that ended it. */
const probe = (port: number, urlPath: string): Promise<Probe> => {
  const t0 = Date.now();
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: urlPath, agent: false, timeout: 10_000 }, (res) => {
      res.resume();
      res.on('end', () => resolve({ ms: Date.now() - t0, status: res.statusCode ?? null, error: null }));
    });
    req.on('timeout', () => req.destroy(new Error('no answer in 10 s')));
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ ms: Date.now() - t0, status: null, error: err.code ?? err.message }));
  });
};

describe('faults: 2,000 concurrent API reads', () => {
  let zk: ZooKeeperHandle;
  before(async () => {
    zk = await startZooKeeper();
  });
  after(async () => {
    await zk?.stop();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  it('nodepool-server keeps answering /health/ready within a second and keeps its store session', async () => {
    const port = await freePort();
    const sys = await LauncherSystem.create({
      // The store session's default TTL (LauncherSystem's 3 s is for fast lapse tests).
      labels: [{ name: 'small' }], providers: [], launcher: { 'session-ttl': 30 },
      extra: {
        'zookeeper-servers': [{ host: zk.host, port: zk.port, chroot: `/api-storm-${randomUUID()}` }],
        webapp: {
          port, 'listen-address': '127.0.0.1',
          auth: [{ name: LOCAL.name, driver: LOCAL.driver, secret: LOCAL.secret, issuer: LOCAL.issuer, audience: LOCAL.audience }],
        },
      },
    });
    try {
      // Something to read: requests no provider serves, builds, and a page of audit entries.
      for (let i = 0; i < 100; i += 1) await sys.store.createRequest({ labels: ['small'], requestor: 'storm-test' });
      for (let i = 0; i < 5; i += 1) await sys.store.createBuild({ diskimage: 'deb', formats: ['qcow2'] });
      for (let i = 0; i < 60; i += 1) {
        await sys.store.recordAudit({
          time: Date.now(), user: 'storm-writer', role: 'operator', authenticator: 'local', action: 'image-pause', target: 'deb',
          method: 'POST', path: '/api/image/deb/pause', status: 200, result: 'ok', message: `Builds of deb paused (r${i})`, remote: '127.0.0.1',
        });
      }
      const server = sys.startServerProcess('storm-server');
      await waitFor(async () => {
        if (!server.alive()) throw new Error(`nodepool-server exited; see ${sys.dir}/storm-server.log`);
        return (await probe(port, '/ready')).status === 200;
      }, { timeoutMs: 30_000, what: 'nodepool-server /ready 200', intervalMs: 100 });
      const sessions = async (): Promise<string[]> => (await sys.store.listSessions()).filter((x) => x.owner.startsWith('nodepool-server')).map((x) => x.id);
      const sessionsBefore = await sessions();
      assert.equal(sessionsBefore.length, 1);
      const token = await signToken(LOCAL, { user: 'storm-reader', role: 'read', expiresInS: 600 });

      const procs = STORMS.map((s) => {
        const logFile = path.join(sys.dir, `storm-${s.name}.out`);
        const args = ['--import', 'tsx', path.join(ROOT, 'test/support/scrape-storm.ts'), String(port), s.path, String(s.count)];
        const env = { ...process.env, STORM_AUTHORIZATION: s.token ? `Bearer ${token}` : '' };
        return { s, logFile, proc: startProcess(`storm-${s.name}`, process.execPath, args, { cwd: ROOT, logFile, env }) };
      });
      const health: Probe[] = [];
      let ended = false;
      void Promise.all(procs.map((p) => p.proc.exited)).then(() => { ended = true; });
      const deadline = Date.now() + 120_000;
      while (!ended && Date.now() < deadline) {
        health.push(await probe(port, '/health/ready'));
        await new Promise((r) => setTimeout(r, 20));
      }
      assert.ok(ended, 'the storm ended within 120 s');
      const results: Array<{ name: string; r: StormResult }> = [];
      for (const p of procs) {
        assert.equal((await p.proc.exited).code, 0, `storm ${p.s.name} exited 0; see ${p.logFile}`);
        const line = await waitFor(async () => (await readFile(p.logFile, 'utf8')).split('\n').find((l) => l.startsWith('{')),
          { timeoutMs: 5000, what: `the ${p.s.name} storm result`, intervalMs: 50 });
        results.push({ name: p.s.name, r: JSON.parse(line) as StormResult });
      }

      const maxHealth = Math.max(...health.map((h) => h.ms));
      const within = health.filter((h) => h.ms < HEALTH_BOUND_MS).length / Math.max(1, health.length);
      const unanswered = health.filter((h) => h.status !== 200).length;
      const sessionsAfter = await sessions();
      const log = await readFile(path.join(sys.dir, 'storm-server.log'), 'utf8');
      const lapses = log.split('\n').filter((l) => /session (lapsed|lost|expired)/i.test(l));
      const kept = sessionsAfter.length === 1 && sessionsAfter[0] === sessionsBefore[0] && lapses.length === 0 && server.alive();
      const summary = `${results.map(({ name, r }) => `${name} ${r.ms} ms ${JSON.stringify(r.statuses)} refused ${JSON.stringify(r.errors)}`).join('; ')}; ` +
        `/health/ready max ${maxHealth} ms, ${Math.round(within * 100)} % under ${HEALTH_BOUND_MS} ms over ${health.length} polls, ${unanswered} unanswered`;
      recordFault({
        scenario: '2,000 concurrent API reads (audit and image-list with a token, node-list without; nodepool-server, ZooKeeper store)', runs: 1,
        recovered: maxHealth < HEALTH_BOUND_MS && unanswered === 0 && kept ? 1 : 0, lost: unanswered, leaked: 0,
        recoverMs: Math.max(...results.map((x) => x.r.ms)),
        notes: `${summary}; store session ${kept ? 'kept' : `NOT kept (${sessionsBefore.join(',')} → ${sessionsAfter.join(',')}, ${lapses.length} lapse lines)`}`,
      });
      for (const { name, r } of results) {
        const count = STORMS.find((s) => s.name === name)?.count ?? 0;
        const endedCount = Object.values(r.statuses).reduce((a, b) => a + b, 0) + Object.values(r.errors).reduce((a, b) => a + b, 0);
        assert.equal(endedCount, count, `every ${name} read ended: ${summary}`);
        assert.ok((r.statuses['200'] ?? 0) > 0, `${name} reads answered: ${summary}`);
        assert.deepEqual(Object.keys(r.statuses).filter((st) => st !== '200'), [], `${name}: only 200 answers (no 401, no 5xx): ${summary}`);
      }
      assert.equal(unanswered, 0, summary);
      assert.ok(within >= 0.9 && maxHealth < HEALTH_MAX_MS, summary);
      assert.ok(kept, `store session kept: ${sessionsBefore.join(',')} → ${sessionsAfter.join(',')}; ${lapses.join('\n')}`);
      assert.ok(!log.includes(token.split('.')[2] as string), 'no log line holds the token');
      await sys.stopServer('storm-server');
      assert.equal((await server.exited).code, 0);
    } finally {
      await sys.stop();
    }
  });
});
