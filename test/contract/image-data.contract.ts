/**
 * The image data contract (lib/store/image-data.ts): every backend that implements
 * `ImageDataStore` runs this suite from its own test file, with fresh, empty stores on a clock
 * the test controls. Each test opens two stores, a source and a target, of the same backend.
 * The SQLite run is test/integration/store/image-data-sqlite.test.ts; a ZooKeeper run imports
 * this suite the same way with its own opener.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { ImageDataConflictError, InvalidImageDataError } from '../../lib/errors.js';
import type { ImageData, ImageDataStore } from '../../lib/store/image-data.js';
import type { Store } from '../../lib/store/store.js';
import { ids, storeError, T0 } from './store-helpers.js';

/** A fresh, empty store with the image data capability; `cleanup` closes it and removes what it made. */
export type OpenImageDataStore = (clock: () => number) => Promise<{ store: Store & ImageDataStore; cleanup(): Promise<void> }>;

/** Everything a store holds that is image data, for before/after comparisons. */
async function imageRecords(store: Store): Promise<unknown> {
  const [builds, uploads, pauses, buildRequests] = await Promise.all([
    store.listBuilds(), store.listUploads(), store.listPauses(), store.listBuildRequests(),
  ]);
  return { builds, uploads, pauses, buildRequests };
}

/** An export without its time stamp. */
function withoutStamp(data: ImageData): Omit<ImageData, 'exported'> {
  const { exported: _exported, ...rest } = data;
  return rest;
}

/** Registers the image data contract suite for one backend. */
export function imageDataContract(name: string, open: OpenImageDataStore): void {
  void describe(`image data contract: ${name}`, () => {
    let now = T0;
    let source: Store & ImageDataStore;
    let target: Store & ImageDataStore;
    const cleanups: Array<() => Promise<void>> = [];

    beforeEach(async () => {
      now = T0;
      for (const slot of ['source', 'target'] as const) {
        const opened = await open(() => now);
        cleanups.push(() => opened.cleanup());
        if (slot === 'source') source = opened.store;
        else target = opened.store;
      }
    });
    afterEach(async () => {
      for (const c of cleanups.splice(0).reverse()) await c();
    });

    /**
     * A source with history: debian builds 1–3 (3 deleted, 2 failed), ubuntu build 1 with
     * files, uploads (one with rate progress, one failed), a centos build since deleted (only
     * its sequence is left), pauses, a build request, and a node and node request.
     */
    async function fillSource(): Promise<void> {
      const d1 = await source.createBuild({ diskimage: 'debian', formats: ['qcow2', 'raw'] });
      now += 1000;
      const d2 = await source.createBuild({ diskimage: 'debian', formats: ['qcow2'] });
      const d3 = await source.createBuild({ diskimage: 'debian', formats: ['qcow2'] });
      const u1 = await source.createBuild({ diskimage: 'ubuntu-noble', formats: ['qcow2'] });
      const c1 = await source.createBuild({ diskimage: 'centos', formats: ['qcow2'] });
      now += 1000;
      await source.updateBuild(d1.id, {
        state: 'ready', builderHostname: 'builder-1', builderId: 'b1-uuid',
        files: [{ format: 'qcow2', size: 1234, sha256: 'a'.repeat(64) }, { format: 'raw', size: 5678, sha256: 'b'.repeat(64) }],
      });
      await source.updateBuild(d2.id, { state: 'failed', reason: 'dib exited 1' });
      await source.updateBuild(u1.id, { state: 'building', progress: { numerator: 2, denominator: 5 } });
      assert.equal(await source.deleteBuild(d3.id), true);
      assert.equal(await source.deleteBuild(c1.id), true);
      const upA = await source.createUpload({ buildId: d1.id, provider: 'cloud-a', imageName: 'debian', externalName: 'debian-1700000002' });
      const upB = await source.createUpload({ buildId: d1.id, provider: 'cloud-b', imageName: 'debian-b', externalName: null });
      const upGone = await source.createUpload({ buildId: d1.id, provider: 'cloud-c', imageName: 'debian', externalName: null });
      await source.createUpload({ buildId: u1.id, provider: 'cloud-a', imageName: 'ubuntu', externalName: null });
      now += 1000;
      await source.updateUpload(upA.id, { state: 'ready', externalId: 'img-123', format: 'qcow2' });
      await source.updateUpload(upB.id, { progress: { numerator: 10, denominator: 100, rate: 2.5, sampledAt: now } });
      await source.updateUpload(upGone.id, { state: 'failed', reason: 'quota' });
      assert.equal(await source.deleteUpload(upGone.id), true);
      await source.setPause('debian', null, true, 'broken mirror');
      await source.setPause('ubuntu-noble', 'cloud-b', true);
      await source.requestBuild('ubuntu-noble');
      await source.createNode({ state: 'ready', provider: 'cloud-a', pool: 'main', labels: ['small'] });
      await source.createRequest({ labels: ['small'], requestor: 'zuul' });
    }

    void it('moves every image record, with its ids and times, into an empty store', async () => {
      await fillSource();
      const data = await source.exportImageData();
      assert.equal(data.format, 'nodepool-ts-image-data');
      assert.equal(data.version, 1);
      assert.equal(data.exported, now);
      assert.deepEqual(ids(data.builds), ['debian-0000000001', 'debian-0000000002', 'ubuntu-noble-0000000001']);
      assert.deepEqual(ids(data.uploads), ['0000000001', '0000000002', '0000000004']);
      assert.deepEqual(data.sequences, { build: { centos: 1, debian: 3, 'ubuntu-noble': 1 }, upload: 4 });
      now += 60_000;
      const counts = await target.importImageData(data);
      assert.deepEqual(counts, { builds: 3, uploads: 3, pauses: 2, buildRequests: 1, pausesKept: 0, buildRequestsKept: 0, sequencesRaised: 4 });
      assert.deepEqual(await imageRecords(target), await imageRecords(source));
      assert.deepEqual(withoutStamp(await target.exportImageData()), withoutStamp(data));
    });

    void it('survives a round trip through JSON text', async () => {
      await fillSource();
      const data = await source.exportImageData();
      await target.importImageData(JSON.parse(JSON.stringify(data)) as ImageData);
      assert.deepEqual(await imageRecords(target), await imageRecords(source));
    });

    void it('continues the sequences after an import: a new build or upload never reuses an imported id', async () => {
      await fillSource();
      await target.importImageData(await source.exportImageData());
      assert.equal((await target.createBuild({ diskimage: 'debian', formats: ['qcow2'] })).id, 'debian-0000000004');
      // Every centos build was deleted before the export; its sequence still moved.
      assert.equal((await target.createBuild({ diskimage: 'centos', formats: ['qcow2'] })).id, 'centos-0000000002');
      assert.equal((await target.createBuild({ diskimage: 'fedora', formats: ['qcow2'] })).id, 'fedora-0000000001');
      const up = await target.createUpload({ buildId: 'debian-0000000001', provider: 'cloud-d', imageName: 'debian', externalName: null });
      assert.equal(up.id, '0000000005');
    });

    void it('keeps a target sequence that is ahead of the imported one (max of the two)', async () => {
      await fillSource();
      for (let i = 0; i < 6; i++) await target.createBuild({ diskimage: 'debian', formats: ['qcow2'] });
      for (const b of await target.listBuilds()) assert.equal(await target.deleteBuild(b.id), true);
      const counts = await target.importImageData(await source.exportImageData());
      assert.equal(counts.builds, 3);
      assert.equal(counts.sequencesRaised, 3); // centos, ubuntu-noble, upload; not debian (6 > 3)
      assert.equal((await target.createBuild({ diskimage: 'debian', formats: ['qcow2'] })).id, 'debian-0000000007');
    });

    void it('refuses to import the same data twice, naming the first existing build, and changes nothing', async () => {
      await fillSource();
      const data = await source.exportImageData();
      await target.importImageData(data);
      await target.setPause('fedora', null, true, 'added after the import');
      const before = await imageRecords(target);
      const err = await storeError(target.importImageData(data), ImageDataConflictError);
      assert.equal(err.recordId, 'debian-0000000001');
      assert.match(err.message, /build debian-0000000001 already exists/);
      assert.deepEqual(await imageRecords(target), before);
    });

    void it('refuses an upload id the target already has, and writes none of the builds before it', async () => {
      await fillSource();
      const own = await target.createBuild({ diskimage: 'fedora', formats: ['qcow2'] });
      await target.createUpload({ buildId: own.id, provider: 'cloud-a', imageName: 'fedora', externalName: null });
      await target.createUpload({ buildId: own.id, provider: 'cloud-b', imageName: 'fedora', externalName: null });
      const before = await imageRecords(target);
      const err = await storeError(target.importImageData(await source.exportImageData()), ImageDataConflictError);
      assert.equal(err.recordId, '0000000001');
      assert.match(err.message, /upload 0000000001 .*already exists/);
      assert.deepEqual(await imageRecords(target), before);
    });

    void it('refuses an imported sequence that is behind a record of the target', async () => {
      await fillSource();
      // The target handed out debian ids up to 5 on its own; the source's debian sequence is 3.
      for (let i = 0; i < 5; i++) await target.createBuild({ diskimage: 'debian', formats: ['qcow2'] });
      for (const id of ['debian-0000000001', 'debian-0000000002', 'debian-0000000003']) await target.deleteBuild(id);
      const before = await imageRecords(target);
      const err = await storeError(target.importImageData(await source.exportImageData()), ImageDataConflictError);
      assert.equal(err.recordId, 'debian-0000000005');
      assert.match(err.message, /debian-0000000005, past the imported build sequence of debian \(3\)/);
      assert.deepEqual(await imageRecords(target), before);
      assert.equal((await target.createBuild({ diskimage: 'debian', formats: ['qcow2'] })).id, 'debian-0000000006');
    });

    void it('refuses corrupt data with the path of the bad field, writing nothing', async () => {
      await fillSource();
      const data = JSON.parse(JSON.stringify(await source.exportImageData())) as Record<string, unknown>;
      (data.builds as Array<Record<string, unknown>>)[1]!.state = 'exploded';
      (data.uploads as Array<Record<string, unknown>>)[2]!.buildId = 'debian-0000000009';
      const err = await storeError(target.importImageData(data as unknown as ImageData), InvalidImageDataError);
      assert.deepEqual(err.problems.map((p) => p.path), ['builds[1].state', 'uploads[2].buildId']);
      assert.match(err.message, /builds\[1\]\.state: expected one of building, ready, failed, deleting, lost, got "exploded"/);
      assert.match(err.message, /uploads\[2\]\.buildId: build debian-0000000009 is not in builds/);
      assert.deepEqual(await imageRecords(target), { builds: [], uploads: [], pauses: [], buildRequests: [] });
    });

    void it('carries pauses and build requests, keeping those the target already has', async () => {
      await fillSource();
      now += 5000;
      await target.setPause('debian', null, true, "the target's own reason");
      await target.requestBuild('debian');
      const counts = await target.importImageData(await source.exportImageData());
      assert.equal(counts.pauses, 1);
      assert.equal(counts.pausesKept, 1);
      assert.equal(counts.buildRequests, 1);
      assert.equal(counts.buildRequestsKept, 0);
      assert.deepEqual(await target.listPauses(), [
        { diskimage: 'debian', provider: null, since: now, reason: "the target's own reason" },
        { diskimage: 'ubuntu-noble', provider: 'cloud-b', since: T0 + 3000, reason: null },
      ]);
      assert.deepEqual(await target.listBuildRequests(), [
        { diskimage: 'debian', requested: now },
        { diskimage: 'ubuntu-noble', requested: T0 + 3000 },
      ]);
    });

    void it('leaves nodes and node requests out: they are not image data', async () => {
      await fillSource();
      const data = await source.exportImageData();
      assert.deepEqual(Object.keys(data).sort(), ['buildRequests', 'builds', 'exported', 'format', 'pauses', 'sequences', 'uploads', 'version']);
      assert.deepEqual(Object.keys(data.sequences).sort(), ['build', 'upload']);
      await target.importImageData(data);
      assert.deepEqual(await target.listNodes(), []);
      assert.deepEqual(await target.listRequests(), []);
      assert.equal((await target.createNode({ state: 'building', provider: 'cloud-a', pool: 'main', labels: ['small'] })).id, '0000000001');
    });

    void it('exports an empty store as empty data, which imports as nothing', async () => {
      const data = await source.exportImageData();
      assert.deepEqual(withoutStamp(data), {
        format: 'nodepool-ts-image-data', version: 1, builds: [], uploads: [], pauses: [], buildRequests: [], sequences: { build: {}, upload: 0 },
      });
      assert.deepEqual(await target.importImageData(data),
        { builds: 0, uploads: 0, pauses: 0, buildRequests: 0, pausesKept: 0, buildRequestsKept: 0, sequencesRaised: 0 });
    });

    void it('moves pins, revocations and upload launch counts and decisions, keeping the target\'s own pins and revocations', async () => {
      const b1 = await source.createBuild({ diskimage: 'debian', formats: ['qcow2'] });
      const b2 = await source.createBuild({ diskimage: 'debian', formats: ['qcow2'] });
      const up = await source.createUpload({ buildId: b2.id, provider: 'cloud-a', imageName: 'debian', externalName: null });
      await source.recordLaunch(up.id, 'success');
      await source.recordLaunch(up.id, 'failure');
      await source.updateUpload(up.id, { rollout: { state: 'revoked', time: T0 + 5, reason: 'aborted after 1 failed launch' } });
      await source.setPin('debian', null, b1.id, 'hold the old one');
      await source.setPin('debian', 'cloud-a', b1.id);
      await source.setRevocation('debian', b2.id, true, 'kernel panics');
      now += 1000;
      await target.setPin('debian', 'cloud-a', 'debian-0000000001', "the target's own");
      const data = await source.exportImageData();
      assert.deepEqual(data.pins?.map((p) => [p.provider, p.buildId]), [[null, b1.id], ['cloud-a', b1.id]]);
      assert.deepEqual(data.revocations, [{ diskimage: 'debian', buildId: b2.id, since: T0, reason: 'kernel panics' }]);
      const counts = await target.importImageData(JSON.parse(JSON.stringify(data)) as ImageData);
      assert.deepEqual([counts.pins, counts.pinsKept, counts.revocations, counts.revocationsKept], [1, 1, 1, 0]);
      assert.deepEqual((await target.listPins()).map((p) => [p.provider, p.reason]), [[null, 'hold the old one'], ['cloud-a', "the target's own"]]);
      assert.deepEqual(await target.listRevocations(), await source.listRevocations());
      const got = await target.getUpload(up.id);
      assert.deepEqual([got?.launches, got?.launchFailures, got?.rollout], [1, 1, { state: 'revoked', time: T0 + 5, reason: 'aborted after 1 failed launch' }]);
    });

    void it('moves upload retry requests, keeping the target\'s own, and refuses a malformed or repeated one', async () => {
      await source.createBuild({ diskimage: 'debian', formats: ['qcow2'] });
      await source.requestUploadRetry('debian', 'cloud-a');
      now += 10;
      await source.requestUploadRetry('debian', 'cloud-b');
      await source.requestUploadRetry('ubuntu-noble', 'cloud-a');
      now += 1000;
      await target.requestUploadRetry('debian', 'cloud-b');
      const data = await source.exportImageData();
      assert.deepEqual(data.uploadRetries, [
        { diskimage: 'debian', provider: 'cloud-a', requested: T0 }, { diskimage: 'debian', provider: 'cloud-b', requested: T0 + 10 },
        { diskimage: 'ubuntu-noble', provider: 'cloud-a', requested: T0 + 10 },
      ]);
      const counts = await target.importImageData(JSON.parse(JSON.stringify(data)) as ImageData);
      assert.deepEqual([counts.uploadRetries, counts.uploadRetriesKept], [2, 1]);
      assert.deepEqual(await target.listUploadRetries(), [
        { diskimage: 'debian', provider: 'cloud-a', requested: T0 }, { diskimage: 'debian', provider: 'cloud-b', requested: now },
        { diskimage: 'ubuntu-noble', provider: 'cloud-a', requested: T0 + 10 },
      ]);
      const bad = {
        ...data, builds: [], sequences: { build: {}, upload: 0 },
        uploadRetries: [{ diskimage: 'debian', provider: '', requested: T0 }, { diskimage: 'debian', provider: 'cloud-a', requested: 'soon' },
          { diskimage: 'centos', provider: 'cloud-a', requested: T0 }, { diskimage: 'centos', provider: 'cloud-a', requested: T0 + 1 }],
      };
      const err = await storeError(target.importImageData(bad as unknown as ImageData), InvalidImageDataError);
      assert.deepEqual(err.problems.map((p) => p.path), ['uploadRetries[0].provider', 'uploadRetries[1].requested', 'uploadRetries[3]']);
    });

    void it('imports a file without pins and revocations (older exports) as before, and refuses a pin of another diskimage\'s build', async () => {
      const b = await source.createBuild({ diskimage: 'debian', formats: ['qcow2'] });
      const data = await source.exportImageData();
      assert.equal('pins' in data || 'revocations' in data || 'uploadRetries' in data, false, 'a store without any exports none of these keys');
      assert.deepEqual(await target.importImageData(data),
        { builds: 1, uploads: 0, pauses: 0, buildRequests: 0, pausesKept: 0, buildRequestsKept: 0, sequencesRaised: 1 });
      const bad = { ...data, builds: [], sequences: { build: {}, upload: 0 }, pins: [{ diskimage: 'ubuntu', provider: null, buildId: b.id, since: T0, reason: null }] };
      const err = await storeError(target.importImageData(bad), InvalidImageDataError);
      assert.deepEqual(err.problems.map((p) => p.path), ['pins[0].buildId']);
    });
  });
}
