/**
 * The ZooKeeper store's issue 25 records past the contract, on a real ZooKeeper: where they
 * live (`/nodepool/audit/<id>`, `image-intents/<diskimage>/upload-retries/<provider>`, a build's
 * `log_url` beside Nodepool's fields), pruning past AUDIT_KEEP (the `audit` counter moved on,
 * as 10,000 writes would), and corrupt entries and requests skipped and logged once.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import { waitFor } from '../../../lib/lifecycle.js';
import { AUDIT_KEEP, AUDIT_PRUNE_EVERY } from '../../../lib/store/audit.js';
import { ReadCounter, ZkClient } from '../../../lib/store/zookeeper/zk-client.js';
import { ZooKeeperStore } from '../../../lib/store/zookeeper/zookeeper-store.js';
import { auditEntry } from '../../contract/store-web.contract.js';
import { runningProcesses } from '../../support/processes.js';
import { startZooKeeper, type ZooKeeperHandle } from '../../support/zookeeper.js';
import { capturingLogger } from './log-capture.js';

describe('ZooKeeper audit trail, upload retries and build log URLs', () => {
  let zk: ZooKeeperHandle;
  let store: ZooKeeperStore;
  let raw: ZkClient;
  let logged: Array<Record<string, unknown>>;

  before(async () => {
    zk = await startZooKeeper();
  });
  after(async () => {
    await zk.stop();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });
  beforeEach(async () => {
    const { log, entries } = capturingLogger();
    logged = entries;
    store = await ZooKeeperStore.open({ servers: [{ host: zk.host, port: zk.port, chroot: `/audit-${randomUUID()}` }], log });
    raw = await ZkClient.connect({ hosts: zk.connectString, sessionTimeoutMs: 10_000, reads: new ReadCounter() });
  });
  afterEach(async () => {
    await raw.close();
    await store.close();
  });

  const json = async (p: string): Promise<Record<string, unknown>> => {
    const got = await raw.getData(p);
    assert.ok(got, `${p} exists`);
    return JSON.parse(got.data.toString('utf8')) as Record<string, unknown>;
  };
  const skipped = (): unknown[][] => logged.filter((l) => l.message === 'skipping a corrupt record').map((l) => [l.kind, l.id]);

  it('keeps audit entries under /nodepool/audit/<id> with time in seconds, beside Nodepool\'s tree', async () => {
    await store.recordAudit(auditEntry(1));
    const audit = `${store.layout.root}/audit`;
    assert.deepEqual(await raw.getChildren(audit), ['0000000001']);
    const j = await json(`${audit}/0000000001`);
    assert.equal(j.time, auditEntry(1).time / 1000);
    assert.equal(j.action, 'image-build');
    assert.deepEqual((await raw.getChildren(store.layout.root))?.sort(), ['audit', 'image-intents', 'images', 'launchers', 'locks', 'nodes', 'requests', 'requests-lock', 'sequences', 'sessions', 'status']);
  });

  it('drops the entries more than AUDIT_KEEP older than every AUDIT_PRUNE_EVERYth entry, and no others', async () => {
    for (let i = 1; i <= 3; i++) await store.recordAudit(auditEntry(i));
    const audit = `${store.layout.root}/audit`;
    for (const id of ['0000000100', '0000000101']) await raw.create(`${audit}/${id}`, Buffer.from(JSON.stringify({ ...auditEntry(Number(id)), time: 1 })));
    // As if 10,095 more entries had come and gone: the counter is past them.
    await raw.setData(store.layout.sequence('audit'), Buffer.from(JSON.stringify({ value: AUDIT_KEEP + AUDIT_PRUNE_EVERY - 2, recent: [] })));
    assert.equal((await store.recordAudit(auditEntry(4))).id, '0000010099');
    assert.equal((await raw.getChildren(audit))?.length, 6, 'not a pruning write');
    assert.equal((await store.recordAudit(auditEntry(5))).id, '0000010100');
    assert.deepEqual((await raw.getChildren(audit))?.sort(), ['0000000101', '0000010099', '0000010100']);
    assert.deepEqual((await store.listAudit()).map((e) => e.id), ['0000010100', '0000010099', '0000000101']);
  });

  it('skips a corrupt audit entry (logged once), filling the page from older ones, and goes on recording', async () => {
    for (let i = 1; i <= 4; i++) await store.recordAudit(auditEntry(i));
    const audit = `${store.layout.root}/audit`;
    await raw.setData(`${audit}/0000000003`, Buffer.from('{"action": "image-build", garbage'));
    await raw.setData(`${audit}/0000000002`, Buffer.from(JSON.stringify({ ...auditEntry(2), result: 'exploded' })));
    assert.deepEqual((await store.listAudit({ limit: 2 })).map((e) => e.id), ['0000000004', '0000000001']);
    assert.deepEqual((await store.listAudit()).map((e) => e.id), ['0000000004', '0000000001']);
    assert.deepEqual(skipped().sort(), [['audit', '0000000002'], ['audit', '0000000003']], 'each logged once');
    assert.equal((await store.recordAudit(auditEntry(5))).id, '0000000005');
    const corrupt = await store.listCorrupt({ kinds: ['audit'] });
    assert.deepEqual(corrupt.map((c) => [c.kind, c.id]), [['audit', '0000000002'], ['audit', '0000000003']]);
    assert.match(corrupt[1]?.reason ?? '', /JSON/);
    assert.deepEqual(await store.listCorrupt({ kinds: ['node'] }), []);
  });

  it('keeps upload retry requests at image-intents/<diskimage>/upload-retries/<provider>; a corrupt one is skipped (logged once) and replaced by a new request', async () => {
    const r = await store.requestUploadRetry('debian', 'cloud-a');
    await store.requestUploadRetry('debian', 'cloud-b');
    const p = store.layout.uploadRetry('debian', 'cloud-a');
    assert.equal(p, `${store.layout.root}/image-intents/debian/upload-retries/cloud-a`);
    assert.deepEqual(await json(p), { requested: r.requested / 1000 });
    await raw.setData(p, Buffer.from(JSON.stringify({ requested: 'soon' })));
    // Written past the store: its watched cache sees it soon.
    await waitFor(async () => (await store.listUploadRetries()).length === 1, { timeoutMs: 10_000, what: 'the spoiled request to be seen', intervalMs: 10 });
    assert.deepEqual((await store.listUploadRetries()).map((x) => x.provider), ['cloud-b']);
    assert.deepEqual((await store.listUploadRetries()).map((x) => x.provider), ['cloud-b']);
    assert.deepEqual(skipped(), [['upload-retry', 'debian/cloud-a']]);
    await store.requestUploadRetry('debian', 'cloud-a');
    assert.deepEqual((await store.listUploadRetries()).map((x) => x.provider), ['cloud-a', 'cloud-b']);
    assert.deepEqual(await store.listBuildRequests(), [], 'no build request appears');
  });

  it("writes a build's log URL as log_url beside Nodepool's fields, leaves them as they were, and removes it when cleared", async () => {
    const b = await store.createBuild({ diskimage: 'debian', formats: ['qcow2'] });
    await store.updateBuild(b.id, { state: 'ready', builderHostname: 'builder-a' });
    const path = store.layout.build('debian', b.id.slice(-10));
    const before = await json(path);
    assert.equal('log_url' in before, false);
    await store.updateBuild(b.id, { logUrl: 'http://builder-a:8005/build-logs/debian-0000000001' });
    const withUrl = await json(path);
    assert.equal(withUrl.log_url, 'http://builder-a:8005/build-logs/debian-0000000001');
    const { log_url: _url, ...rest } = withUrl;
    assert.deepEqual(rest, before, "Nodepool's fields unchanged");
    await store.updateBuild(b.id, { logUrl: null });
    assert.deepEqual(await json(path), before);
  });
});
