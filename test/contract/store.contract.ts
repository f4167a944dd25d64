/**
 * The state store contract: every backend (SQLite now, ZooKeeper later) runs this suite from
 * its own test file with a fresh, empty store per test and a clock the test controls.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { StateConflictError, StoreError } from '../../lib/errors.js';
import type {
  BuildRecord, LauncherRecord, NewNode, NewNodeRequest, NodeRecord, NodeRequestRecord, NodeState, SessionRecord, UploadRecord,
} from '../../lib/store/models.js';
import type { Store } from '../../lib/store/store.js';

/** Opens a fresh, empty store on `clock`; `cleanup` closes it and removes what it made. */
export type OpenTestStore = (clock: () => number) => Promise<{ store: Store; cleanup(): Promise<void> }>;

const T0 = 1_700_000_000_000;

/** Asserts that `p` rejects with a StoreError (or subclass) and returns it. */
async function storeError<E extends StoreError = StoreError>(p: Promise<unknown>, type: new (...a: never[]) => E = StoreError as never): Promise<E> {
  let caught: unknown;
  await assert.rejects(p, (err) => { caught = err; return true; });
  assert.ok(caught instanceof type, `expected ${type.name}, got ${String(caught)}`);
  return caught;
}

/** Registers the store contract suite for one backend. */
export function storeContract(name: string, open: OpenTestStore): void {
  void describe(`store contract: ${name}`, () => {
    let now = T0;
    let store: Store;
    let cleanup: () => Promise<void>;

    beforeEach(async () => {
      now = T0;
      const opened = await open(() => now);
      store = opened.store;
      cleanup = () => opened.cleanup();
    });
    afterEach(() => cleanup());

    const build = (diskimage = 'debian', formats = ['qcow2']): Promise<BuildRecord> => store.createBuild({ diskimage, formats });
    const upload = (buildId: string, provider = 'cloud-a'): Promise<UploadRecord> =>
      store.createUpload({ buildId, provider, imageName: `${provider}-image`, externalName: null });
    const ids = (records: Array<{ id: string }>): string[] => records.map((r) => r.id);

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

    void describe('nodes', () => {
      const node = (over: Partial<NewNode> = {}): Promise<NodeRecord> =>
        store.createNode({ state: 'building', provider: 'cloud-a', pool: 'main', labels: ['small'], ...over });

      void it('creates a node with id 0000000001 and every field it was not given empty', async () => {
        now = T0 + 3;
        const n = await node({ labels: ['small', 'fast'] });
        assert.deepEqual(n, {
          id: '0000000001', state: 'building', stateTime: T0 + 3, created: T0 + 3, provider: 'cloud-a', pool: 'main',
          labels: ['small', 'fast'], launcher: null, allocatedTo: null, hostname: null, interfaceIp: null, publicIpv4: null,
          publicIpv6: null, privateIpv4: null, connectionType: 'ssh', connectionPort: 22, username: null, hostKeys: [],
          externalId: null, cloud: null, region: null, az: null, image: null, resources: null, attributes: {}, reason: null,
          holdReason: null, holdExpiration: null, consumerSession: null,
        });
        assert.deepEqual(await store.getNode(n.id), n);
      });

      void it('keeps the fields a new node is given', async () => {
        const n = await node({
          state: 'ready', launcher: 'host-1-PoolWorker.cloud-a-main', hostname: 'static-1', interfaceIp: '192.0.2.5',
          connectionType: 'winrm', connectionPort: 5986, username: 'zuul', hostKeys: ['ssh-ed25519 AAAA'],
          resources: { cores: 2, ram: 4096, instances: 1 }, attributes: { site: 'lab' }, holdExpiration: T0 + 60_000,
        });
        const got = await store.getNode(n.id);
        assert.equal(got?.state, 'ready');
        assert.equal(got?.launcher, 'host-1-PoolWorker.cloud-a-main');
        assert.equal(got?.connectionType, 'winrm');
        assert.equal(got?.connectionPort, 5986);
        assert.deepEqual(got?.hostKeys, ['ssh-ed25519 AAAA']);
        assert.deepEqual(got?.resources, { cores: 2, ram: 4096, instances: 1 });
        assert.deepEqual(got?.attributes, { site: 'lab' });
        assert.equal(got?.holdExpiration, T0 + 60_000);
      });

      void it('numbers nodes in one sequence that never reuses an id after a delete', async () => {
        const a = await node();
        const b = await node({ provider: 'cloud-b' });
        assert.deepEqual([a.id, b.id], ['0000000001', '0000000002']);
        assert.equal(await store.deleteNode(b.id), true);
        assert.equal(await store.deleteNode(a.id), true);
        assert.equal((await node()).id, '0000000003');
        assert.equal(await store.deleteNode(b.id), false);
        assert.equal(await store.getNode(b.id), undefined);
      });

      void it('refuses an unknown node state with StoreError', async () => {
        await storeError(node({ state: 'exploded' as NodeState }));
        assert.deepEqual(await store.listNodes(), []);
      });

      void it('lists nodes by id and filters by provider, pool, any label, states and allocatedTo', async () => {
        const a = await node({ provider: 'cloud-b', labels: ['small'] });
        const b = await node({ provider: 'cloud-a', pool: 'gpu', labels: ['gpu', 'large'], state: 'ready' });
        const c = await node({ provider: 'static', labels: ['small', 'large'], state: 'ready', allocatedTo: '100-0000000001' });
        const d = await node({ provider: 'cloud-a', labels: ['small-ish'], state: 'deleting' });
        assert.deepEqual(ids(await store.listNodes()), [a.id, b.id, c.id, d.id]);
        assert.deepEqual(ids(await store.listNodes({ provider: 'cloud-a' })), [b.id, d.id]);
        assert.deepEqual(ids(await store.listNodes({ pool: 'gpu' })), [b.id]);
        assert.deepEqual(ids(await store.listNodes({ label: 'large' })), [b.id, c.id]);
        assert.deepEqual(ids(await store.listNodes({ label: 'small' })), [a.id, c.id]);
        assert.deepEqual(ids(await store.listNodes({ label: 'smal' })), []);
        assert.deepEqual(ids(await store.listNodes({ states: ['ready', 'deleting'] })), [b.id, c.id, d.id]);
        assert.deepEqual(ids(await store.listNodes({ allocatedTo: '100-0000000001' })), [c.id]);
        assert.deepEqual(ids(await store.listNodes({ provider: 'cloud-a', label: 'large', states: ['ready'] })), [b.id]);
        assert.deepEqual(await store.listNodes({ states: [] }), []);
        assert.deepEqual(await store.listNodes({ allocatedTo: '100-0000000002' }), []);
      });

      void it('sets stateTime only when an update changes the state', async () => {
        const n = await node();
        now = T0 + 10;
        const noted = await store.updateNode(n.id, { hostname: 'h1', externalId: 'srv-1', publicIpv4: '198.51.100.7' });
        assert.equal(noted?.stateTime, T0);
        assert.equal(noted?.externalId, 'srv-1');
        now = T0 + 20;
        const ready = await store.updateNode(n.id, { state: 'ready', hostKeys: ['ssh-rsa AAAA'], labels: ['small', 'x'] });
        assert.equal(ready?.stateTime, T0 + 20);
        assert.deepEqual(ready?.hostKeys, ['ssh-rsa AAAA']);
        assert.deepEqual(ready?.labels, ['small', 'x']);
        now = T0 + 30;
        const again = await store.updateNode(n.id, { state: 'ready', allocatedTo: '100-0000000004' });
        assert.equal(again?.stateTime, T0 + 20);
        assert.equal(again?.created, T0);
        assert.deepEqual(await store.getNode(n.id), again);
        const cleared = await store.updateNode(n.id, { allocatedTo: null, resources: null });
        assert.equal(cleared?.allocatedTo, null);
        assert.deepEqual(await store.listNodes({ allocatedTo: '100-0000000004' }), []);
      });

      void it('rejects a conditional node update from another state with StateConflictError and changes nothing', async () => {
        const n = await node();
        const inUse = await store.updateNode(n.id, { state: 'in-use' });
        now = T0 + 50;
        const err = await storeError(store.updateNode(n.id, { state: 'deleting', reason: 'cleanup' }, { expectStates: ['used', 'failed'] }), StateConflictError);
        assert.equal(err.recordId, n.id);
        assert.equal(err.actualState, 'in-use');
        assert.deepEqual(await store.getNode(n.id), inUse);
        assert.equal((await store.updateNode(n.id, { state: 'used' }, { expectStates: ['in-use'] }))?.stateTime, T0 + 50);
        assert.equal(await store.updateNode('0000000099', { state: 'used' }, { expectStates: ['in-use'] }), undefined);
      });
    });

    void describe('node requests', () => {
      const request = (over: Partial<NewNodeRequest> = {}): Promise<NodeRequestRecord> =>
        store.createRequest({ labels: ['small'], requestor: 'zuul', ...over });

      void it('creates a request in state requested with id <priority>-<sequence> and the defaults', async () => {
        now = T0 + 4;
        const r = await request({ labels: ['small', 'small', 'large'] });
        assert.deepEqual(r, {
          id: '100-0000000001', priority: 100, state: 'requested', stateTime: T0 + 4, created: T0 + 4,
          labels: ['small', 'small', 'large'], requestor: 'zuul', reuse: true, provider: null, declinedBy: [], nodes: [],
          reason: null, requestorSession: null,
        });
        assert.deepEqual(await store.getRequest(r.id), r);
        const m = await request({ priority: 7, reuse: false, provider: 'cloud-a', requestor: 'min-ready' });
        assert.equal(m.id, '007-0000000002');
        assert.equal(m.reuse, false);
        assert.equal(m.provider, 'cloud-a');
      });

      void it('lists requests by priority, then age, and filters by states and requestor', async () => {
        const a = await request();
        const b = await request({ requestor: 'nodepool' });
        const c = await request({ priority: 50 });
        const d = await request({ priority: 999 });
        assert.deepEqual(ids(await store.listRequests()), [c.id, a.id, b.id, d.id]);
        await store.updateRequest(a.id, { state: 'pending' });
        assert.deepEqual(ids(await store.listRequests({ states: ['requested'] })), [c.id, b.id, d.id]);
        assert.deepEqual(ids(await store.listRequests({ requestor: 'nodepool' })), [b.id]);
        assert.deepEqual(ids(await store.listRequests({ states: ['pending'], requestor: 'zuul' })), [a.id]);
        assert.deepEqual(await store.listRequests({ states: [] }), []);
      });

      void it('refuses a priority outside 0..999 with StoreError', async () => {
        await storeError(request({ priority: 1000 }));
        await storeError(request({ priority: -1 }));
        await storeError(request({ priority: 1.5 }));
        assert.deepEqual(await store.listRequests(), []);
        assert.equal((await request({ priority: 0 })).id.slice(0, 4), '000-');
      });

      void it('updates a request, conditionally, and sets stateTime only on a state change', async () => {
        const r = await request();
        now = T0 + 10;
        const declined = await store.updateRequest(r.id, { declinedBy: ['launcher-1'] });
        assert.equal(declined?.stateTime, T0);
        assert.deepEqual(declined?.declinedBy, ['launcher-1']);
        now = T0 + 20;
        const pending = await store.updateRequest(r.id, { state: 'pending' }, { expectStates: ['requested'] });
        assert.equal(pending?.stateTime, T0 + 20);
        const err = await storeError(store.updateRequest(r.id, { state: 'pending' }, { expectStates: ['requested'] }), StateConflictError);
        assert.equal(err.actualState, 'pending');
        assert.deepEqual(await store.getRequest(r.id), pending);
        now = T0 + 30;
        const done = await store.updateRequest(r.id, { state: 'fulfilled', nodes: ['0000000003'] }, { expectStates: ['pending'] });
        assert.deepEqual(done?.nodes, ['0000000003']);
        assert.equal(done?.stateTime, T0 + 30);
        assert.equal(await store.updateRequest('100-0000000099', { state: 'failed' }), undefined);
      });

      void it('deletes a request once, and its sequence value is not reused', async () => {
        const r = await request();
        assert.equal(await store.deleteRequest(r.id), true);
        assert.equal(await store.getRequest(r.id), undefined);
        assert.equal(await store.deleteRequest(r.id), false);
        assert.equal((await request()).id, '100-0000000002');
      });
    });

    void describe('sessions, locks and launchers', () => {
      const TTL = 10_000;
      const session = (pid = 1): Promise<SessionRecord> => store.openSession({ owner: 'nodepool-server', hostname: 'host-1', pid, ttlMs: TTL });
      const launcher = (id: string, sessionId: string): Promise<LauncherRecord> =>
        store.registerLauncher({ id, sessionId, provider: 'cloud-a', pool: 'main', supportedLabels: ['small'] });

      void it('opens a session that is live until its TTL passes without a renewal', async () => {
        const s = await session();
        assert.deepEqual(s, { id: s.id, owner: 'nodepool-server', hostname: 'host-1', pid: 1, created: T0, renewed: T0, ttlMs: TTL });
        assert.deepEqual(await store.getSession(s.id), s);
        assert.notEqual((await session(2)).id, s.id);
        now = T0 + TTL;
        assert.equal(await store.isSessionLive(s.id), true);
        now = T0 + TTL + 1;
        assert.equal(await store.isSessionLive(s.id), false);
        assert.equal(await store.isSessionLive('no-such-session'), false);
        assert.equal((await store.listSessions()).length, 2);
      });

      void it('renews a lapsed session that was not reaped yet, but not one that was reaped', async () => {
        const s = await session();
        now = T0 + TTL + 1;
        assert.equal(await store.renewSession(s.id), true);
        assert.equal(await store.isSessionLive(s.id), true);
        assert.equal((await store.getSession(s.id))?.renewed, T0 + TTL + 1);
        now = T0 + 3 * TTL;
        assert.deepEqual(await store.reapSessions(), { sessions: 1, locks: 0, launchers: 0, requests: 0 });
        assert.equal(await store.renewSession(s.id), false);
        assert.equal(await store.getSession(s.id), undefined);
      });

      void it('gives a lock to one session at a time and lets the holder take it again', async () => {
        const a = await session(1);
        const b = await session(2);
        now = T0 + 5;
        assert.equal(await store.tryLock('node:0000000001', a.id), true);
        assert.equal(await store.tryLock('node:0000000001', b.id), false);
        now = T0 + 6;
        assert.equal(await store.tryLock('node:0000000001', a.id), true);
        assert.deepEqual(await store.getLock('node:0000000001'), { resource: 'node:0000000001', sessionId: a.id, acquired: T0 + 5, live: true });
        assert.equal(await store.unlock('node:0000000001', b.id), false);
        assert.equal((await store.getLock('node:0000000001'))?.sessionId, a.id);
        assert.equal(await store.unlock('node:0000000001', a.id), true);
        assert.equal(await store.getLock('node:0000000001'), undefined);
        assert.equal(await store.tryLock('node:0000000001', b.id), true);
        assert.equal(await store.unlock('node:0000000002', b.id), false);
      });

      void it("takes over a lapsed session's lock and reports the stale lock as not live before that", async () => {
        const a = await session(1);
        const b = await session(2);
        assert.equal(await store.tryLock('request:100-0000000001', a.id), true);
        now = T0 + TTL + 1;
        await store.renewSession(b.id);
        assert.equal((await store.getLock('request:100-0000000001'))?.live, false);
        assert.equal(await store.tryLock('request:100-0000000001', b.id), true);
        assert.deepEqual(await store.getLock('request:100-0000000001'),
          { resource: 'request:100-0000000001', sessionId: b.id, acquired: T0 + TTL + 1, live: true });
        assert.equal(await store.unlock('request:100-0000000001', a.id), false);
      });

      void it('refuses tryLock by a lapsed, closed or unknown session with StoreError', async () => {
        const a = await session();
        const b = await session(2);
        now = T0 + TTL + 1;
        await storeError(store.tryLock('node:0000000001', a.id));
        await store.closeSession(b.id);
        await storeError(store.tryLock('node:0000000001', b.id));
        await storeError(store.tryLock('node:0000000001', 'never-opened'));
        assert.equal(await store.getLock('node:0000000001'), undefined);
      });

      void it('lists locks by resource prefix', async () => {
        const a = await session();
        for (const r of ['request:100-0000000002', 'node:0000000002', 'node:0000000001', 'nodes', 'request:050-0000000003']) {
          assert.equal(await store.tryLock(r, a.id), true);
        }
        assert.deepEqual((await store.listLocks('node:')).map((l) => l.resource), ['node:0000000001', 'node:0000000002']);
        assert.deepEqual((await store.listLocks('request:')).map((l) => l.resource), ['request:050-0000000003', 'request:100-0000000002']);
        assert.equal((await store.listLocks()).length, 5);
        assert.deepEqual(await store.listLocks('zzz'), []);
      });

      void it('removes the lock of a node or request when the record is deleted', async () => {
        const s = await session();
        const n = await store.createNode({ state: 'ready', provider: 'cloud-a', pool: 'main', labels: ['small'] });
        const r = await store.createRequest({ labels: ['small'], requestor: 'zuul' });
        assert.equal(await store.tryLock(`node:${n.id}`, s.id), true);
        assert.equal(await store.tryLock(`request:${r.id}`, s.id), true);
        assert.equal(await store.deleteNode(n.id), true);
        assert.equal(await store.getLock(`node:${n.id}`), undefined);
        assert.equal(await store.deleteRequest(r.id), true);
        assert.deepEqual(await store.listLocks(), []);
      });

      void it('closes a session with its locks, launchers and ephemeral requests, leaving the rest', async () => {
        const a = await session(1);
        const b = await session(2);
        await store.tryLock('node:0000000001', a.id);
        await store.tryLock('node:0000000002', b.id);
        await launcher('host-1-1-PoolWorker.cloud-a-main', a.id);
        await launcher('host-1-2-PoolWorker.cloud-a-main', b.id);
        const ephemeral = await store.createRequest({ labels: ['small'], requestor: 'cli', requestorSession: a.id });
        const kept = await store.createRequest({ labels: ['small'], requestor: 'zuul' });
        const others = await store.createRequest({ labels: ['small'], requestor: 'cli', requestorSession: b.id });
        await store.tryLock(`request:${ephemeral.id}`, b.id);
        await store.closeSession(a.id);
        await store.closeSession(a.id);
        assert.equal(await store.getSession(a.id), undefined);
        assert.deepEqual((await store.listLocks()).map((l) => l.resource), ['node:0000000002']);
        assert.deepEqual((await store.listLaunchers()).map((l) => l.id), ['host-1-2-PoolWorker.cloud-a-main']);
        assert.deepEqual(ids(await store.listRequests()), [kept.id, others.id]);
      });

      void it('reaps lapsed sessions with their locks, launchers and ephemeral requests, and counts them', async () => {
        const old = await session(1);
        const live = await session(2);
        await store.tryLock('node:0000000001', old.id);
        await store.tryLock('node:0000000002', old.id);
        await store.tryLock('node:0000000003', live.id);
        await launcher('old-launcher', old.id);
        await launcher('live-launcher', live.id);
        const gone = await store.createRequest({ labels: ['small'], requestor: 'cli', requestorSession: old.id });
        const orphan = await store.createRequest({ labels: ['small'], requestor: 'cli', requestorSession: 'closed-long-ago' });
        const kept = await store.createRequest({ labels: ['small'], requestor: 'cli', requestorSession: live.id });
        const plain = await store.createRequest({ labels: ['small'], requestor: 'zuul' });
        await store.tryLock(`request:${gone.id}`, live.id);
        now = T0 + TTL + 1;
        await store.renewSession(live.id);
        assert.deepEqual(await store.reapSessions(), { sessions: 1, locks: 3, launchers: 1, requests: 2 });
        assert.deepEqual((await store.listSessions()).map((s) => s.id), [live.id]);
        assert.deepEqual((await store.listLocks()).map((l) => l.resource), ['node:0000000003']);
        assert.deepEqual((await store.listLaunchers()).map((l) => l.id), ['live-launcher']);
        assert.deepEqual(ids(await store.listRequests()), [kept.id, plain.id].sort());
        assert.equal(await store.getRequest(orphan.id), undefined);
        assert.deepEqual(await store.reapSessions(), { sessions: 0, locks: 0, launchers: 0, requests: 0 });
      });

      void it('registers and refreshes a launcher, and lists only those of live sessions', async () => {
        const a = await session(1);
        const b = await session(2);
        const first = await launcher('L1', a.id);
        assert.deepEqual(first, { id: 'L1', sessionId: a.id, provider: 'cloud-a', pool: 'main', supportedLabels: ['small'], registered: T0 });
        now = T0 + 5;
        const again = await store.registerLauncher({ id: 'L1', sessionId: a.id, provider: 'cloud-a', pool: 'main', supportedLabels: ['small', 'large'] });
        assert.deepEqual(again, { ...first, supportedLabels: ['small', 'large'], registered: T0 + 5 });
        await launcher('L2', b.id);
        assert.deepEqual((await store.listLaunchers()).map((l) => l.id), ['L1', 'L2']);
        now = T0 + TTL + 1;
        await store.renewSession(b.id);
        assert.deepEqual((await store.listLaunchers()).map((l) => l.id), ['L2']);
        await storeError(launcher('L3', a.id));
        await store.unregisterLauncher('L2');
        await store.unregisterLauncher('L2');
        assert.deepEqual(await store.listLaunchers(), []);
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
