/**
 * The ZooKeeper store's rollout records (issue 24) as other programs see them, against a real
 * ZooKeeper: pins and revocations at their own paths beside Nodepool 11's tree, with the JSON
 * fields the issue names; an upload's rollout fields beside Nodepool's, a Nodepool 11 upload
 * without them read as 0 launches and no decision; garbage where a pin or revocation should be
 * reported and skipped (a revocation still revokes); builds, uploads and build deletion
 * unaffected by the new children; a write on one handle seen by another's lists and listeners.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import { StoreError } from '../../../lib/errors.js';
import { waitFor } from '../../../lib/lifecycle.js';
import { ReadCounter, ZkClient } from '../../../lib/store/zookeeper/zk-client.js';
import { ZooKeeperStore } from '../../../lib/store/zookeeper/zookeeper-store.js';
import { runningProcesses } from '../../support/processes.js';
import { startZooKeeper, type ZooKeeperHandle } from '../../support/zookeeper.js';

const T0 = 1_700_000_000_000;

let zk: ZooKeeperHandle;
let raw: ZkClient;

before(async () => {
  zk = await startZooKeeper();
  raw = await ZkClient.connect({ hosts: zk.connectString, sessionTimeoutMs: 10_000, reads: new ReadCounter() });
});

after(async () => {
  await raw.close();
  await zk.stop();
  assert.deepEqual(runningProcesses().map((p) => p.name), []);
});

/** The JSON of a znode, read straight from the server. */
async function rawJson(path: string): Promise<Record<string, unknown>> {
  const got = await raw.getData(path);
  assert.ok(got, `${path} exists`);
  return JSON.parse(got.data.toString('utf8')) as Record<string, unknown>;
}

void describe('ZooKeeperStore rollout records', () => {
  let chroot: string;
  let now: number;
  const stores: ZooKeeperStore[] = [];
  const open = async (): Promise<ZooKeeperStore> => {
    const s = await ZooKeeperStore.open({ servers: [{ host: '127.0.0.1', port: zk.port, chroot }], clock: () => now });
    stores.push(s);
    return s;
  };

  beforeEach(() => {
    chroot = `/rollout-${randomUUID()}`;
    now = T0;
  });
  afterEach(async () => {
    for (const s of stores.splice(0)) await s.close();
  });

  void it('writes pins and revocations at their own paths with build_id, since (seconds) and reason, and removes them', async () => {
    const store = await open();
    // Outside Nodepool's images, whose launchers would read <image>/<dir>/<key> as a build (issue 31).
    const image = `${chroot}/nodepool/image-intents/debian`;
    await store.setPin('debian', null, 'debian-0000000002', 'bad mirror');
    await store.setPin('debian', 'cloud-a', 'debian-0000000001');
    await store.setRevocation('debian', 'debian-0000000003', true, 'kernel panics');
    assert.deepEqual(await rawJson(`${image}/pin`), { build_id: 'debian-0000000002', since: T0 / 1000, reason: 'bad mirror' });
    assert.deepEqual(await rawJson(`${image}/provider-pins/cloud-a`), { build_id: 'debian-0000000001', since: T0 / 1000, reason: null });
    assert.deepEqual(await rawJson(`${image}/revocations/debian-0000000003`), { since: T0 / 1000, reason: 'kernel panics' });
    await store.setPin('debian', null, null);
    await store.setRevocation('debian', 'debian-0000000003', false);
    assert.equal(await raw.exists(`${image}/pin`), undefined);
    assert.equal(await raw.exists(`${image}/revocations/debian-0000000003`), undefined);
    assert.ok(await raw.exists(`${image}/provider-pins/cloud-a`));
  });

  void it('refuses a provider or build id that is not one path segment, writing nothing', async () => {
    const store = await open();
    await assert.rejects(store.setPin('debian', 'a/b', 'debian-0000000001'), StoreError);
    await assert.rejects(store.setPin('debian', '..', 'debian-0000000001'), StoreError);
    await assert.rejects(store.setRevocation('debian', 'debian-0000000001/../x', true), StoreError);
    assert.deepEqual(await store.listPins(), []);
    assert.deepEqual(await store.listRevocations(), []);
  });

  void it('keeps an upload\'s rollout fields beside Nodepool\'s, and reads a Nodepool 11 upload without them as 0 launches and no decision', async () => {
    const store = await open();
    const b = await store.createBuild({ diskimage: 'debian', formats: ['qcow2'] });
    const u = await store.createUpload({ buildId: b.id, provider: 'cloud-a', imageName: 'debian', externalName: null });
    const path = `${chroot}/nodepool/images/debian/builds/${b.id.slice(-10)}/providers/cloud-a/images/${u.id}`;
    await store.recordLaunch(u.id, 'success');
    await store.recordLaunch(u.id, 'failure');
    await store.updateUpload(u.id, { state: 'ready', rollout: { state: 'revoked', time: T0 + 1500, reason: '1 failed launch' } });
    const j = await rawJson(path);
    assert.deepEqual([j.state, j.launches, j.launch_failures, j.rollout_state, j.rollout_time, j.rollout_reason],
      ['ready', 1, 1, 'revoked', (T0 + 1500) / 1000, '1 failed launch']);
    // What Nodepool 11 writes: its fields only.
    const nodepool11 = { state: 'ready', state_time: T0 / 1000, external_id: 'glance-1', external_name: 'debian-1700000000', format: 'qcow2', username: 'zuul' };
    await raw.setData(path, Buffer.from(JSON.stringify(nodepool11)));
    await waitFor(async () => (await store.listUploads())[0]?.externalId === 'glance-1', { timeoutMs: 10_000, what: 'the store to see the Nodepool 11 upload', intervalMs: 10 });
    for (const got of [(await store.listUploads())[0], await store.getUpload(u.id)]) {
      assert.deepEqual([got?.state, got?.launches ?? 0, got?.launchFailures ?? 0, got?.rollout ?? null], ['ready', 0, 0, null]);
      assert.equal(got && 'launches' in got, false, 'absent, not written as 0');
    }
    assert.equal((await store.recordLaunch(u.id, 'success'))?.launches, 1);
    const counted = await rawJson(path);
    assert.deepEqual([counted.launches, counted.external_id, counted.username], [1, 'glance-1', 'zuul'], 'Nodepool\'s fields are kept as they were');
  });

  void it('reports garbage pins and revocations as corrupt: the pin is skipped, the revocation still revokes', async () => {
    const store = await open();
    const image = `${chroot}/nodepool/image-intents/debian`;
    await store.setPin('debian', 'cloud-a', 'debian-0000000001');
    await raw.mkdirp(`${image}/revocations`);
    await raw.create(`${image}/revocations/debian-0000000004`, Buffer.from('{"since": garbage'));
    await raw.setData(`${image}/provider-pins/cloud-a`, Buffer.from('not json'));
    await raw.create(`${image}/pin`, Buffer.from(JSON.stringify({ since: T0 / 1000 })));
    await waitFor(async () => (await store.listCorrupt()).length === 3, { timeoutMs: 10_000, what: 'three corrupt records', intervalMs: 10 });
    assert.deepEqual((await store.listCorrupt()).map((c) => [c.kind, c.id]), [['pin', 'debian'], ['pin', 'debian/cloud-a'], ['revocation', 'debian-0000000004']]);
    assert.deepEqual(await store.listPins(), []);
    const [rev] = await store.listRevocations();
    assert.equal(rev?.buildId, 'debian-0000000004');
    assert.match(rev?.reason ?? '', /^corrupt revocation record \(.*JSON/);
    assert.ok((rev?.since ?? 0) > 0, 'since: the znode\'s creation');
    await store.setRevocation('debian', 'debian-0000000004', false);
    await store.setPin('debian', 'cloud-a', 'debian-0000000002');
    await store.setPin('debian', null, null);
    assert.deepEqual(await store.listCorrupt(), []);
    assert.deepEqual((await store.listPins()).map((p) => p.buildId), ['debian-0000000002']);
  });

  void it('leaves builds, uploads and build deletion as they were beside pins and revocations', async () => {
    const store = await open();
    const b = await store.createBuild({ diskimage: 'debian', formats: ['qcow2'] });
    const u = await store.createUpload({ buildId: b.id, provider: 'cloud-a', imageName: 'debian', externalName: null });
    await store.setPin('debian', null, b.id);
    await store.setPin('debian', 'cloud-a', b.id);
    await store.setRevocation('debian', b.id, true, 'bad');
    assert.deepEqual((await store.listBuilds()).map((x) => x.id), [b.id]);
    assert.deepEqual((await store.listUploads()).map((x) => x.id), [u.id]);
    assert.deepEqual(await store.listCorrupt(), []);
    assert.equal(await store.deleteUpload(u.id), true);
    assert.equal(await store.deleteBuild(b.id), true);
    assert.deepEqual(await store.listBuilds(), []);
    assert.deepEqual((await store.listRevocations()).map((r) => r.buildId), [b.id], 'a revocation outlives its build (the id is never reused)');
    assert.equal((await store.createBuild({ diskimage: 'debian', formats: ['qcow2'] })).id, 'debian-0000000002');
  });

  void it('shows a pin and a revocation written on one handle to another handle\'s lists and wakes its listeners', async () => {
    const writer = await open();
    const reader = await open();
    let heard = 0;
    const off = reader.onChange(() => { heard += 1; });
    await writer.setPin('debian', null, 'debian-0000000001');
    await waitFor(async () => (await reader.listPins()).length === 1 && heard > 0, { timeoutMs: 10_000, what: 'the other handle to see the pin', intervalMs: 10 });
    const before = heard;
    await writer.setRevocation('debian', 'debian-0000000001', true);
    await waitFor(async () => (await reader.listRevocations()).length === 1 && heard > before, { timeoutMs: 10_000, what: 'the other handle to see the revocation', intervalMs: 10 });
    off();
  });
});
