/**
 * The store contract's Nodepool 11 fields (issue 21 §2): the node and request fields Zuul
 * reads and writes, and the launcher registration's pool priority and paused flag. Part of
 * storeContract in store.contract.ts; the component registry's znodes are checked against a
 * real ZooKeeper in test/integration/store/zookeeper-components.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { NewNode, NodeRecord, SessionRecord } from '../../lib/store/models.js';
import { storeError, T0, type StoreHarness } from './store-helpers.js';

/** Registers the Nodepool 11 field suites on the harness's current store. */
export function nodepool11StoreContract(h: StoreHarness): void {
  void describe('Nodepool 11 node and request fields', () => {
    const node = (over: Partial<NewNode> = {}): Promise<NodeRecord> =>
      h.store.createNode({ state: 'ready', provider: 'static-a', pool: 'main', labels: ['small'], ...over });

    void it('keeps every Nodepool 11 node field through create, get and list', async () => {
      const fields = {
        pythonPath: '/usr/bin/python3', shellType: 'sh', tenantName: 'tenant-one', requestor: 'zuul-scheduler',
        driverData: { volume: 'v-1', tags: ['a'] }, userData: { zuul_system: 'sys-1', project_name: 'org/repo' },
        holdJob: 'tenant-one org/repo check job-1 .*', slot: 2, hostId: 'host-abc',
      };
      const n = await node(fields);
      for (const got of [n, await h.store.getNode(n.id), (await h.store.listNodes())[0]]) {
        assert.deepEqual(got && Object.fromEntries(Object.keys(fields).map((k) => [k, got[k as keyof NodeRecord]])), fields);
      }
    });

    void it('keeps what a consumer writes to a node (user_data, hold_job, comment, hold expiration) through update', async () => {
      const n = await node();
      h.now = T0 + 1000;
      const updated = await h.store.updateNode(n.id, {
        state: 'hold', userData: { zuul_system: 'sys-1' }, holdJob: 'job-1', holdReason: 'debugging', holdExpiration: T0 + 1000 + 3_600_000,
      });
      const got = await h.store.getNode(n.id);
      for (const rec of [updated, got]) {
        assert.deepEqual(rec?.userData, { zuul_system: 'sys-1' });
        assert.equal(rec?.holdJob, 'job-1');
        assert.equal(rec?.holdReason, 'debugging');
        assert.equal(rec?.holdExpiration, T0 + 1000 + 3_600_000);
      }
      await h.store.updateNode(n.id, { userData: null, holdJob: null });
      assert.equal((await h.store.getNode(n.id))?.userData, null);
      assert.equal((await h.store.getNode(n.id))?.holdJob, null);
    });

    void it('reads a node given no python path, or null, as auto (what Zuul assumes)', async () => {
      assert.equal((await node()).pythonPath, 'auto');
      const n = await node({ pythonPath: null });
      assert.equal((await h.store.getNode(n.id))?.pythonPath, 'auto');
    });

    void it('keeps a build\'s username, python_path and shell_type, copies them to its uploads, and leaves out what it was not given', async () => {
      const b = await h.store.createBuild({ diskimage: 'deb', formats: ['qcow2'], username: 'debian', pythonPath: '/usr/bin/python3', shellType: null });
      const plain = await h.store.createBuild({ diskimage: 'deb', formats: ['qcow2'] });
      const up = await h.store.createUpload({ buildId: b.id, provider: 'cloud-a', imageName: 'deb', externalName: null });
      const own = await h.store.createUpload({ buildId: b.id, provider: 'cloud-b', imageName: 'deb', externalName: null, username: 'root' });
      const bare = await h.store.createUpload({ buildId: plain.id, provider: 'cloud-a', imageName: 'deb', externalName: null });
      const fieldsOf = (r: { username?: string | null; pythonPath?: string | null; shellType?: string | null } | undefined): Record<string, unknown> =>
        Object.fromEntries((['username', 'pythonPath', 'shellType'] as const).filter((k) => r !== undefined && k in r).map((k) => [k, r?.[k]]));
      for (const got of [b, await h.store.getBuild(b.id)]) assert.deepEqual(fieldsOf(got), { username: 'debian', pythonPath: '/usr/bin/python3', shellType: null });
      for (const got of [up, await h.store.getUpload(up.id)]) assert.deepEqual(fieldsOf(got), { username: 'debian', pythonPath: '/usr/bin/python3', shellType: null });
      assert.deepEqual(fieldsOf(await h.store.getUpload(own.id)), { username: 'root', pythonPath: '/usr/bin/python3', shellType: null });
      assert.deepEqual(fieldsOf(await h.store.getBuild(plain.id)), {});
      assert.deepEqual(fieldsOf(await h.store.getUpload(bare.id)), {});
    });

    void it('gives a request the tenant it names, relative priority 0 and an event id of its own', async () => {
      const a = await h.store.createRequest({ labels: ['small'], requestor: 'zuul', tenantName: 'tenant-one' });
      const b = await h.store.createRequest({ labels: ['small'], requestor: 'zuul' });
      assert.equal(a.tenantName, 'tenant-one');
      assert.equal(b.tenantName, null);
      assert.equal(a.relativePriority, 0);
      assert.notEqual(a.eventId, b.eventId);
      const got = await h.store.getRequest(a.id);
      assert.deepEqual([got?.tenantName, got?.relativePriority, got?.eventId], ['tenant-one', 0, a.eventId]);
      await h.store.updateRequest(a.id, { state: 'pending' });
      const listed = (await h.store.listRequests({ states: ['pending'] }))[0];
      assert.deepEqual([listed?.tenantName, listed?.eventId], ['tenant-one', a.eventId]);
    });
  });

  void describe('Nodepool 11 pool priority and paused', () => {
    const session = (): Promise<SessionRecord> => h.store.openSession({ owner: 'nodepool-server', hostname: 'nl01.example.org', pid: 1, ttlMs: 10_000 });

    void it('registers a launcher with its priority and paused flag, and a refresh that names neither keeps them', async () => {
      const s = await session();
      const l = await h.store.registerLauncher({ id: 'L1', sessionId: s.id, provider: 'cloud-a', pool: 'main', supportedLabels: ['small'], priority: 50, paused: true });
      assert.deepEqual([l.priority, l.paused], [50, true]);
      const again = await h.store.registerLauncher({ id: 'L1', sessionId: s.id, provider: 'cloud-a', pool: 'main', supportedLabels: ['small', 'large'] });
      assert.deepEqual([again.priority, again.paused, again.supportedLabels], [50, true, ['small', 'large']]);
      const listed = await h.store.listLaunchers();
      assert.deepEqual(listed.map((x) => [x.id, x.priority, x.paused]), [['L1', 50, true]]);
    });

    void it('updates a registered launcher\'s labels, priority and paused flag, and nothing for an unknown one', async () => {
      const s = await session();
      await h.store.registerLauncher({ id: 'L1', sessionId: s.id, provider: 'cloud-a', pool: 'main', supportedLabels: ['small'] });
      const paused = await h.store.updateLauncher('L1', { paused: true });
      assert.deepEqual([paused?.paused, paused?.priority, paused?.supportedLabels], [true, 100, ['small']]);
      await h.store.updateLauncher('L1', { priority: 10, supportedLabels: ['large'] });
      const listed = (await h.store.listLaunchers())[0];
      assert.deepEqual([listed?.paused, listed?.priority, listed?.supportedLabels, listed?.sessionId], [true, 10, ['large'], s.id]);
      assert.equal(await h.store.updateLauncher('nobody', { paused: true }), undefined);
      await storeError(h.store.updateLauncher('L1', { priority: 1.5 }));
      assert.equal((await h.store.listLaunchers())[0]?.priority, 10);
    });

    void it('accepts component registrations for a live session and refuses them for an unknown one', async () => {
      const s = await session();
      await h.store.publishComponents(s.id, 'launcher', [{ hostname: 'nl01.example.org', state: 'running' }]);
      await h.store.publishComponents(s.id, 'builder', [{ hostname: 'nb01', state: 'running' }, { hostname: 'nb02', state: 'running' }]);
      await h.store.publishComponents(s.id, 'builder', []);
      await storeError(h.store.publishComponents('no-such-session', 'launcher', [{ hostname: 'nl01', state: 'running' }]));
    });
  });
}
