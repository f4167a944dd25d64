/**
 * The store contract for corrupt records (ARCHITECTURE.md "Corrupt records are data, not
 * crashes"): a record that does not parse or validate is left out of the list calls, named by
 * listCorrupt with its id and a reason, refused by get and update, and removed by the ordinary
 * delete call; the records beside it read as before.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CorruptRecordError, StoreError } from '../../lib/errors.js';
import type { Spoil } from './spoil.js';
import { ids, storeError, type StoreHarness } from './store-helpers.js';

/** Registers the corrupt-record cases; `spoil()` is the current test's spoiler. */
export function corruptRecordContract(h: StoreHarness, spoil: () => Spoil): void {
  void describe('corrupt records', () => {
    void it('leaves a build that does not parse out of listBuilds, names it in listCorrupt, refuses get and update, and deletes it', async () => {
      const s = h.store;
      const bad = await s.createBuild({ diskimage: 'debian', formats: ['qcow2'] });
      const good = await s.createBuild({ diskimage: 'debian', formats: ['qcow2'] });
      const other = await s.createBuild({ diskimage: 'fedora', formats: ['qcow2'] });
      await spoil()({ kind: 'build', id: bad.id }, 'garbage');
      assert.deepEqual(ids(await s.listBuilds()), [good.id, other.id]);
      assert.deepEqual(ids(await s.listBuilds({ diskimage: 'debian' })), [good.id]);
      const corrupt = await s.listCorrupt();
      assert.equal(corrupt.length, 1);
      assert.deepEqual({ ...corrupt[0], reason: undefined }, { kind: 'build', id: bad.id, diskimage: 'debian', reason: undefined });
      assert.match(corrupt[0]?.reason ?? '', /JSON/);
      assert.doesNotMatch(corrupt[0]?.reason ?? '', /garbage/, 'the reason never quotes the content');
      await storeError(s.getBuild(bad.id), CorruptRecordError);
      await storeError(s.updateBuild(bad.id, { state: 'ready' }), StoreError);
      assert.equal((await s.updateBuild(good.id, { state: 'ready' }))?.state, 'ready');
      assert.equal(await s.deleteBuild(bad.id), true);
      assert.deepEqual(await s.listCorrupt(), []);
      assert.deepEqual(ids(await s.listBuilds()), [good.id, other.id]);
      const next = await s.createBuild({ diskimage: 'debian', formats: ['qcow2'] });
      assert.ok(next.id > good.id, 'the corrupt build\'s id is not taken again');
    });

    void it('treats a build in a state no version knows as corrupt', async () => {
      const b = await h.store.createBuild({ diskimage: 'debian', formats: ['qcow2'] });
      await spoil()({ kind: 'build', id: b.id }, 'unknown-state');
      assert.deepEqual(await h.store.listBuilds(), []);
      assert.deepEqual(await h.store.listBuilds({ states: ['building'] }), []);
      const [c] = await h.store.listCorrupt({ kinds: ['build'] });
      assert.match(c?.reason ?? '', /unknown state "exploded"/);
    });

    void it('leaves a corrupt upload out of listUploads and deletes it, then its build', async () => {
      const s = h.store;
      const b = await s.createBuild({ diskimage: 'debian', formats: ['qcow2'] });
      const bad = await s.createUpload({ buildId: b.id, provider: 'cloud-a', imageName: 'img', externalName: null });
      const good = await s.createUpload({ buildId: b.id, provider: 'cloud-b', imageName: 'img', externalName: null });
      await spoil()({ kind: 'upload', id: bad.id, buildId: b.id, provider: 'cloud-a' }, 'garbage');
      assert.deepEqual(ids(await s.listUploads()), [good.id]);
      assert.deepEqual(ids(await s.listUploads({ buildId: b.id })), [good.id]);
      const [c] = await s.listCorrupt();
      assert.equal(c?.kind, 'upload');
      assert.equal(c?.id, bad.id);
      assert.equal(c?.provider, 'cloud-a');
      await storeError(s.getUpload(bad.id), CorruptRecordError);
      assert.equal(await s.deleteUpload(bad.id), true);
      assert.equal(await s.deleteUpload(good.id), true);
      assert.equal(await s.deleteBuild(b.id), true);
      assert.deepEqual(await s.listCorrupt(), []);
    });

    void it('leaves a node with an unknown state or no time out of listNodes, names both, and deletes them', async () => {
      const s = h.store;
      const mk = (): ReturnType<typeof s.createNode> => s.createNode({ state: 'ready', provider: 'p', pool: 'main', labels: ['small'] });
      const [a, b, good] = [await mk(), await mk(), await mk()];
      await spoil()({ kind: 'node', id: a.id }, 'unknown-state');
      await spoil()({ kind: 'node', id: b.id }, 'no-time');
      assert.deepEqual(ids(await s.listNodes()), [good.id]);
      assert.deepEqual(ids(await s.listNodes({ label: 'small', states: ['ready'] })), [good.id]);
      const corrupt = await s.listCorrupt();
      assert.deepEqual(corrupt.map((c) => [c.kind, c.id]), [['node', a.id], ['node', b.id]]);
      await storeError(s.getNode(a.id), CorruptRecordError);
      await storeError(s.updateNode(b.id, { state: 'deleting' }), CorruptRecordError);
      assert.equal(await s.deleteNode(a.id), true);
      assert.equal(await s.deleteNode(b.id), true);
      assert.deepEqual(await s.listCorrupt(), []);
      assert.deepEqual(ids(await s.listNodes()), [good.id]);
    });

    void it('names what a corrupt node still says, its external id and provider where they can be read (listCorruptNodes, for leak cleanup)', async () => {
      const s = h.store;
      const mk = (externalId: string): ReturnType<typeof s.createNode> =>
        s.createNode({ state: 'in-use', provider: 'p', pool: 'main', labels: ['small'], externalId });
      const [a, b, good] = [await mk('server-a'), await mk('server-b'), await mk('server-c')];
      assert.deepEqual(await s.listCorruptNodes(), []);
      await spoil()({ kind: 'node', id: a.id }, 'unknown-state');
      await spoil()({ kind: 'node', id: b.id }, 'garbage');
      const claims = await s.listCorruptNodes();
      assert.deepEqual(claims.map((c) => c.id), [a.id, b.id]);
      assert.deepEqual(claims[0], { id: a.id, externalId: 'server-a', provider: 'p' });
      // Garbage in a znode is no JSON at all, so only its id is known; a SQLite row keeps its other columns.
      assert.ok(claims[1]?.externalId === null || claims[1]?.externalId === 'server-b', String(claims[1]?.externalId));
      assert.deepEqual(ids(await s.listNodes()), [good.id]);
      assert.equal(await s.deleteNode(a.id), true);
      assert.equal(await s.deleteNode(b.id), true);
      assert.deepEqual(await s.listCorruptNodes(), []);
    });

    void it('leaves a request that does not parse out of listRequests and deletes it', async () => {
      const s = h.store;
      const bad = await s.createRequest({ labels: ['small'], requestor: 'zuul' });
      const good = await s.createRequest({ labels: ['small'], requestor: 'zuul' });
      await spoil()({ kind: 'request', id: bad.id }, 'garbage');
      assert.deepEqual(ids(await s.listRequests()), [good.id]);
      assert.deepEqual(ids(await s.listRequests({ states: ['requested'] })), [good.id]);
      assert.deepEqual((await s.listCorrupt()).map((c) => [c.kind, c.id]), [['request', bad.id]]);
      await storeError(s.getRequest(bad.id), CorruptRecordError);
      assert.equal(await s.deleteRequest(bad.id), true);
      assert.deepEqual(await s.listCorrupt(), []);
    });

    void it('keeps a corrupt pause pausing (its existence is the intent), names it, and removes it on unpause', async () => {
      const s = h.store;
      await s.setPause('debian', null, true, 'operator');
      await s.setPause('debian', 'cloud-a', true, 'operator');
      await spoil()({ kind: 'pause', diskimage: 'debian', provider: null }, 'no-time');
      const pauses = await s.listPauses();
      assert.deepEqual(pauses.map((p) => [p.diskimage, p.provider]), [['debian', null], ['debian', 'cloud-a']]);
      assert.match(pauses[0]?.reason ?? '', /corrupt pause record/);
      assert.deepEqual((await s.listCorrupt()).map((c) => [c.kind, c.id]), [['pause', 'debian']]);
      await s.setPause('debian', null, true, 'again');
      assert.deepEqual(await s.listCorrupt(), [], 'pausing again replaces the corrupt pause');
      assert.equal((await s.listPauses())[0]?.reason, 'again');
      await spoil()({ kind: 'pause', diskimage: 'debian', provider: null }, 'no-time');
      await s.setPause('debian', null, false);
      assert.deepEqual(await s.listCorrupt(), []);
      assert.deepEqual((await s.listPauses()).map((p) => p.provider), ['cloud-a']);
    });
  });
}
