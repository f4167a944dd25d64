/**
 * The image data contract on ZooKeeper (Debian's 3.8, started once for this file; a fresh
 * chroot per store), and what only ZooKeeper shows: the imported tree is the one the store
 * writes itself, an import spread over many transactions is removed again when one fails, a
 * file exported from SQLite imports here, and the time both take for 200 builds and 4,000
 * uploads.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import { hasImageData, type ImageData } from '../../../lib/store/image-data.js';
import { SqliteStore } from '../../../lib/store/sqlite/sqlite-store.js';
import type { ZkImageDataOptions } from '../../../lib/store/zookeeper/image-data.js';
import { ZooKeeperStore } from '../../../lib/store/zookeeper/zookeeper-store.js';
import { ReadCounter, ZkClient } from '../../../lib/store/zookeeper/zk-client.js';
import type { Store } from '../../../lib/store/store.js';
import { imageDataContract } from '../../contract/image-data.contract.js';
import { storeError } from '../../contract/store-helpers.js';
import { runningProcesses } from '../../support/processes.js';
import { startZooKeeper, type ZooKeeperHandle } from '../../support/zookeeper.js';

let zk: ZooKeeperHandle;

before(async () => {
  zk = await startZooKeeper();
});

after(async () => {
  await zk.stop();
  assert.deepEqual(runningProcesses().map((p) => p.name), []);
});

const openZk = (clock?: () => number, chroot = `/image-data-${randomUUID()}`): Promise<ZooKeeperStore> =>
  ZooKeeperStore.open({ servers: [{ host: '127.0.0.1', port: zk.port, chroot }], ...(clock ? { clock } : {}) });

imageDataContract('zookeeper', async (clock) => {
  const store = await openZk(clock);
  return { store, cleanup: () => store.close() };
});

/** `builds` builds over four diskimages, each with `uploadsPerBuild` uploads over several providers, all ready. */
async function fill(store: Store, builds: number, uploadsPerBuild: number): Promise<void> {
  for (let i = 0; i < builds; i++) {
    const b = await store.createBuild({ diskimage: `image-${i % 4}`, formats: ['qcow2', 'raw'] });
    await store.updateBuild(b.id, { state: 'ready', builderHostname: 'builder-1', files: [{ format: 'qcow2', size: 1 << 30, sha256: 'c'.repeat(64) }] });
    for (let j = 0; j < uploadsPerBuild; j++) {
      const u = await store.createUpload({ buildId: b.id, provider: `cloud-${j}`, imageName: `image-${i % 4}`, externalName: `${b.id}-${j}` });
      await store.updateUpload(u.id, { state: 'ready', externalId: `ext-${u.id}`, format: 'qcow2' });
    }
  }
}

/** Every znode below `root` with its JSON (null for an empty znode), by path. */
async function dumpTree(client: ZkClient, root: string): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  const walk = async (p: string): Promise<void> => {
    const got = await client.getData(p);
    if (!got) return;
    out[p.slice(root.length)] = got.data.length === 0 ? null : JSON.parse(got.data.toString('utf8')) as unknown;
    for (const c of (await client.getChildren(p) ?? []).sort()) await walk(`${p}/${c}`);
  };
  await walk(root);
  return out;
}

void describe('ZooKeeperStore image data', () => {
  let dir: string;
  const opened: Array<{ close(): Promise<void> }> = [];
  const track = <T extends { close(): Promise<void> }>(s: T): T => { opened.push(s); return s; };

  afterEach(async () => {
    for (const s of opened.splice(0).reverse()) await s.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  void it('has the image data capability', async () => {
    assert.equal(hasImageData(track(await openZk())), true);
  });

  void it('writes the tree the store writes itself: same znodes, same JSON (field order aside)', async () => {
    const chrootA = `/image-data-${randomUUID()}`;
    const chrootB = `/image-data-${randomUUID()}`;
    const clock = (): number => 1_700_000_000_000;
    const source = track(await openZk(clock, chrootA));
    await fill(source, 2, 2);
    await source.setPause('image-0', null, true, 'why');
    await source.setPause('image-1', 'cloud-1', true);
    await source.requestBuild('image-1');
    const target = track(await openZk(clock, chrootB));
    await target.importImageData(await source.exportImageData());
    const raw = track(await ZkClient.connect({ hosts: `127.0.0.1:${zk.port}`, sessionTimeoutMs: 10_000, reads: new ReadCounter() }));
    const a = await dumpTree(raw, `${chrootA}/nodepool/images`);
    const b = await dumpTree(raw, `${chrootB}/nodepool/images`);
    assert.deepEqual(Object.keys(b), Object.keys(a));
    assert.deepEqual(b, a);
    assert.ok(Object.keys(a).includes('/image-0/builds/0000000001/providers/cloud-1/images/0000000002'), Object.keys(a).join('\n'));
  });

  void it('removes what an import wrote when a later transaction fails, and puts the counters back', async () => {
    const source = track(await openZk());
    await fill(source, 8, 3);
    await source.setPause('image-0', null, true);
    const data = await source.exportImageData();
    const chroot = `/image-data-${randomUUID()}`;
    const target = track(await ZooKeeperStore.open({ servers: [{ host: '127.0.0.1', port: zk.port, chroot }] }));
    // Small transactions, and a failure injected before the fourth.
    // The store's backend keeps its ZkImageData private; the test reaches its seams (ZkImageDataOptions).
    const inner = (target as unknown as { zk: { imageData: { opts: ZkImageDataOptions } } }).zk.imageData;
    let seen = 0;
    inner.opts.maxBatchBytes = 2048;
    inner.opts.beforeBatch = (i) => { seen = i; if (i === 3) throw new Error('injected failure'); };
    const err = await storeError(target.importImageData(data));
    assert.match(err.message, /injected failure/);
    assert.equal(seen, 3);
    assert.deepEqual(await target.listBuilds(), []);
    assert.deepEqual(await target.listUploads(), []);
    assert.deepEqual(await target.listPauses(), []);
    assert.equal((await target.createBuild({ diskimage: 'image-0', formats: ['qcow2'] })).id, 'image-0-0000000001');
    // Without the failure the same data goes in whole (image-0-0000000001 is now taken: a conflict).
    inner.opts.beforeBatch = undefined;
    await target.deleteBuild('image-0-0000000001');
    const counts = await target.importImageData(data);
    assert.equal(counts.builds, 8);
    assert.equal(counts.uploads, 24);
    assert.deepEqual(await target.listUploads(), await source.listUploads());
  });

  void it('imports a file exported from SQLite', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-image-data-'));
    const sqlite = track(await SqliteStore.open(path.join(dir, 'nodepool.db')));
    await fill(sqlite, 6, 3);
    const gone = await sqlite.createBuild({ diskimage: 'image-9', formats: ['qcow2'] });
    await sqlite.deleteBuild(gone.id);
    await sqlite.setPause('image-1', 'cloud-2', true, 'quota');
    await sqlite.requestBuild('image-2');
    const text = JSON.stringify(await sqlite.exportImageData(), null, 2);
    const target = track(await openZk());
    const counts = await target.importImageData(JSON.parse(text) as ImageData);
    assert.deepEqual(counts, { builds: 6, uploads: 18, pauses: 1, buildRequests: 1, pausesKept: 0, buildRequestsKept: 0, sequencesRaised: 6 });
    assert.deepEqual(await target.listBuilds(), await sqlite.listBuilds());
    assert.deepEqual(await target.listUploads(), await sqlite.listUploads());
    assert.deepEqual(await target.listPauses(), await sqlite.listPauses());
    assert.deepEqual(await target.listBuildRequests(), await sqlite.listBuildRequests());
    assert.equal((await target.createBuild({ diskimage: 'image-9', formats: ['qcow2'] })).id, 'image-9-0000000002');
    // A second handle (another process, as the CLI) sees the same.
    const other = track(await openZk(undefined, target.layout.chroot));
    assert.deepEqual((await other.listUploads()).length, 18);
  });

  void it('exports and imports 200 builds with 4,000 uploads', async (t) => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-image-data-'));
    const sqlite = track(await SqliteStore.open(path.join(dir, 'nodepool.db')));
    await fill(sqlite, 200, 20);
    const source = track(await openZk());
    let started = performance.now();
    await source.importImageData(await sqlite.exportImageData());
    const firstImportMs = performance.now() - started;
    started = performance.now();
    const data = await source.exportImageData();
    const exportMs = performance.now() - started;
    const text = JSON.stringify(data, null, 2);
    assert.equal(data.builds.length, 200);
    assert.equal(data.uploads.length, 4000);
    const target = track(await openZk());
    started = performance.now();
    const counts = await target.importImageData(JSON.parse(text) as ImageData);
    const importMs = performance.now() - started;
    assert.equal(counts.uploads, 4000);
    const again = await target.exportImageData();
    assert.deepEqual({ ...again, exported: 0 }, { ...data, exported: 0 });
    t.diagnostic(`ZooKeeper, 200 builds, 4000 uploads: export ${exportMs.toFixed(0)} ms, import (parse + validate + write) ${importMs.toFixed(0)} ms `
      + `(first import from SQLite ${firstImportMs.toFixed(0)} ms), file ${(text.length / 1024 / 1024).toFixed(2)} MiB`);
    assert.ok(exportMs < 10_000 && importMs < 20_000, `export ${exportMs} ms, import ${importMs} ms`);
  });
});
