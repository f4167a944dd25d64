import assert from 'node:assert/strict';
import { existsSync, statSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { StoreError } from '../../../lib/errors.js';
import { waitFor } from '../../../lib/lifecycle.js';
import { openStore, storePath } from '../../../lib/store/open-store.js';
import { migrate, MIGRATIONS, SCHEMA_VERSION } from '../../../lib/store/sqlite/migrations.js';
import { SqliteStore } from '../../../lib/store/sqlite/sqlite-store.js';
import { sqliteSpoiler } from '../../contract/spoil.js';
import { storeContract } from '../../contract/store.contract.js';
import { nodeScript } from '../../support/node-command.js';
import { runningProcesses, startProcess, stopAllProcesses } from '../../support/processes.js';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const writerScript = 'test/fixtures/store-writer.ts';
const contenderScript = 'test/fixtures/lock-contender.ts';

const tempDir = (): Promise<string> => mkdtemp(path.join(os.tmpdir(), 'nodepool-store-'));

storeContract('sqlite', async (clock) => {
  const dir = await tempDir();
  const store = await SqliteStore.open(path.join(dir, 'nodepool.db'), { clock });
  return {
    store,
    spoil: sqliteSpoiler(store.file),
    another: () => SqliteStore.open(store.file, { clock }),
    async cleanup() {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
});

/** Resolves like `p`, or rejects once `ms` have passed. */
async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Reads one pragma through a separate, read-only connection. */
function pragmaOf(file: string, name: string): unknown {
  const db = new Database(file, { readonly: true });
  try {
    return db.pragma(name, { simple: true });
  } finally {
    db.close();
  }
}

void describe('SqliteStore', () => {
  let dir: string;
  let file: string;
  const open: SqliteStore[] = [];
  const openAt = async (f = file): Promise<SqliteStore> => {
    const s = await SqliteStore.open(f);
    open.push(s);
    return s;
  };

  beforeEach(async () => {
    dir = await tempDir();
    file = path.join(dir, 'nodepool.db');
  });
  afterEach(async () => {
    await stopAllProcesses();
    for (const s of open.splice(0)) await s.close();
    await rm(dir, { recursive: true, force: true });
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  void it('puts the database in WAL journal mode', async () => {
    await openAt();
    assert.equal(pragmaOf(file, 'journal_mode'), 'wal');
  });

  void it('records the schema version in user_version', async () => {
    await openAt();
    assert.ok(SCHEMA_VERSION >= 1);
    assert.equal(pragmaOf(file, 'user_version'), SCHEMA_VERSION);
  });

  void it('lets two stores on one file see each other\'s writes and share the id sequences', async () => {
    const server = await openAt();
    const cli = await openAt();
    const b1 = await server.createBuild({ diskimage: 'debian', formats: ['qcow2'] });
    assert.deepEqual(await cli.getBuild(b1.id), b1);
    const b2 = await cli.createBuild({ diskimage: 'debian', formats: ['qcow2'] });
    assert.equal(b2.id, 'debian-0000000002');
    await cli.updateBuild(b1.id, { state: 'deleting', reason: 'operator' }, { expectStates: ['building', 'ready'] });
    assert.equal((await server.getBuild(b1.id))?.state, 'deleting');
    await cli.setPause('debian', null, true);
    assert.equal((await server.listPauses()).length, 1);
  });

  void it('wakes a change listener within a poll when another store on the file writes', async () => {
    const server = await openAt();
    const cli = await openAt();
    let heard = 0;
    const off = server.onChange(() => { heard += 1; });
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(heard, 0, 'quiet while nobody writes');
    const t0 = performance.now();
    await cli.createRequest({ labels: ['small'], requestor: 'zuul' });
    await waitFor(() => heard > 0, { timeoutMs: 2000, what: 'the listener to hear of the other store\'s write', intervalMs: 5 });
    assert.ok(performance.now() - t0 < 1000);
    off();
    const after = heard;
    await cli.createRequest({ labels: ['small'], requestor: 'zuul' });
    await new Promise((resolve) => setTimeout(resolve, 150));
    assert.equal(heard, after, 'nothing after unsubscribing');
  });

  void it('does not fail with SQLITE_BUSY when another process writes at the same time', async () => {
    const count = 400;
    const store = await openAt();
    const child = startProcess('store-writer', process.execPath, [...nodeScript(writerScript), file, 'shared', String(count)],
      { cwd: repoRoot, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.child.stdout?.on('data', (d: Buffer) => { stdout += d.toString(); });
    child.child.stderr?.on('data', (d: Buffer) => { stderr += d.toString(); });
    await waitFor(() => stdout.includes('ready\n') || !child.alive(), { timeoutMs: 30_000, what: 'the store writer to open the store' });
    child.child.stdin?.end('go\n');
    const mine: string[] = [];
    const myUploads: string[] = [];
    for (let i = 0; i < count; i++) {
      const b = await store.createBuild({ diskimage: 'shared', formats: ['qcow2'] });
      mine.push(b.id);
      myUploads.push((await store.createUpload({ buildId: b.id, provider: 'parent', imageName: 'shared', externalName: null })).id);
    }
    const exit = await within(child.exited, 30_000, 'the store writer to exit');
    assert.equal(exit.code, 0, `store writer failed: ${stderr}`);
    const theirs = JSON.parse(stdout.slice(stdout.indexOf('ready\n') + 6)) as { builds: string[]; uploads: string[] };
    const allBuilds = [...mine, ...theirs.builds].sort();
    const allUploads = [...myUploads, ...theirs.uploads].sort();
    assert.deepEqual(allBuilds, Array.from({ length: 2 * count }, (_, i) => `shared-${String(i + 1).padStart(10, '0')}`));
    assert.deepEqual(allUploads, Array.from({ length: 2 * count }, (_, i) => String(i + 1).padStart(10, '0')));
    assert.equal((await store.listBuilds({ diskimage: 'shared' })).length, 2 * count);
    assert.equal((await store.listUploads({ provider: 'child' })).length, count);
  });

  void it('refuses in one store a lock that a session of another store on the same file holds', async () => {
    const server = await openAt();
    const cli = await openAt();
    const a = await server.openSession({ owner: 'nodepool-server', hostname: 'h', pid: 1, ttlMs: 60_000 });
    const b = await cli.openSession({ owner: 'nodepool', hostname: 'h', pid: 2, ttlMs: 60_000 });
    assert.equal(await server.tryLock('node:0000000001', a.id), true);
    assert.equal(await cli.tryLock('node:0000000001', b.id), false);
    assert.equal((await cli.getLock('node:0000000001'))?.sessionId, a.id);
    assert.equal(await cli.isSessionLive(a.id), true);
    await server.closeSession(a.id);
    assert.equal(await cli.tryLock('node:0000000001', b.id), true);
  });

  void it('gives each of 200 resources to exactly one of two processes locking them at the same time', async () => {
    const count = 200;
    const store = await openAt();
    const mine = await store.openSession({ owner: 'test', hostname: os.hostname(), pid: process.pid, ttlMs: 600_000 });
    const child = startProcess('lock-contender', process.execPath, [...nodeScript(contenderScript), file, String(count)],
      { cwd: repoRoot, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.child.stdout?.on('data', (d: Buffer) => { stdout += d.toString(); });
    child.child.stderr?.on('data', (d: Buffer) => { stderr += d.toString(); });
    await waitFor(() => stdout.includes('ready\n') || !child.alive(), { timeoutMs: 30_000, what: 'the lock contender to open its session' });
    // A start barrier, not a wait for a condition: both sides begin at startAt so they really contend.
    const startAt = Date.now() + 100;
    child.child.stdin?.end(`${startAt}\n`);
    await delay(startAt - Date.now());
    const won: string[] = [];
    for (let i = 0; i < count; i++) {
      if (await store.tryLock(`node:${i}`, mine.id)) won.push(`node:${i}`);
    }
    const exit = await within(child.exited, 30_000, 'the lock contender to exit');
    assert.equal(exit.code, 0, `lock contender failed: ${stderr}`);
    const theirs = JSON.parse(stdout.slice(stdout.indexOf('ready\n') + 6)) as { sessionId: string; won: string[] };
    assert.equal(won.length + theirs.won.length, count);
    const winner = new Map<string, string>();
    for (const r of won) winner.set(r, mine.id);
    for (const r of theirs.won) {
      assert.equal(winner.has(r), false, `${r} was won by both processes`);
      winner.set(r, theirs.sessionId);
    }
    const locks = await store.listLocks('node:');
    assert.equal(locks.length, count);
    for (const lock of locks) assert.equal(lock.sessionId, winner.get(lock.resource), `holder of ${lock.resource}`);
  });

  void it('migrates a version 1 database to the current schema, keeping its builds', async () => {
    const db = new Database(file);
    migrate(db, file, MIGRATIONS.slice(0, 1));
    db.prepare(`INSERT INTO builds (id, diskimage, state, state_time, created, formats, files)
                VALUES ('debian-0000000001', 'debian', 'ready', 1, 1, '["qcow2"]', '[]')`).run();
    db.close();
    const store = await openAt();
    assert.equal(pragmaOf(file, 'user_version'), SCHEMA_VERSION);
    assert.equal((await store.getBuild('debian-0000000001'))?.state, 'ready');
    assert.equal((await store.createNode({ state: 'building', provider: 'p', pool: 'main', labels: ['small'] })).id, '0000000001');
  });

  void it('migrates to version 3: in-use nodes a consumer holds no session for stay handed off (kept until released)', async () => {
    const db = new Database(file);
    migrate(db, file, MIGRATIONS.slice(0, 2));
    const insert = db.prepare(`INSERT INTO nodes (id, state, state_time, created, provider, pool, labels, connection_type, connection_port, host_keys, attributes, consumer_session)
                VALUES (?, ?, 1, 1, 'p', 'main', '["small"]', 'ssh', 22, '[]', '{}', ?)`);
    insert.run('0000000001', 'in-use', null);
    insert.run('0000000002', 'in-use', 'session-1');
    insert.run('0000000003', 'ready', null);
    db.close();
    const store = await openAt();
    assert.deepEqual((await store.listNodes()).map((n) => [n.id, n.handedOff]), [['0000000001', true], ['0000000002', false], ['0000000003', false]]);
  });

  void it('migrates to version 8: an upload written before it has launches 0 and no rollout decision, and counts from there', async () => {
    const db = new Database(file);
    migrate(db, file, MIGRATIONS.slice(0, 7));
    db.prepare(`INSERT INTO builds (id, diskimage, state, state_time, created, formats, files)
                VALUES ('debian-0000000001', 'debian', 'ready', 1, 1, '["qcow2"]', '[]')`).run();
    db.prepare(`INSERT INTO uploads (id, build_id, diskimage, provider, image_name, state, state_time, created)
                VALUES ('0000000001', 'debian-0000000001', 'debian', 'cloud-a', 'debian', 'ready', 1, 1)`).run();
    db.close();
    const store = await openAt();
    const u = await store.getUpload('0000000001');
    assert.deepEqual([u?.launches ?? 0, u?.launchFailures ?? 0, u?.rollout ?? null], [0, 0, null]);
    assert.equal((await store.recordLaunch('0000000001', 'failure'))?.launchFailures, 1);
    assert.deepEqual(await store.listPins(), []);
    assert.deepEqual(await store.listRevocations(), []);
  });

  void it('wakes its own change listeners when it pins, revokes or writes a rollout decision', async () => {
    const store = await openAt();
    const b = await store.createBuild({ diskimage: 'debian', formats: ['qcow2'] });
    const u = await store.createUpload({ buildId: b.id, provider: 'cloud-a', imageName: 'debian', externalName: null });
    let heard = 0;
    const off = store.onChange(() => { heard += 1; });
    const writes: Array<() => Promise<unknown>> = [
      () => store.setPin('debian', null, b.id), () => store.setRevocation('debian', b.id, true, 'bad'),
      () => store.updateUpload(u.id, { rollout: { state: 'promoted', time: Date.now(), reason: null } }),
    ];
    for (const write of writes) {
      const before = heard;
      await write();
      await waitFor(() => heard > before, { timeoutMs: 2000, what: 'the listener to hear of this store\'s own write', intervalMs: 5 });
    }
    off();
  });

  void it('keeps every record and sequence when the file is reopened', async () => {
    const first = await openAt();
    const b1 = await first.createBuild({ diskimage: 'debian', formats: ['qcow2'] });
    const b2 = await first.createBuild({ diskimage: 'debian', formats: ['raw'] });
    const u1 = await first.createUpload({ buildId: b1.id, provider: 'cloud-a', imageName: 'debian', externalName: null });
    const u2 = await first.createUpload({ buildId: b1.id, provider: 'cloud-b', imageName: 'debian', externalName: null });
    await first.deleteUpload(u2.id);
    await first.deleteBuild(b2.id);
    await first.requestBuild('debian');
    await first.setPause('debian', 'cloud-b', true, 'maintenance');
    await first.putStatus('heartbeat', { pid: 1 });
    const before = {
      builds: await first.listBuilds(), uploads: await first.listUploads(), requests: await first.listBuildRequests(),
      pauses: await first.listPauses(), status: await first.getStatus('heartbeat'),
    };
    await first.close();
    const again = await openAt();
    assert.deepEqual({
      builds: await again.listBuilds(), uploads: await again.listUploads(), requests: await again.listBuildRequests(),
      pauses: await again.listPauses(), status: await again.getStatus('heartbeat'),
    }, before);
    assert.deepEqual(before.builds.map((b) => b.id), [b1.id]);
    assert.deepEqual(before.uploads.map((u) => u.id), [u1.id]);
    assert.equal((await again.createBuild({ diskimage: 'debian', formats: [] })).id, 'debian-0000000003');
    assert.equal((await again.createUpload({ buildId: b1.id, provider: 'cloud-c', imageName: 'debian', externalName: null })).id, '0000000003');
  });

  void it('refuses a database from a newer schema version, naming the file and both versions', async () => {
    const db = new Database(file);
    db.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
    db.close();
    await assert.rejects(SqliteStore.open(file), (err: Error) => {
      assert.ok(err instanceof StoreError, String(err));
      assert.match(err.message, new RegExp(`${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} has state schema version ${SCHEMA_VERSION + 1}`));
      assert.match(err.message, new RegExp(`knows versions up to ${SCHEMA_VERSION}\\b`));
      return true;
    });
    assert.equal(pragmaOf(file, 'user_version'), SCHEMA_VERSION + 1);
  });

  void it('rolls back a failing migration as a whole', async () => {
    await (await openAt()).close();
    const db = new Database(file);
    try {
      const broken = [...MIGRATIONS, { version: SCHEMA_VERSION + 1, sql: 'CREATE TABLE extra (x); SELECT nonsense FROM nowhere;' }];
      assert.throws(() => migrate(db, file, broken), (err: Error) => err instanceof StoreError && err.message.includes(`version ${SCHEMA_VERSION + 1}`));
      assert.equal(db.pragma('user_version', { simple: true }), SCHEMA_VERSION);
      const extra = db.prepare<[], { n: number }>("SELECT count(*) AS n FROM sqlite_master WHERE name = 'extra'").get();
      assert.equal(extra?.n, 0);
    } finally {
      db.close();
    }
  });

  void it('refuses a file that is not a SQLite database with a StoreError naming it', async () => {
    await writeFile(file, 'this is not a database, just some text that is long enough to have a header\n'.repeat(20));
    await assert.rejects(SqliteStore.open(file), (err: Error) => err instanceof StoreError && err.message.includes(file));
  });
});

void describe('openStore', () => {
  let dir: string;
  beforeEach(async () => { dir = await tempDir(); });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  void it('creates a missing state dir without world access and opens <stateDir>/nodepool.db', async () => {
    const stateDir = path.join(dir, 'a', 'b', 'state');
    const store = await openStore({ stateDir, zookeeperServers: [] });
    try {
      const mode = statSync(stateDir).mode & 0o777;
      assert.equal(mode & 0o700, 0o700);
      assert.equal(mode & 0o027, 0, `state dir mode ${mode.toString(8)}`);
      assert.equal(storePath({ stateDir }), path.join(stateDir, 'nodepool.db'));
      await store.createBuild({ diskimage: 'debian', formats: [] });
      assert.ok(existsSync(storePath({ stateDir })));
    } finally {
      await store.close();
    }
  });
});
