/**
 * Fault suite: a flood of refused writes against the web write API (issue 31 §3), on a real
 * SQLite store and a real ZooKeeper, through a real WebServer on 127.0.0.1. An operator makes a
 * few genuine writes; then a page on another origin sends a no-cors style POST (`Origin:
 * http://evil.example`, `Content-Type: text/plain`), and a client with no token sends 10,400
 * (SQLite) or 12,000 (ZooKeeper, once with `webapp.auth` and once without) POSTs as fast as 32
 * connections carry them; or an account of the identity provider whose verified token names no
 * nodepool role sends 3,000. Wanted: every genuine entry is still in the audit trail and the
 * flood wrote none, it cost a bounded number of store writes (counted: every row SQLite
 * writes, by triggers on every table; every ZooKeeper write transaction, by the server's
 * zxid), most of it was answered 429, and it is counted per source (or user) and minute, the
 * total matching the flood.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { SignJWT } from 'jose';
import { storePath } from '../../lib/store/open-store.js';
import type { RefusalAggregate } from '../../lib/store/audit.js';
import { REFUSAL_BURST } from '../../server/web/api/refusal-ledger.js';
import { LOCAL, startApiEnv, type ApiEnv, type ApiEnvOptions } from '../integration/web/api/api-env.js';
import { recordFault } from '../support/fault-report.js';
import { runningProcesses } from '../support/processes.js';
import { fourLetter, startZooKeeper, type ZooKeeperHandle } from '../support/zookeeper.js';

const CONNECTIONS = 32;

/** Counts every row SQLite writes in the store's file from now on (triggers on every table). */
function sqliteWriteCounter(file: string): () => number {
  const db = new Database(file);
  try {
    db.exec('CREATE TABLE flood_test_writes (n INTEGER NOT NULL); INSERT INTO flood_test_writes VALUES (0);');
    const tables = db.prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> 'flood_test_writes'").all();
    for (const { name } of tables) {
      for (const op of ['INSERT', 'UPDATE', 'DELETE']) {
        db.exec(`CREATE TRIGGER "flood_count_${name}_${op}" AFTER ${op} ON "${name}" BEGIN UPDATE flood_test_writes SET n = n + 1; END`);
      }
    }
  } finally {
    db.close();
  }
  return () => {
    const r = new Database(file, { readonly: true });
    try {
      return (r.prepare('SELECT n FROM flood_test_writes').get() as { n: number }).n;
    } finally {
      r.close();
    }
  };
}

/** ZooKeeper's last transaction id: every write (a create, a set, a delete, a multi) takes one. */
async function zxid(port: number): Promise<number> {
  const srvr = await fourLetter(port, 'srvr');
  const m = /Zxid: (0x[0-9a-f]+)/i.exec(srvr);
  if (!m) throw new Error(`no Zxid in srvr: ${srvr}`);
  return Number(BigInt(m[1] as string) & 0xffffffffn);
}

/** `n` POSTs with `headers` over {@link CONNECTIONS} kept-alive connections; the statuses answered and how long it took. */
async function flood(port: number, n: number, headers: Record<string, string>): Promise<{ statuses: Record<string, number>; ms: number }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  const statuses: Record<string, number> = {};
  const paths = ['/api/image/deb/build', '/api/image/deb/pause', '/api/node/0000000001/hold'];
  let sent = 0;
  const started = Date.now();
  const one = (p: string): Promise<number> => new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: p, agent, headers: { ...headers, 'Content-Length': '2' }, timeout: 30_000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('timeout', () => req.destroy(new Error(`POST ${p}: no answer in 30 s`)));
    req.on('error', reject);
    req.end('{}');
  });
  try {
    await Promise.all(Array.from({ length: CONNECTIONS }, async () => {
      while (sent < n) {
        const p = paths[sent % paths.length] as string;
        sent += 1;
        const s = String(await one(p));
        statuses[s] = (statuses[s] ?? 0) + 1;
      }
    }));
  } finally {
    agent.destroy();
  }
  return { statuses, ms: Date.now() - started };
}

/** What one flood showed. */
interface FloodFigures {
  flood: number;
  genuine: number;
  kept: number;
  writes: number;
  /** Store writes of the flood and of the flush of its counts after it. */
  withFlush: number;
  limited: number;
  counted: number;
  ms: number;
  crossOriginAudited: number;
  /** Entries the flood itself added to the trail. */
  floodAudited: number;
}

/** A verified token of `user` whose role claim names no nodepool role: what any account at the identity provider can get. */
async function rolelessToken(user: string): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ sub: user, nodepool: { role: 'employee' } }).setProtectedHeader({ alg: 'HS256' })
    .setIssuer(LOCAL.issuer).setAudience(LOCAL.audience).setIssuedAt(now).setExpirationTime(now + 3600)
    .sign(new TextEncoder().encode(LOCAL.secret));
}

/**
 * Genuine writes (when `withAuth`), a no-cors style cross-origin POST, then the flood of
 * `size` POSTs, token-less or with `token` (counted under `user`); `writes` reads the store's
 * write count.
 */
async function runFlood(env: ApiEnv, size: number, withAuth: boolean, writes: () => Promise<number>, by: { token: string; user: string } | undefined = undefined): Promise<FloodFigures> {
  const genuineIds: string[] = [];
  if (withAuth) {
    const op = await env.token('operator', 'alice');
    for (let i = 0; i < 5; i += 1) {
      const res = await env.call('POST', `/api/image/deb/${i % 2 === 0 ? 'pause' : 'unpause'}`, { token: op, body: { reason: `genuine ${i}` } });
      assert.equal(res.status, 200, JSON.stringify(res.json));
    }
    genuineIds.push(...(await env.store.listAudit({ limit: 1000 })).map((e) => e.id));
    assert.equal(genuineIds.length, 5, 'five writes, one entry each (its attempt completed with its outcome)');
  }
  // A page on another origin: fetch(url, { mode: 'no-cors', method: 'POST', body: '...' }) sends text/plain and its Origin.
  const evil = await env.call('POST', '/api/image/deb/build', { rawBody: '{}', contentType: 'text/plain;charset=UTF-8', headers: { Origin: 'http://evil.example', 'Sec-Fetch-Site': 'cross-site', 'Sec-Fetch-Mode': 'no-cors' } });
  assert.equal(evil.status, 403, JSON.stringify(evil.json));
  assert.match(String(evil.json.message), /another site|another origin/);
  const crossOriginAudited = (await env.store.listAudit({ limit: 1000 })).length - genuineIds.length;

  const before = await writes();
  const trailBefore = (await env.store.listAudit({ limit: 1000 })).length;
  const f = await flood(env.web.port, size, { 'Content-Type': 'application/json', ...(by ? { Authorization: `Bearer ${by.token}` } : {}) });
  const during = (await writes()) - before;
  const trail = await env.store.listAudit({ limit: 1000 });
  const kept = genuineIds.filter((id) => trail.some((e) => e.id === id)).length;
  await env.ledger.flush(true);
  const withFlush = (await writes()) - before;
  const aggregates: RefusalAggregate[] = await env.ledger.recent(100);
  const counted = aggregates.filter((a) => (by ? a.user === by.user : a.source === '127.0.0.1')).reduce((n, a) => n + a.count, 0);
  return {
    flood: size, genuine: genuineIds.length, kept, writes: during, withFlush, limited: f.statuses['429'] ?? 0, counted, ms: f.ms, crossOriginAudited,
    floodAudited: trail.length - trailBefore,
  };
}

function check(f: FloodFigures, expectAnswered: number): void {
  assert.equal(f.kept, f.genuine, `every genuine entry kept: ${JSON.stringify(f)}`);
  assert.equal(f.crossOriginAudited, 0, 'the cross-origin POST is no entry of its own');
  assert.equal(f.floodAudited, 0, `the flood wrote no entry: ${JSON.stringify(f)}`);
  // One flush a minute the flood spans (ended minutes only; the last is written by the flush after it).
  assert.ok(f.writes <= 2 * (Math.ceil(f.ms / 60_000) + 1), `store writes during the flood: ${JSON.stringify(f)}`);
  assert.ok(f.withFlush <= f.writes + 2, `store writes with the flush of the counts: ${JSON.stringify(f)}`);
  assert.ok(f.limited >= f.flood - REFUSAL_BURST - Math.ceil(f.ms / 1000) - 1, `most of the flood answered 429: ${JSON.stringify(f)}`);
  assert.equal(f.counted, expectAnswered, `every refused POST counted: ${JSON.stringify(f)}`);
}

function row(scenario: string, f: FloodFigures, what = 'token-less POSTs'): void {
  recordFault({
    scenario, runs: 1, recovered: f.kept === f.genuine && f.floodAudited === 0 ? 1 : 0, lost: f.genuine - f.kept, leaked: 0, recoverMs: null,
    notes: `${f.flood} ${what} in ${(f.ms / 1000).toFixed(1)} s (${f.limited} answered 429); genuine entries kept ${f.kept}/${f.genuine}, entries the flood wrote ${f.floodAudited}; `
      + `store writes during the flood ${f.writes}, with the flush of its counts ${f.withFlush}; refusals counted ${f.counted} in per-minute aggregates; cross-origin no-cors POST refused, entries ${f.crossOriginAudited}`,
  });
}

describe('a flood of refused writes on SQLite', () => {
  it('keeps every genuine audit entry, costs a bounded number of store writes and counts the refusals per source', async () => {
    const env = await startApiEnv();
    try {
      const count = sqliteWriteCounter(storePath(env.config));
      const f = await runFlood(env, 10_400, true, () => Promise.resolve(count()));
      row('10,400 token-less POSTs to the write API (SQLite)', f);
      check(f, 10_400 + 1);
    } finally {
      await env.close();
    }
  });
});

describe('a flood of refusals of a verified token with no nodepool role on SQLite', () => {
  it('writes no audit entry for them, keeps every genuine one and counts them under the user', async () => {
    const env = await startApiEnv();
    try {
      const count = sqliteWriteCounter(storePath(env.config));
      const f = await runFlood(env, 3000, true, () => Promise.resolve(count()), { token: await rolelessToken('mallory'), user: 'mallory' });
      row('3,000 POSTs of a verified token with no nodepool role (SQLite)', f, 'role-less verified POSTs');
      check(f, 3000);
    } finally {
      await env.close();
    }
  });
});

describe('a flood of refused writes on ZooKeeper', () => {
  let zk: ZooKeeperHandle | undefined;
  before(async () => {
    zk = await startZooKeeper();
  });
  after(async () => {
    await zk?.stop();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });
  const on = (extra: ApiEnvOptions): ApiEnvOptions => {
    if (!zk) throw new Error('ZooKeeper did not start');
    return { zookeeper: { host: zk.host, port: zk.port }, ...extra };
  };

  it('a verified token with no nodepool role: no audit entry for its refusals, a bounded number of znode writes', async () => {
    const env = await startApiEnv(on({}));
    try {
      const port = (zk as ZooKeeperHandle).port;
      const f = await runFlood(env, 3000, true, () => zxid(port), { token: await rolelessToken('mallory'), user: 'mallory' });
      row('3,000 POSTs of a verified token with no nodepool role (ZooKeeper)', f, 'role-less verified POSTs');
      check(f, 3000);
    } finally {
      await env.close();
    }
  });

  for (const withAuth of [true, false]) {
    it(`${withAuth ? 'with' : 'without'} webapp.auth: keeps the audit trail and costs a bounded number of znode writes`, async () => {
      const env = await startApiEnv(on(withAuth ? {} : { noAuth: true }));
      try {
        const port = (zk as ZooKeeperHandle).port;
        const f = await runFlood(env, 12_000, withAuth, () => zxid(port));
        row(`12,000 anonymous POSTs to the write API (ZooKeeper, ${withAuth ? 'with' : 'without'} webapp.auth)`, f);
        check(f, 12_000 + 1);
      } finally {
        await env.close();
      }
    });
  }
});
