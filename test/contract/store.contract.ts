/**
 * The state store contract: every backend (SQLite, ZooKeeper) runs this suite from its own
 * test file with a fresh, empty store per test and a clock the test controls.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { StateConflictError } from '../../lib/errors.js';
import type { BuildRecord, UploadRecord } from '../../lib/store/models.js';
import type { Store } from '../../lib/store/store.js';
import { ids, lapseByClock, storeError, T0, type StoreHarness } from './store-helpers.js';
import type { Nodepool11Record } from '../support/nodepool11-model.js';
import type { Spoil } from './spoil.js';
import { corruptRecordContract } from './store-corrupt.contract.js';
import { nodeStoreContract } from './store-nodes.contract.js';
import { nodepool11StoreContract } from './store-nodepool11.contract.js';
import { rolloutStoreContract } from './store-rollout.contract.js';
import { webStoreContract } from './store-web.contract.js';
import { logTokenStoreContract } from './store-log-token.contract.js';

/**
 * Opens a fresh, empty store on `clock`; `cleanup` closes it and removes what it made.
 * A backend whose server expires sessions itself (ZooKeeper) also returns `lapseSession`,
 * which has a session expire for real; the others lapse sessions by moving the clock.
 */
export type OpenTestStore = (clock: () => number) => Promise<{
  store: Store; cleanup(): Promise<void>; lapseSession?(id: string): Promise<void>;
  /** Writes corrupt records straight into the backend (test/contract/spoil.ts). */
  spoil: Spoil;
  /** Opens a second handle on the same store (another process would): the test closes it. */
  another(): Promise<Store>;
  /** The store's records as Nodepool 11 reads them, for a backend it reads (ZooKeeper). */
  nodepool11Records?(): Promise<Nodepool11Record[]>;
}>;

/** Registers the store contract suite for one backend. */
export function storeContract(name: string, open: OpenTestStore): void {
  void describe(`store contract: ${name}`, () => {
    let now = T0;
    let store: Store;
    let cleanup: () => Promise<void>;
    let lapseSession: ((id: string) => Promise<void>) | undefined;
    let spoil: Spoil;
    let another: () => Promise<Store>;
    let np11Records: (() => Promise<Nodepool11Record[]>) | undefined;
    const others: Store[] = [];

    beforeEach(async () => {
      now = T0;
      const opened = await open(() => now);
      store = opened.store;
      cleanup = () => opened.cleanup();
      lapseSession = opened.lapseSession?.bind(opened);
      spoil = opened.spoil;
      another = () => opened.another();
      np11Records = opened.nodepool11Records?.bind(opened);
    });
    afterEach(async () => {
      for (const o of others.splice(0)) await o.close();
      await cleanup();
    });

    const build = (diskimage = 'debian', formats = ['qcow2']): Promise<BuildRecord> => store.createBuild({ diskimage, formats });
    const upload = (buildId: string, provider = 'cloud-a'): Promise<UploadRecord> =>
      store.createUpload({ buildId, provider, imageName: `${provider}-image`, externalName: null });
    const harness: StoreHarness = {
      get store() { return store; },
      set now(v: number) { now = v; },
      get now() { return now; },
      lapse: (id) => (lapseSession ? lapseSession(id) : lapseByClock(harness, id)),
      get lapsedSessionsVanish() { return lapseSession !== undefined; },
      async openAnother() {
        const o = await another();
        others.push(o);
        return o;
      },
      nodepool11Records: () => np11Records?.(),
    };
    nodeStoreContract(harness);
    nodepool11StoreContract(harness);
    corruptRecordContract(harness, () => spoil);
    rolloutStoreContract(harness, () => spoil);
    webStoreContract(harness, () => spoil);
    logTokenStoreContract(harness);

    void describe('installation', () => {
      void it('has one installation id: a UUID made on the first ask, the same on every later ask', async () => {
        const [a, b] = await Promise.all([store.installationId(), store.installationId()]);
        assert.match(a, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
        assert.equal(b, a);
        await store.createBuild({ diskimage: 'debian', formats: ['qcow2'] });
        assert.equal(await store.installationId(), a);
      });
    });

    void describe('builds', () => {
      void it('creates a build in state building with id <diskimage>-0000000001, then -0000000002', async () => {
        const first = await build('debian', ['qcow2', 'raw']);
        assert.deepEqual(first, {
          id: 'debian-0000000001', diskimage: 'debian', state: 'building', stateTime: T0, created: T0,
          builderHostname: null, builderId: null, formats: ['qcow2', 'raw'], files: [], reason: null, progress: null,
        });
        assert.equal((await build('debian')).id, 'debian-0000000002');
        assert.deepEqual(await store.getBuild('debian-0000000001'), first);
      });

      void it('keeps one id sequence per diskimage', async () => {
        await build('debian');
        await build('debian');
        assert.equal((await build('ubuntu-noble')).id, 'ubuntu-noble-0000000001');
        assert.equal((await build('debian')).id, 'debian-0000000003');
      });

      void it('never reuses a build id, even after every build of the diskimage is deleted', async () => {
        await build();
        const second = await build();
        assert.equal(await store.deleteBuild(second.id), true);
        assert.equal((await build()).id, 'debian-0000000003');
        for (const b of await store.listBuilds()) await store.deleteBuild(b.id);
        assert.equal((await build()).id, 'debian-0000000004');
      });

      void it('moves the sequence past ids a builder still holds (skipIds)', async () => {
        const b = await store.createBuild({ diskimage: 'debian', formats: ['qcow2'], skipIds: ['debian-0000000001', 'debian-0000000002', 'ubuntu-0000000003'] });
        assert.equal(b.id, 'debian-0000000003');
        assert.equal((await store.createBuild({ diskimage: 'debian', formats: ['qcow2'] })).id, 'debian-0000000004');
      });

      void it('hands out distinct ids to concurrent createBuild calls', async () => {
        const made = await Promise.all(Array.from({ length: 20 }, () => build()));
        const expected = Array.from({ length: 20 }, (_, i) => `debian-${String(i + 1).padStart(10, '0')}`);
        assert.deepEqual(ids(made).sort(), expected);
      });

      void it('stamps created and stateTime from the injected clock', async () => {
        now = T0 + 1234;
        const b = await build();
        assert.equal(b.created, T0 + 1234);
        assert.equal(b.stateTime, T0 + 1234);
      });

      void it('refuses a diskimage name that cannot form a build id', async () => {
        await storeError(build('../etc'));
        assert.deepEqual(await store.listBuilds(), []);
      });

      void it('returns undefined for an unknown build', async () => {
        assert.equal(await store.getBuild('debian-0000000001'), undefined);
      });

      void it('lists builds ordered by diskimage, then id', async () => {
        for (const d of ['ubuntu', 'debian', 'ubuntu', 'centos', 'debian']) await build(d);
        for (let i = 0; i < 9; i++) await build('debian');
        assert.deepEqual(ids(await store.listBuilds()), [
          'centos-0000000001',
          ...Array.from({ length: 11 }, (_, i) => `debian-${String(i + 1).padStart(10, '0')}`),
          'ubuntu-0000000001', 'ubuntu-0000000002',
        ]);
      });

      void it('filters builds by diskimage, by states, and by both', async () => {
        const d1 = await build('debian');
        const d2 = await build('debian');
        const u1 = await build('ubuntu');
        await store.updateBuild(d2.id, { state: 'ready' });
        await store.updateBuild(u1.id, { state: 'failed' });
        assert.deepEqual(ids(await store.listBuilds({ diskimage: 'debian' })), [d1.id, d2.id]);
        assert.deepEqual(ids(await store.listBuilds({ states: ['ready', 'failed'] })), [d2.id, u1.id]);
        assert.deepEqual(ids(await store.listBuilds({ diskimage: 'debian', states: ['building'] })), [d1.id]);
        assert.deepEqual(await store.listBuilds({ diskimage: 'centos' }), []);
        assert.deepEqual(await store.listBuilds({ states: [] }), []);
      });

      void it('sets stateTime only when an update changes the state', async () => {
        const b = await build();
        now = T0 + 10;
        const noted = await store.updateBuild(b.id, { reason: 'slow mirror', builderHostname: 'builder-1', builderId: 'abc' });
        assert.equal(noted?.stateTime, T0);
        assert.equal(noted?.reason, 'slow mirror');
        assert.equal(noted?.builderHostname, 'builder-1');
        assert.equal(noted?.builderId, 'abc');
        now = T0 + 20;
        const ready = await store.updateBuild(b.id, { state: 'ready', reason: null });
        assert.equal(ready?.state, 'ready');
        assert.equal(ready?.stateTime, T0 + 20);
        assert.equal(ready?.reason, null);
        now = T0 + 30;
        const again = await store.updateBuild(b.id, { state: 'ready' });
        assert.equal(again?.stateTime, T0 + 20);
        assert.equal(again?.created, T0);
        assert.deepEqual(await store.getBuild(b.id), again);
      });

      void it('returns undefined when updating an unknown build', async () => {
        assert.equal(await store.updateBuild('debian-0000000009', { state: 'ready' }), undefined);
        assert.equal(await store.updateBuild('debian-0000000009', { state: 'ready' }, { expectStates: ['building'] }), undefined);
      });

      void it('rejects a conditional update from another state with StateConflictError and changes nothing', async () => {
        const b = await build();
        const ready = await store.updateBuild(b.id, { state: 'ready' });
        now = T0 + 50;
        const err = await storeError(store.updateBuild(b.id, { state: 'deleting', reason: 'operator' }, { expectStates: ['building', 'failed'] }), StateConflictError);
        assert.equal(err.recordId, b.id);
        assert.equal(err.actualState, 'ready');
        assert.deepEqual(await store.getBuild(b.id), ready);
      });

      void it('applies a conditional update when the build is in an expected state', async () => {
        const b = await build();
        now = T0 + 5;
        const deleting = await store.updateBuild(b.id, { state: 'deleting', reason: 'operator' }, { expectStates: ['building', 'ready'] });
        assert.equal(deleting?.state, 'deleting');
        assert.equal(deleting?.stateTime, T0 + 5);
      });

      void it('round-trips formats, files and progress as JSON', async () => {
        const b = await build('debian', ['qcow2', 'raw', 'vhd']);
        const files = [
          { format: 'qcow2', size: 123_456_789_012, sha256: 'a'.repeat(64) },
          { format: 'raw', size: 0, sha256: 'b'.repeat(64) },
        ];
        await store.updateBuild(b.id, { formats: ['qcow2', 'raw'], files, progress: { numerator: 3, denominator: 7 } });
        const got = await store.getBuild(b.id);
        assert.deepEqual(got?.formats, ['qcow2', 'raw']);
        assert.deepEqual(got?.files, files);
        assert.deepEqual(got?.progress, { numerator: 3, denominator: 7 });
        await store.updateBuild(b.id, { progress: null, formats: [] });
        const cleared = await store.getBuild(b.id);
        assert.equal(cleared?.progress, null);
        assert.deepEqual(cleared?.formats, []);
      });

      void it('refuses to delete a build while uploads of it exist', async () => {
        const b = await build();
        const u = await upload(b.id);
        await storeError(store.deleteBuild(b.id));
        assert.ok(await store.getBuild(b.id));
        assert.equal(await store.deleteUpload(u.id), true);
        assert.equal(await store.deleteBuild(b.id), true);
        assert.equal(await store.getBuild(b.id), undefined);
      });

      void it('returns false when deleting an unknown build', async () => {
        assert.equal(await store.deleteBuild('debian-0000000001'), false);
        const b = await build();
        assert.equal(await store.deleteBuild(b.id), true);
        assert.equal(await store.deleteBuild(b.id), false);
      });
    });

    void describe('uploads', () => {
      void it("creates an upload in state uploading with a 10-digit id and the build's diskimage", async () => {
        const b = await build('ubuntu');
        now = T0 + 7;
        const u = await store.createUpload({ buildId: b.id, provider: 'cloud-a', imageName: 'ubuntu-small', externalName: 'ubuntu-small-1700000000' });
        assert.deepEqual(u, {
          id: '0000000001', buildId: b.id, diskimage: 'ubuntu', provider: 'cloud-a', imageName: 'ubuntu-small',
          state: 'uploading', stateTime: T0 + 7, created: T0 + 7, externalId: null,
          externalName: 'ubuntu-small-1700000000', format: null, reason: null, progress: null,
        });
        assert.deepEqual(await store.getUpload(u.id), u);
      });

      void it('numbers uploads in one store-wide sequence that never reuses an id', async () => {
        const d = await build('debian');
        const u = await build('ubuntu');
        const u1 = await upload(d.id, 'cloud-a');
        const u2 = await upload(u.id, 'cloud-b');
        assert.deepEqual([u1.id, u2.id], ['0000000001', '0000000002']);
        await store.deleteUpload(u2.id);
        await store.deleteUpload(u1.id);
        assert.equal((await upload(d.id)).id, '0000000003');
      });

      void it('refuses an upload of an unknown build with StoreError', async () => {
        await storeError(upload('debian-0000000001'));
        assert.deepEqual(await store.listUploads(), []);
      });

      void it('returns undefined for an unknown upload', async () => {
        assert.equal(await store.getUpload('0000000001'), undefined);
      });

      void it('lists uploads ordered by diskimage, provider, then id', async () => {
        const u = await build('ubuntu');
        const d = await build('debian');
        const a = await upload(u.id, 'cloud-b');
        const b = await upload(d.id, 'cloud-b');
        const c = await upload(u.id, 'cloud-a');
        const e = await upload(d.id, 'cloud-a');
        const f = await upload(d.id, 'cloud-b');
        assert.deepEqual(ids(await store.listUploads()), [e.id, b.id, f.id, c.id, a.id]);
      });

      void it('filters uploads by build, provider, diskimage and states', async () => {
        const d1 = await build('debian');
        const d2 = await build('debian');
        const u1 = await build('ubuntu');
        const a = await upload(d1.id, 'cloud-a');
        const b = await upload(d2.id, 'cloud-a');
        const c = await upload(d2.id, 'cloud-b');
        const e = await upload(u1.id, 'cloud-a');
        await store.updateUpload(b.id, { state: 'ready' });
        await store.updateUpload(e.id, { state: 'failed' });
        assert.deepEqual(ids(await store.listUploads({ buildId: d2.id })), [b.id, c.id]);
        assert.deepEqual(ids(await store.listUploads({ provider: 'cloud-a' })), [a.id, b.id, e.id]);
        assert.deepEqual(ids(await store.listUploads({ diskimage: 'ubuntu' })), [e.id]);
        assert.deepEqual(ids(await store.listUploads({ states: ['ready', 'failed'] })), [b.id, e.id]);
        assert.deepEqual(ids(await store.listUploads({ diskimage: 'debian', provider: 'cloud-a', states: ['uploading'] })), [a.id]);
        assert.deepEqual(await store.listUploads({ states: [] }), []);
      });

      void it('updates upload fields and sets stateTime only when the state changes', async () => {
        const u = await upload((await build()).id);
        now = T0 + 10;
        const progress = await store.updateUpload(u.id, { progress: { numerator: 1, denominator: 4 }, format: 'raw' });
        assert.equal(progress?.stateTime, T0);
        assert.deepEqual(progress?.progress, { numerator: 1, denominator: 4 });
        // Upload progress also carries the rate (bytes/s, null before two samples) and the sample's time.
        const sized = { numerator: 3_221_225_472, denominator: 7_301_444_403, rate: 188_743_680.5, sampledAt: T0 + 9 };
        assert.deepEqual((await store.updateUpload(u.id, { progress: sized }))?.progress, sized);
        assert.deepEqual((await store.getUpload(u.id))?.progress, sized);
        const first = { numerator: 0, denominator: 10, rate: null, sampledAt: T0 + 9 };
        assert.deepEqual((await store.updateUpload(u.id, { progress: first }))?.progress, first);
        await store.updateUpload(u.id, { progress: { numerator: 1, denominator: 4 } });
        now = T0 + 20;
        const ready = await store.updateUpload(u.id, { state: 'ready', externalId: 'glance-uuid', externalName: 'debian-x', progress: null });
        assert.deepEqual({ ...ready }, {
          ...u, state: 'ready', stateTime: T0 + 20, externalId: 'glance-uuid', externalName: 'debian-x', format: 'raw', progress: null,
        });
        now = T0 + 30;
        assert.equal((await store.updateUpload(u.id, { state: 'ready', reason: 'again' }))?.stateTime, T0 + 20);
        assert.equal((await store.getUpload(u.id))?.reason, 'again');
      });

      void it('returns undefined when updating an unknown upload', async () => {
        assert.equal(await store.updateUpload('0000000042', { state: 'ready' }), undefined);
      });

      void it('rejects a conditional upload update from another state with StateConflictError and changes nothing', async () => {
        const u = await upload((await build()).id);
        const failed = await store.updateUpload(u.id, { state: 'failed', reason: 'quota' });
        const err = await storeError(store.updateUpload(u.id, { state: 'deleting' }, { expectStates: ['ready'] }), StateConflictError);
        assert.equal(err.recordId, u.id);
        assert.equal(err.actualState, 'failed');
        assert.deepEqual(await store.getUpload(u.id), failed);
        assert.equal((await store.updateUpload(u.id, { state: 'deleting' }, { expectStates: ['ready', 'failed'] }))?.state, 'deleting');
      });

      void it('takes an upload through validating: listed by that state, stateTime set on entry, kept while reason changes', async () => {
        const u = await upload((await build()).id);
        now = T0 + 40;
        const validating = await store.updateUpload(u.id, { state: 'validating', externalId: 'img-1', format: 'qcow2' }, { expectStates: ['uploading'] });
        assert.equal(validating?.state, 'validating');
        assert.equal(validating?.stateTime, T0 + 40);
        now = T0 + 50;
        const noted = await store.updateUpload(u.id, { reason: 'booting validation node 0000000001' }, { expectStates: ['validating'] });
        assert.equal(noted?.stateTime, T0 + 40, 'the validation clock starts when the state was entered');
        assert.deepEqual(ids(await store.listUploads({ states: ['validating'] })), [u.id]);
        assert.deepEqual(await store.getUpload(u.id), noted);
        await storeError(store.updateUpload(u.id, { state: 'ready' }, { expectStates: ['uploading'] }), StateConflictError);
        now = T0 + 60;
        const ready = await store.updateUpload(u.id, { state: 'ready', reason: null }, { expectStates: ['validating'] });
        assert.deepEqual([ready?.state, ready?.stateTime, ready?.externalId], ['ready', T0 + 60, 'img-1']);
      });

      void it('deletes an upload once and returns false afterwards', async () => {
        const u = await upload((await build()).id);
        assert.equal(await store.deleteUpload(u.id), true);
        assert.equal(await store.getUpload(u.id), undefined);
        assert.equal(await store.deleteUpload(u.id), false);
      });
    });

    void describe('intents and status', () => {
      void it('records a build request stamped with the clock and refreshes it on a repeat', async () => {
        assert.deepEqual(await store.requestBuild('ubuntu'), { diskimage: 'ubuntu', requested: T0 });
        now = T0 + 5;
        await store.requestBuild('debian');
        now = T0 + 9;
        assert.deepEqual(await store.requestBuild('ubuntu'), { diskimage: 'ubuntu', requested: T0 + 9 });
        assert.deepEqual(await store.listBuildRequests(), [
          { diskimage: 'debian', requested: T0 + 5 },
          { diskimage: 'ubuntu', requested: T0 + 9 },
        ]);
      });

      void it('clears a build request made at or before requestedUpTo', async () => {
        const r = await store.requestBuild('debian');
        await store.clearBuildRequest('debian', r.requested);
        await store.clearBuildRequest('never-requested', r.requested);
        assert.deepEqual(await store.listBuildRequests(), []);
      });

      void it('keeps a newer build request when a clear names an older requestedUpTo', async () => {
        const seen = await store.requestBuild('debian');
        now = T0 + 100;
        await store.requestBuild('debian');
        await store.clearBuildRequest('debian', seen.requested);
        assert.deepEqual(await store.listBuildRequests(), [{ diskimage: 'debian', requested: T0 + 100 }]);
      });

      void it('removes the build requests a new build serves in the same call, keeping newer ones and other diskimages', async () => {
        const served = await store.requestBuild('debian');
        await store.requestBuild('ubuntu');
        const build = await store.createBuild({ diskimage: 'debian', formats: ['qcow2'], servesRequestsUpTo: served.requested });
        assert.equal(build.id, 'debian-0000000001');
        assert.deepEqual(await store.listBuildRequests(), [{ diskimage: 'ubuntu', requested: T0 }]);
        now = T0 + 100;
        await store.requestBuild('ubuntu');
        await store.createBuild({ diskimage: 'ubuntu', formats: ['qcow2'], servesRequestsUpTo: T0 });
        assert.deepEqual(await store.listBuildRequests(), [{ diskimage: 'ubuntu', requested: T0 + 100 }], 'a request refreshed after the served time stays');
      });

      void it('pauses a whole diskimage and its uploads to one provider as separate records', async () => {
        await store.setPause('ubuntu', 'cloud-b', true, 'quota');
        now = T0 + 1;
        await store.setPause('ubuntu', null, true, 'broken mirror');
        await store.setPause('debian', 'cloud-a', true);
        assert.deepEqual(await store.listPauses(), [
          { diskimage: 'debian', provider: 'cloud-a', since: T0 + 1, reason: null },
          { diskimage: 'ubuntu', provider: null, since: T0 + 1, reason: 'broken mirror' },
          { diskimage: 'ubuntu', provider: 'cloud-b', since: T0, reason: 'quota' },
        ]);
      });

      void it('removes a pause on unpause and ignores unpausing what is not paused', async () => {
        await store.setPause('ubuntu', null, true);
        await store.setPause('ubuntu', 'cloud-a', true);
        await store.setPause('ubuntu', null, false);
        await store.setPause('debian', 'cloud-a', false);
        assert.deepEqual(await store.listPauses(), [{ diskimage: 'ubuntu', provider: 'cloud-a', since: T0, reason: null }]);
        await store.setPause('ubuntu', 'cloud-a', false);
        assert.deepEqual(await store.listPauses(), []);
      });

      void it('keeps one pause record with its first since when paused twice, taking a new reason', async () => {
        await store.setPause('ubuntu', null, true, 'first');
        now = T0 + 60;
        await store.setPause('ubuntu', null, true);
        assert.deepEqual(await store.listPauses(), [{ diskimage: 'ubuntu', provider: null, since: T0, reason: 'first' }]);
        await store.setPause('ubuntu', null, true, 'second');
        assert.deepEqual(await store.listPauses(), [{ diskimage: 'ubuntu', provider: null, since: T0, reason: 'second' }]);
      });

      void it('round-trips a status value as JSON with updated from the clock', async () => {
        const value = { planner: { lastRun: T0, failures: 0 }, builders: ['b1', 'b2'], ok: true, note: null };
        await store.putStatus('lifecycle', value);
        assert.deepEqual(await store.getStatus('lifecycle'), { value, updated: T0 });
        now = T0 + 30;
        await store.putStatus('lifecycle', 'stopping');
        assert.deepEqual(await store.getStatus<string>('lifecycle'), { value: 'stopping', updated: T0 + 30 });
      });

      void it('returns undefined for an unknown status key', async () => {
        assert.equal(await store.getStatus('heartbeat'), undefined);
      });
    });


    void describe('records and lifecycle', () => {
      void it('hands out plain records that do not alias the store', async () => {
        const formats = ['qcow2'];
        const b = await store.createBuild({ diskimage: 'debian', formats });
        formats.push('raw');
        b.formats.push('vhd');
        b.state = 'ready';
        const listed = await store.listBuilds();
        (listed[0] as BuildRecord).files.push({ format: 'raw', size: 1, sha256: 'x' });
        const fetched = await store.getBuild(b.id);
        assert.ok(fetched);
        assert.equal(Object.getPrototypeOf(fetched), Object.prototype);
        assert.deepEqual(fetched.formats, ['qcow2']);
        assert.deepEqual(fetched.files, []);
        assert.equal(fetched.state, 'building');

        const u = await upload(b.id);
        u.provider = 'elsewhere';
        assert.equal((await store.getUpload(u.id))?.provider, 'cloud-a');

        const value = { list: [1, 2] };
        await store.putStatus('k', value);
        value.list.push(3);
        const got = await store.getStatus<{ list: number[] }>('k');
        got?.value.list.push(4);
        assert.deepEqual((await store.getStatus('k'))?.value, { list: [1, 2] });

        const pauses = await store.listPauses();
        pauses.push({ diskimage: 'x', provider: null, since: 0, reason: null });
        assert.deepEqual(await store.listPauses(), []);
      });

      void it('closes idempotently and rejects later calls with StoreError', async () => {
        const b = await build();
        await store.close();
        await store.close();
        await storeError(store.getBuild(b.id));
        await storeError(build());
        await storeError(store.listUploads());
        await storeError(store.updateBuild(b.id, { state: 'ready' }));
        await storeError(store.requestBuild('debian'));
        await storeError(store.putStatus('k', 1));
        await storeError(store.createNode({ state: 'building', provider: 'cloud-a', pool: 'main', labels: ['small'] }));
        await storeError(store.listRequests());
        await storeError(store.openSession({ owner: 'cli', hostname: 'h', pid: 1, ttlMs: 1000 }));
      });
    });
  });
}
