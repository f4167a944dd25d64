/**
 * Fault suite: an API read storm. 2,000 reads at once, from three processes of their own (700
 * `GET /api/audit` and 700 `GET /api/image-list` with a read token, 600 unauthenticated
 * `GET /api/node-list`), against a web server with the write API on a real ZooKeeper store,
 * while this process polls `/health/ready` on new connections. Wanted: health answers within a
 * second (nine probes in ten; none past 5 s, as the metrics storm allows on 2 shared cores),
 * the store session stays the same and never lapses, every read ends (answered, or refused at
 * the connection bound), none is refused for its token and none fails.
 *
 * The storm clients are test/support/scrape-storm.ts; a client with a token runs this file as
 * `--storm-child` (scrapeStorm with the Authorization header added to its requests).
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { SessionKeeper } from '../../lib/client/session-keeper.js';
import { waitFor } from '../../lib/lifecycle.js';
import { createRootLogger } from '../../lib/log.js';
import { seed, startApiEnv } from '../integration/web/api/api-env.js';
import { recordFault } from '../support/fault-report.js';
import { runningProcesses, startProcess } from '../support/processes.js';
import { scrapeStorm, type StormResult } from '../support/scrape-storm.js';
import { startZooKeeper, type ZooKeeperHandle } from '../support/zookeeper.js';

const SELF = fileURLToPath(import.meta.url);
const CHILD_FLAG = '--storm-child';

if (process.argv[2] === CHILD_FLAG) {
  // A storm client with a token: scrape-storm's requests, each with the Authorization header.
  const [port, urlPath, count] = process.argv.slice(3);
  const authorization = `Bearer ${process.env.STORM_TOKEN ?? ''}`;
  const get = http.get.bind(http) as (o: http.RequestOptions, cb: (res: http.IncomingMessage) => void) => http.ClientRequest;
  (http as { get: typeof get }).get = (o, cb) => get({ ...o, headers: { ...o.headers, Authorization: authorization } }, cb);
  const result = await scrapeStorm(Number(port), urlPath as string, Number(count));
  process.stdout.write(`${JSON.stringify(result)}\n`);
} else {
  runTests();
}

function runTests(): void {
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

    it('the web server keeps answering /health/ready within a second and keeps its store session', async () => {
      const lines: string[] = [];
      const log = createRootLogger({ level: 'info', format: 'json', stream: new Writable({ write(c, _e, cb) { lines.push(String(c)); cb(); } }) });
      const env = await startApiEnv({ zookeeper: { host: zk.host, port: zk.port }, log, cacheMs: 1000 });
      const keeper = await SessionKeeper.open(env.store, { owner: 'api-storm-server', ttlMs: 10_000, log });
      try {
        await seed(env.store);
        for (let i = 0; i < 100; i += 1) await env.store.createRequest({ labels: ['small'], requestor: 'storm-test' });
        const op = await env.token('operator', 'storm-writer');
        for (let i = 0; i < 60; i += 1) await env.call('POST', '/api/image/deb/pause', { token: op, body: { reason: `r${i}` } });
        const sessionBefore = keeper.session.id;
        const token = await env.token('read', 'storm-reader');
        const port = env.web.port;

        const procs = STORMS.map((s) => {
          const logFile = path.join(env.dir, `storm-${s.name}.out`);
          const args = s.token
            ? ['--import', 'tsx', SELF, CHILD_FLAG, String(port), s.path, String(s.count)]
            : ['--import', 'tsx', path.join(ROOT, 'test/support/scrape-storm.ts'), String(port), s.path, String(s.count)];
          return { s, logFile, proc: startProcess(`storm-${s.name}`, process.execPath, args, { cwd: ROOT, logFile, env: { ...process.env, STORM_TOKEN: s.token ? token : '' } }) };
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
        const sessions = (await env.store.listSessions()).filter((x) => x.owner === 'api-storm-server').map((x) => x.id);
        const lapses = lines.filter((l) => /session (lapsed|lost|expired)|lapse/i.test(l));
        const kept = keeper.session.id === sessionBefore && sessions.length === 1 && sessions[0] === sessionBefore && lapses.length === 0;
        const summary = `${results.map(({ name, r }) => `${name} ${r.ms} ms ${JSON.stringify(r.statuses)} refused ${JSON.stringify(r.errors)}`).join('; ')}; ` +
          `/health/ready max ${maxHealth} ms, ${Math.round(within * 100)} % under ${HEALTH_BOUND_MS} ms over ${health.length} polls, ${unanswered} unanswered`;
        recordFault({
          scenario: '2,000 concurrent API reads (audit and image-list with a token, node-list without; ZooKeeper store)', runs: 1,
          recovered: maxHealth < HEALTH_BOUND_MS && unanswered === 0 && kept ? 1 : 0, lost: unanswered, leaked: 0,
          recoverMs: Math.max(...results.map((x) => x.r.ms)),
          notes: `${summary}; store session ${kept ? 'kept' : `NOT kept (${lapses.length} lapse lines)`}`,
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
        assert.ok(kept, `store session kept: ${sessionBefore} → ${sessions.join(',')}; ${lapses.join('\n')}`);
        assert.ok(lines.every((l) => !l.includes(token.split('.')[2] as string)), 'no log line holds the token');
      } finally {
        await keeper.close();
        await env.close();
      }
    });
  });
}
