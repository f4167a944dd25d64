/**
 * The SQLite store's audit trail past the contract: pruning past AUDIT_KEEP (the `audit`
 * sequence moved on in the file, as 10,000 writes would), one full-size run, and corrupt
 * audit entries and upload retry requests skipped, logged once, without stopping a list.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { AUDIT_KEEP, AUDIT_PRUNE_EVERY } from '../../../lib/store/audit.js';
import { migrate, MIGRATIONS, SCHEMA_VERSION } from '../../../lib/store/sqlite/migrations.js';
import { SqliteStore } from '../../../lib/store/sqlite/sqlite-store.js';
import { auditEntry } from '../../contract/store-web.contract.js';
import { capturingLogger } from './log-capture.js';

describe('SQLite audit trail and upload retries', () => {
  let dir: string;
  let file: string;
  let store: SqliteStore;
  let logged: Array<Record<string, unknown>>;
  let raw: Database.Database;

  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-audit-'));
    file = path.join(dir, 'nodepool.db');
    const { log, entries } = capturingLogger();
    logged = entries;
    store = await SqliteStore.open(file, { log });
    raw = new Database(file, { timeout: 5000 });
  });

  afterEach(async () => {
    raw.close();
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  const count = (): number => (raw.prepare('SELECT count(*) AS n FROM audit').get() as { n: number }).n;
  const plant = (id: string): void => {
    const e = auditEntry(Number(id));
    raw.prepare(`INSERT INTO audit (id, time, user, role, authenticator, action, target, method, path, status, result, message, remote)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`).run(id, e.time, e.user, e.role, e.authenticator, e.action, e.target, e.method, e.path, e.status, e.result, e.message, e.remote);
  };

  it('drops the entries more than AUDIT_KEEP older than every AUDIT_PRUNE_EVERYth entry, and no others', async () => {
    for (let i = 1; i <= 3; i++) await store.recordAudit(auditEntry(i));
    plant('0000000100');
    plant('0000000101');
    // As if 10,095 more entries had come and gone: the sequence is past them.
    raw.prepare("UPDATE sequences SET value = ? WHERE name = 'audit'").run(AUDIT_KEEP + AUDIT_PRUNE_EVERY - 2);
    assert.equal((await store.recordAudit(auditEntry(4))).id, '0000010099');
    assert.equal(count(), 6, 'not a pruning write');
    assert.equal((await store.recordAudit(auditEntry(5))).id, '0000010100');
    assert.deepEqual((await store.listAudit()).map((e) => e.id), ['0000010100', '0000010099', '0000000101']);
  });

  it('keeps exactly the newest AUDIT_KEEP after AUDIT_KEEP + AUDIT_PRUNE_EVERY real writes', async () => {
    const total = AUDIT_KEEP + AUDIT_PRUNE_EVERY;
    for (let i = 1; i <= total; i++) await store.recordAudit(auditEntry(i));
    assert.equal(count(), AUDIT_KEEP);
    const oldest = raw.prepare('SELECT min(id) AS id FROM audit').get() as { id: string };
    assert.equal(oldest.id, String(total - AUDIT_KEEP + 1).padStart(10, '0'));
    assert.equal((await store.listAudit({ limit: 1 }))[0]?.id, String(total).padStart(10, '0'));
  });

  it('skips a corrupt audit entry (logged once), filling the page from older ones, and goes on recording', async () => {
    for (let i = 1; i <= 4; i++) await store.recordAudit(auditEntry(i));
    raw.prepare("UPDATE audit SET result = 'exploded' WHERE id = '0000000003'").run();
    raw.prepare("UPDATE audit SET time = 'never' WHERE id = '0000000002'").run();
    assert.deepEqual((await store.listAudit({ limit: 2 })).map((e) => e.id), ['0000000004', '0000000001']);
    assert.deepEqual((await store.listAudit()).map((e) => e.id), ['0000000004', '0000000001']);
    const reports = logged.filter((l) => l.message === 'skipping a corrupt record');
    assert.deepEqual(reports.map((l) => [l.kind, l.id]).sort(), [['audit', '0000000002'], ['audit', '0000000003']], 'each logged once');
    assert.match(String(reports.find((l) => l.id === '0000000003')?.reason), /result is "exploded"/);
    assert.equal((await store.recordAudit(auditEntry(5))).id, '0000000005');
    assert.deepEqual((await store.listCorrupt()).map((c) => [c.kind, c.id]), [['audit', '0000000002'], ['audit', '0000000003']], 'named when not filtered out');
    assert.deepEqual(await store.listCorrupt({ kinds: ['node', 'build'] }), [], 'not read for kinds without audit');
  });

  it('skips a corrupt upload retry request (logged once); a new request replaces it', async () => {
    await store.requestUploadRetry('debian', 'cloud-a');
    await store.requestUploadRetry('debian', 'cloud-b');
    raw.prepare("UPDATE upload_retries SET requested = 'soon' WHERE provider = 'cloud-a'").run();
    assert.deepEqual((await store.listUploadRetries()).map((r) => r.provider), ['cloud-b']);
    assert.deepEqual((await store.listUploadRetries()).map((r) => r.provider), ['cloud-b']);
    assert.deepEqual(logged.filter((l) => l.message === 'skipping a corrupt record').map((l) => [l.kind, l.id]), [['upload-retry', 'debian/cloud-a']]);
    await store.requestUploadRetry('debian', 'cloud-a');
    assert.deepEqual((await store.listUploadRetries()).map((r) => r.provider), ['cloud-a', 'cloud-b']);
  });

  it('migrates a schema 8 file to 9: its builds stay, without a log URL, and the new tables work', async () => {
    const old = path.join(dir, 'old.db');
    const db = new Database(old);
    migrate(db, old, MIGRATIONS.filter((m) => m.version <= 8));
    db.prepare(`INSERT INTO builds (id, diskimage, state, state_time, created, formats, files) VALUES ('debian-0000000001', 'debian', 'ready', 1, 1, '["qcow2"]', '[]')`).run();
    db.close();
    const migrated = await SqliteStore.open(old);
    try {
      const b = await migrated.getBuild('debian-0000000001');
      assert.equal(b?.state, 'ready');
      assert.equal(b && 'logUrl' in b, false);
      assert.equal((await migrated.updateBuild('debian-0000000001', { logUrl: 'http://b:8005/build-logs/debian-0000000001' }))?.logUrl, 'http://b:8005/build-logs/debian-0000000001');
      assert.equal((await migrated.recordAudit(auditEntry(1))).id, '0000000001');
      assert.equal((await migrated.requestUploadRetry('debian', 'cloud-a')).provider, 'cloud-a');
    } finally {
      await migrated.close();
    }
    const check = new Database(old, { readonly: true });
    assert.equal(check.pragma('user_version', { simple: true }), SCHEMA_VERSION);
    check.close();
    assert.ok(SCHEMA_VERSION >= 9, `schema ${SCHEMA_VERSION}`);
  });
});
