/**
 * The store contract's node, node-request and session/lock/launcher suites (part of
 * storeContract in store.contract.ts, split out by entity).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { StateConflictError } from '../../lib/errors.js';
import type { LauncherRecord, NewNode, NewNodeRequest, NodeRecord, NodeRequestRecord, NodeState, SessionRecord } from '../../lib/store/models.js';
import { ids, storeError, T0, type StoreHarness } from './store-helpers.js';

/** Registers the node, request and session suites on the harness's current store. */
export function nodeStoreContract(h: StoreHarness): void {
  void describe('nodes', () => {
    const node = (over: Partial<NewNode> = {}): Promise<NodeRecord> =>
      h.store.createNode({ state: 'building', provider: 'cloud-a', pool: 'main', labels: ['small'], ...over });

    void it('creates a node with id 0000000001 and every field it was not given empty', async () => {
      h.now = T0 + 3;
      const n = await node({ labels: ['small', 'fast'] });
      assert.deepEqual(n, {
        id: '0000000001', state: 'building', stateTime: T0 + 3, created: T0 + 3, provider: 'cloud-a', pool: 'main',
        labels: ['small', 'fast'], launcher: null, allocatedTo: null, hostname: null, interfaceIp: null, publicIpv4: null,
        publicIpv6: null, privateIpv4: null, connectionType: 'ssh', connectionPort: 22, username: null, hostKeys: [],
        externalId: null, cloud: null, region: null, az: null, image: null, resources: null, attributes: {}, reason: null,
        holdReason: null, holdExpiration: null, consumerSession: null, handedOff: false, validatesUpload: null,
        pythonPath: 'auto', shellType: null, tenantName: null, requestor: null, driverData: null, userData: null,
        holdJob: null, slot: null, hostId: null,
      });
      assert.deepEqual(await h.store.getNode(n.id), n);
    });

    void it('keeps the fields a new node is given', async () => {
      const n = await node({
        state: 'ready', launcher: 'host-1-PoolWorker.cloud-a-main', hostname: 'static-1', interfaceIp: '192.0.2.5',
        connectionType: 'winrm', connectionPort: 5986, username: 'zuul', hostKeys: ['ssh-ed25519 AAAA'],
        resources: { cores: 2, ram: 4096, instances: 1 }, attributes: { site: 'lab' }, holdExpiration: T0 + 60_000,
      });
      const got = await h.store.getNode(n.id);
      assert.equal(got?.state, 'ready');
      assert.equal(got?.launcher, 'host-1-PoolWorker.cloud-a-main');
      assert.equal(got?.connectionType, 'winrm');
      assert.equal(got?.connectionPort, 5986);
      assert.deepEqual(got?.hostKeys, ['ssh-ed25519 AAAA']);
      assert.deepEqual(got?.resources, { cores: 2, ram: 4096, instances: 1 });
      assert.deepEqual(got?.attributes, { site: 'lab' });
      assert.equal(got?.holdExpiration, T0 + 60_000);
    });

    void it('keeps whether an in-use node was handed off, through create and update', async () => {
      const n = await node({ state: 'in-use', handedOff: true });
      assert.equal((await h.store.getNode(n.id))?.handedOff, true);
      await h.store.updateNode(n.id, { state: 'used', handedOff: false });
      assert.equal((await h.store.getNode(n.id))?.handedOff, false);
      assert.equal((await h.store.listNodes({ states: ['used'] }))[0]?.handedOff, false);
    });

    void it('keeps the upload a validation node validates, through create, update, get and list', async () => {
      const n = await node({ state: 'init', allocatedTo: 'validation-0000000007', validatesUpload: '0000000007', image: '0000000007' });
      assert.equal(n.validatesUpload, '0000000007');
      assert.equal((await h.store.getNode(n.id))?.validatesUpload, '0000000007');
      const listed = await h.store.listNodes({ allocatedTo: 'validation-0000000007' });
      assert.deepEqual(listed.map((x) => [x.id, x.validatesUpload, x.image]), [[n.id, '0000000007', '0000000007']]);
      await h.store.updateNode(n.id, { state: 'deleting', validatesUpload: null });
      assert.equal((await h.store.getNode(n.id))?.validatesUpload, null);
      await h.store.updateNode(n.id, { validatesUpload: '0000000008' });
      assert.equal((await h.store.listNodes({ states: ['deleting'] }))[0]?.validatesUpload, '0000000008');
    });

    void it('numbers nodes in one sequence that never reuses an id after a delete', async () => {
      const a = await node();
      const b = await node({ provider: 'cloud-b' });
      assert.deepEqual([a.id, b.id], ['0000000001', '0000000002']);
      assert.equal(await h.store.deleteNode(b.id), true);
      assert.equal(await h.store.deleteNode(a.id), true);
      assert.equal((await node()).id, '0000000003');
      assert.equal(await h.store.deleteNode(b.id), false);
      assert.equal(await h.store.getNode(b.id), undefined);
    });

    void it('refuses an unknown node state with StoreError', async () => {
      await storeError(node({ state: 'exploded' as NodeState }));
      assert.deepEqual(await h.store.listNodes(), []);
    });

    void it('lists nodes by id and filters by provider, pool, any label, states and allocatedTo', async () => {
      const a = await node({ provider: 'cloud-b', labels: ['small'] });
      const b = await node({ provider: 'cloud-a', pool: 'gpu', labels: ['gpu', 'large'], state: 'ready' });
      const c = await node({ provider: 'static', labels: ['small', 'large'], state: 'ready', allocatedTo: '100-0000000001' });
      const d = await node({ provider: 'cloud-a', labels: ['small-ish'], state: 'deleting' });
      assert.deepEqual(ids(await h.store.listNodes()), [a.id, b.id, c.id, d.id]);
      assert.deepEqual(ids(await h.store.listNodes({ provider: 'cloud-a' })), [b.id, d.id]);
      assert.deepEqual(ids(await h.store.listNodes({ pool: 'gpu' })), [b.id]);
      assert.deepEqual(ids(await h.store.listNodes({ label: 'large' })), [b.id, c.id]);
      assert.deepEqual(ids(await h.store.listNodes({ label: 'small' })), [a.id, c.id]);
      assert.deepEqual(ids(await h.store.listNodes({ label: 'smal' })), []);
      assert.deepEqual(ids(await h.store.listNodes({ states: ['ready', 'deleting'] })), [b.id, c.id, d.id]);
      assert.deepEqual(ids(await h.store.listNodes({ allocatedTo: '100-0000000001' })), [c.id]);
      assert.deepEqual(ids(await h.store.listNodes({ provider: 'cloud-a', label: 'large', states: ['ready'] })), [b.id]);
      assert.deepEqual(await h.store.listNodes({ states: [] }), []);
      assert.deepEqual(await h.store.listNodes({ allocatedTo: '100-0000000002' }), []);
    });

    void it('sets stateTime only when an update changes the state', async () => {
      const n = await node();
      h.now = T0 + 10;
      const noted = await h.store.updateNode(n.id, { hostname: 'h1', externalId: 'srv-1', publicIpv4: '198.51.100.7' });
      assert.equal(noted?.stateTime, T0);
      assert.equal(noted?.externalId, 'srv-1');
      h.now = T0 + 20;
      const ready = await h.store.updateNode(n.id, { state: 'ready', hostKeys: ['ssh-rsa AAAA'], labels: ['small', 'x'] });
      assert.equal(ready?.stateTime, T0 + 20);
      assert.deepEqual(ready?.hostKeys, ['ssh-rsa AAAA']);
      assert.deepEqual(ready?.labels, ['small', 'x']);
      h.now = T0 + 30;
      const again = await h.store.updateNode(n.id, { state: 'ready', allocatedTo: '100-0000000004' });
      assert.equal(again?.stateTime, T0 + 20);
      assert.equal(again?.created, T0);
      assert.deepEqual(await h.store.getNode(n.id), again);
      const cleared = await h.store.updateNode(n.id, { allocatedTo: null, resources: null });
      assert.equal(cleared?.allocatedTo, null);
      assert.deepEqual(await h.store.listNodes({ allocatedTo: '100-0000000004' }), []);
    });

    void it('rejects a conditional node update from another state with StateConflictError and changes nothing', async () => {
      const n = await node();
      const inUse = await h.store.updateNode(n.id, { state: 'in-use' });
      h.now = T0 + 50;
      const err = await storeError(h.store.updateNode(n.id, { state: 'deleting', reason: 'cleanup' }, { expectStates: ['used', 'failed'] }), StateConflictError);
      assert.equal(err.recordId, n.id);
      assert.equal(err.actualState, 'in-use');
      assert.deepEqual(await h.store.getNode(n.id), inUse);
      assert.equal((await h.store.updateNode(n.id, { state: 'used' }, { expectStates: ['in-use'] }))?.stateTime, T0 + 50);
      assert.equal(await h.store.updateNode('0000000099', { state: 'used' }, { expectStates: ['in-use'] }), undefined);
    });
  });

  void describe('node requests', () => {
    const request = (over: Partial<NewNodeRequest> = {}): Promise<NodeRequestRecord> =>
      h.store.createRequest({ labels: ['small'], requestor: 'zuul', ...over });

    void it('creates a request in state requested with id <priority>-<sequence> and the defaults', async () => {
      h.now = T0 + 4;
      const r = await request({ labels: ['small', 'small', 'large'] });
      // The sequence is the backend's (ZooKeeper numbers sequential znodes itself, from 0): 10 digits, increasing.
      assert.match(r.id, /^100-\d{10}$/);
      assert.deepEqual(r, {
        id: r.id, priority: 100, state: 'requested', stateTime: T0 + 4, created: T0 + 4,
        labels: ['small', 'small', 'large'], requestor: 'zuul', reuse: true, provider: null, declinedBy: [], nodes: [],
        reason: null, requestorSession: null, tenantName: null, relativePriority: 0, eventId: r.eventId,
      });
      // Nodepool gives a request without one a uuid4().hex event_id; Zuul reads it from every request.
      assert.match(r.eventId ?? '', /^[0-9a-f]{32}$/);
      assert.deepEqual(await h.store.getRequest(r.id), r);
      const m = await request({ priority: 7, reuse: false, provider: 'cloud-a', requestor: 'min-ready' });
      assert.match(m.id, /^007-\d{10}$/);
      assert.ok(m.id.slice(4) > r.id.slice(4), `${m.id} is numbered after ${r.id}`);
      assert.equal(m.reuse, false);
      assert.equal(m.provider, 'cloud-a');
    });

    void it('tells change listeners about a request created or put back to requested through the same handle', async () => {
      let heard = 0;
      const off = h.store.onChange(() => { heard += 1; });
      const r = await request();
      await new Promise((resolve) => setImmediate(resolve));
      assert.ok(heard >= 1, 'heard of the new request');
      await h.store.updateRequest(r.id, { state: 'pending' });
      const before = heard;
      await h.store.updateRequest(r.id, { state: 'requested' });
      await new Promise((resolve) => setImmediate(resolve));
      assert.ok(heard > before, 'heard of the request put back');
      off();
      const after = heard;
      await request();
      await new Promise((resolve) => setTimeout(resolve, 100));
      assert.equal(heard, after, 'nothing after unsubscribing');
    });

    void it('lists requests by priority, then age, and filters by states and requestor', async () => {
      const a = await request();
      const b = await request({ requestor: 'nodepool' });
      const c = await request({ priority: 50 });
      const d = await request({ priority: 999 });
      assert.deepEqual(ids(await h.store.listRequests()), [c.id, a.id, b.id, d.id]);
      await h.store.updateRequest(a.id, { state: 'pending' });
      assert.deepEqual(ids(await h.store.listRequests({ states: ['requested'] })), [c.id, b.id, d.id]);
      assert.deepEqual(ids(await h.store.listRequests({ requestor: 'nodepool' })), [b.id]);
      assert.deepEqual(ids(await h.store.listRequests({ states: ['pending'], requestor: 'zuul' })), [a.id]);
      assert.deepEqual(await h.store.listRequests({ states: [] }), []);
    });

    void it('refuses a priority outside 0..999 with StoreError', async () => {
      await storeError(request({ priority: 1000 }));
      await storeError(request({ priority: -1 }));
      await storeError(request({ priority: 1.5 }));
      assert.deepEqual(await h.store.listRequests(), []);
      assert.equal((await request({ priority: 0 })).id.slice(0, 4), '000-');
    });

    void it('updates a request, conditionally, and sets stateTime only on a state change', async () => {
      const r = await request();
      h.now = T0 + 10;
      const declined = await h.store.updateRequest(r.id, { declinedBy: ['launcher-1'] });
      assert.equal(declined?.stateTime, T0);
      assert.deepEqual(declined?.declinedBy, ['launcher-1']);
      h.now = T0 + 20;
      const pending = await h.store.updateRequest(r.id, { state: 'pending' }, { expectStates: ['requested'] });
      assert.equal(pending?.stateTime, T0 + 20);
      const err = await storeError(h.store.updateRequest(r.id, { state: 'pending' }, { expectStates: ['requested'] }), StateConflictError);
      assert.equal(err.actualState, 'pending');
      assert.deepEqual(await h.store.getRequest(r.id), pending);
      h.now = T0 + 30;
      const done = await h.store.updateRequest(r.id, { state: 'fulfilled', nodes: ['0000000003'] }, { expectStates: ['pending'] });
      assert.deepEqual(done?.nodes, ['0000000003']);
      assert.equal(done?.stateTime, T0 + 30);
      assert.equal(await h.store.updateRequest('100-0000000099', { state: 'failed' }), undefined);
    });

    void it('deletes a request once, and its sequence value is not reused', async () => {
      const r = await request();
      assert.equal(await h.store.deleteRequest(r.id), true);
      assert.equal(await h.store.getRequest(r.id), undefined);
      assert.equal(await h.store.deleteRequest(r.id), false);
      const next = await request();
      assert.match(next.id, /^100-\d{10}$/);
      assert.ok(next.id > r.id, `${next.id} is numbered after the deleted ${r.id}`);
    });
  });

  void describe('sessions, locks and launchers', () => {
    const TTL = 10_000;
    const session = (pid = 1): Promise<SessionRecord> => h.store.openSession({ owner: 'nodepool-server', hostname: 'host-1', pid, ttlMs: TTL });
    const launcher = (id: string, sessionId: string): Promise<LauncherRecord> =>
      h.store.registerLauncher({ id, sessionId, provider: 'cloud-a', pool: 'main', supportedLabels: ['small'] });

    void it('opens a session that is live until its TTL passes without a renewal', async () => {
      const s = await session();
      assert.deepEqual(s, { id: s.id, owner: 'nodepool-server', hostname: 'host-1', pid: 1, created: T0, renewed: T0, ttlMs: TTL });
      assert.deepEqual(await h.store.getSession(s.id), s);
      const other = await session(2);
      assert.notEqual(other.id, s.id);
      h.now = T0 + TTL;
      assert.equal(await h.store.isSessionLive(s.id), true);
      await h.lapse(s.id);
      assert.equal(await h.store.isSessionLive(s.id), false);
      assert.equal(await h.store.isSessionLive('no-such-session'), false);
      // A lease backend lists the lapsed session until it is reaped; ZooKeeper has dropped it.
      const listed = (await h.store.listSessions()).map((x) => x.id);
      assert.ok(listed.includes(other.id));
      assert.equal(listed.length, h.lapsedSessionsVanish ? 1 : 2);
    });

    void it('renews a live session, and a lapsed one only until it is reaped (or not at all where lapsed sessions vanish)', async () => {
      const s = await session();
      h.now = T0 + 5;
      assert.equal(await h.store.renewSession(s.id), true);
      assert.equal((await h.store.getSession(s.id))?.renewed, T0 + 5);
      await h.lapse(s.id);
      if (!h.lapsedSessionsVanish) {
        const at = h.now;
        assert.equal(await h.store.renewSession(s.id), true);
        assert.equal(await h.store.isSessionLive(s.id), true);
        assert.equal((await h.store.getSession(s.id))?.renewed, at);
        await h.lapse(s.id);
        assert.deepEqual(await h.store.reapSessions(), { sessions: 1, locks: 0, launchers: 0, requests: 0 });
      }
      assert.equal(await h.store.renewSession(s.id), false);
      assert.equal(await h.store.getSession(s.id), undefined);
      const again = await session(2);
      assert.equal(await h.store.isSessionLive(again.id), true, 'a new session works');
    });

    void it('gives a lock to one session at a time and lets the holder take it again', async () => {
      const a = await session(1);
      const b = await session(2);
      h.now = T0 + 5;
      assert.equal(await h.store.tryLock('node:0000000001', a.id), true);
      assert.equal(await h.store.tryLock('node:0000000001', b.id), false);
      h.now = T0 + 6;
      assert.equal(await h.store.tryLock('node:0000000001', a.id), true);
      assert.deepEqual(await h.store.getLock('node:0000000001'), { resource: 'node:0000000001', sessionId: a.id, acquired: T0 + 5, live: true });
      assert.equal(await h.store.unlock('node:0000000001', b.id), false);
      assert.equal((await h.store.getLock('node:0000000001'))?.sessionId, a.id);
      assert.equal(await h.store.unlock('node:0000000001', a.id), true);
      assert.equal(await h.store.getLock('node:0000000001'), undefined);
      assert.equal(await h.store.tryLock('node:0000000001', b.id), true);
      assert.equal(await h.store.unlock('node:0000000002', b.id), false);
    });

    void it('exclusive tryLock refuses a lock the same session holds, and only one of two concurrent calls wins', async () => {
      const a = await session(1);
      assert.equal(await h.store.tryLock('request:100-0000000001', a.id, { exclusive: true }), true);
      assert.equal(await h.store.tryLock('request:100-0000000001', a.id, { exclusive: true }), false);
      assert.equal(await h.store.tryLock('request:100-0000000001', a.id), true, 'the plain call stays re-entrant');
      const both = await Promise.all([1, 2].map(() => h.store.tryLock('node:0000000009', a.id, { exclusive: true })));
      assert.deepEqual(both.sort(), [false, true]);
    });

    void it("takes over a lapsed session's lock and reports the stale lock as not live before that", async () => {
      const a = await session(1);
      const b = await session(2);
      assert.equal(await h.store.tryLock('request:100-0000000001', a.id), true);
      await h.lapse(a.id);
      await h.store.renewSession(b.id);
      const stale = await h.store.getLock('request:100-0000000001');
      if (h.lapsedSessionsVanish) assert.equal(stale, undefined, 'the lock went with the session');
      else assert.equal(stale?.live, false);
      assert.equal(await h.store.tryLock('request:100-0000000001', b.id), true);
      assert.deepEqual(await h.store.getLock('request:100-0000000001'),
        { resource: 'request:100-0000000001', sessionId: b.id, acquired: h.now, live: true });
      assert.equal(await h.store.unlock('request:100-0000000001', a.id), false);
    });

    void it('refuses tryLock by a lapsed, closed or unknown session with StoreError', async () => {
      const a = await session();
      const b = await session(2);
      await h.lapse(a.id);
      await storeError(h.store.tryLock('node:0000000001', a.id));
      await h.store.closeSession(b.id);
      await storeError(h.store.tryLock('node:0000000001', b.id));
      await storeError(h.store.tryLock('node:0000000001', 'never-opened'));
      assert.equal(await h.store.getLock('node:0000000001'), undefined);
    });

    void it('lists locks by resource prefix', async () => {
      const a = await session();
      for (const r of ['request:100-0000000002', 'node:0000000002', 'node:0000000001', 'nodes', 'request:050-0000000003']) {
        assert.equal(await h.store.tryLock(r, a.id), true);
      }
      assert.deepEqual((await h.store.listLocks('node:')).map((l) => l.resource), ['node:0000000001', 'node:0000000002']);
      assert.deepEqual((await h.store.listLocks('request:')).map((l) => l.resource), ['request:050-0000000003', 'request:100-0000000002']);
      assert.equal((await h.store.listLocks()).length, 5);
      assert.deepEqual(await h.store.listLocks('zzz'), []);
    });

    void it('deletes an idle node still as seen in one step, and refuses one locked, changed or gone', async () => {
      const a = await session(1);
      const b = await session(2);
      const n = await h.store.createNode({ state: 'used', provider: 'static-a', pool: 'main', labels: ['small'] });
      const listed = (await h.store.listNodes({ states: ['used'] })).find((x) => x.id === n.id);
      assert.ok(listed);
      assert.equal(await h.store.deleteNodeIfIdle(listed), 'deleted');
      assert.equal(await h.store.getNode(n.id), undefined);
      assert.equal(await h.store.deleteNodeIfIdle(listed), 'gone');

      const m = await h.store.createNode({ state: 'in-use', provider: 'static-a', pool: 'main', labels: ['small'] });
      const seen = await h.store.getNode(m.id);
      assert.ok(seen);
      await h.store.updateNode(m.id, { state: 'used' });
      assert.equal(await h.store.deleteNodeIfIdle(seen), 'changed', 'written since it was seen');
      const used = await h.store.getNode(m.id);
      assert.ok(used);
      assert.equal(await h.store.tryLock(`node:${m.id}`, a.id), true);
      assert.equal(await h.store.deleteNodeIfIdle(used), 'locked');
      assert.equal((await h.store.getNode(m.id))?.state, 'used', 'a locked node stays');
      assert.equal(await h.store.unlock(`node:${m.id}`, a.id), true);
      assert.equal(await h.store.tryLock(`node:${m.id}`, b.id), true);
      await h.lapse(b.id);
      await h.store.renewSession(a.id);
      assert.equal(await h.store.deleteNodeIfIdle(used), 'deleted', 'a lapsed session holds no lock');
      assert.equal(await h.store.getLock(`node:${m.id}`), undefined, 'its lock went with it');
      assert.deepEqual(await h.store.listNodes(), []);
    });

    void it('removes the lock of a node or request when the record is deleted', async () => {
      const s = await session();
      const n = await h.store.createNode({ state: 'ready', provider: 'cloud-a', pool: 'main', labels: ['small'] });
      const r = await h.store.createRequest({ labels: ['small'], requestor: 'zuul' });
      assert.equal(await h.store.tryLock(`node:${n.id}`, s.id), true);
      assert.equal(await h.store.tryLock(`request:${r.id}`, s.id), true);
      assert.equal(await h.store.deleteNode(n.id), true);
      assert.equal(await h.store.getLock(`node:${n.id}`), undefined);
      assert.equal(await h.store.deleteRequest(r.id), true);
      assert.deepEqual(await h.store.listLocks(), []);
    });

    void it('closes a session with its locks, launchers and ephemeral requests, leaving the rest', async () => {
      const a = await session(1);
      const b = await session(2);
      await h.store.tryLock('node:0000000001', a.id);
      await h.store.tryLock('node:0000000002', b.id);
      await launcher('host-1-1-PoolWorker.cloud-a-main', a.id);
      await launcher('host-1-2-PoolWorker.cloud-a-main', b.id);
      const ephemeral = await h.store.createRequest({ labels: ['small'], requestor: 'cli', requestorSession: a.id });
      const kept = await h.store.createRequest({ labels: ['small'], requestor: 'zuul' });
      const others = await h.store.createRequest({ labels: ['small'], requestor: 'cli', requestorSession: b.id });
      await h.store.tryLock(`request:${ephemeral.id}`, b.id);
      await h.store.closeSession(a.id);
      await h.store.closeSession(a.id);
      assert.equal(await h.store.getSession(a.id), undefined);
      assert.deepEqual((await h.store.listLocks()).map((l) => l.resource), ['node:0000000002']);
      assert.deepEqual((await h.store.listLaunchers()).map((l) => l.id), ['host-1-2-PoolWorker.cloud-a-main']);
      assert.deepEqual(ids(await h.store.listRequests()), [kept.id, others.id]);
    });

    void it('reaps lapsed sessions with their locks, launchers and ephemeral requests, and counts them', async () => {
      const old = await session(1);
      const live = await session(2);
      await h.store.tryLock('node:0000000001', old.id);
      await h.store.tryLock('node:0000000002', old.id);
      await h.store.tryLock('node:0000000003', live.id);
      await launcher('old-launcher', old.id);
      await launcher('live-launcher', live.id);
      const gone = await h.store.createRequest({ labels: ['small'], requestor: 'cli', requestorSession: old.id });
      // A request can be made ephemeral only through a live session where sessions are the server's.
      const orphan = h.lapsedSessionsVanish
        ? await storeError(h.store.createRequest({ labels: ['small'], requestor: 'cli', requestorSession: 'closed-long-ago' })).then(() => undefined)
        : await h.store.createRequest({ labels: ['small'], requestor: 'cli', requestorSession: 'closed-long-ago' });
      const kept = await h.store.createRequest({ labels: ['small'], requestor: 'cli', requestorSession: live.id });
      const plain = await h.store.createRequest({ labels: ['small'], requestor: 'zuul' });
      await h.store.tryLock(`request:${gone.id}`, live.id);
      await h.lapse(old.id);
      await h.store.renewSession(live.id);
      // Where lapsed sessions vanish, the server took the session, its locks, launcher and request;
      // what is left to reap is the lock another session holds on that vanished request.
      assert.deepEqual(await h.store.reapSessions(), h.lapsedSessionsVanish
        ? { sessions: 0, locks: 1, launchers: 0, requests: 0 }
        : { sessions: 1, locks: 3, launchers: 1, requests: 2 });
      assert.deepEqual((await h.store.listSessions()).map((s) => s.id), [live.id]);
      assert.deepEqual((await h.store.listLocks()).map((l) => l.resource), ['node:0000000003']);
      assert.deepEqual((await h.store.listLaunchers()).map((l) => l.id), ['live-launcher']);
      assert.deepEqual(ids(await h.store.listRequests()), [kept.id, plain.id].sort());
      if (orphan) assert.equal(await h.store.getRequest(orphan.id), undefined);
      assert.deepEqual(await h.store.reapSessions(), { sessions: 0, locks: 0, launchers: 0, requests: 0 });
    });

    void it('registers and refreshes a launcher, and lists only those of live sessions', async () => {
      const a = await session(1);
      const b = await session(2);
      const first = await launcher('L1', a.id);
      assert.deepEqual(first, {
        id: 'L1', sessionId: a.id, provider: 'cloud-a', pool: 'main', supportedLabels: ['small'], registered: T0, priority: 100, paused: false,
      });
      h.now = T0 + 5;
      const again = await h.store.registerLauncher({ id: 'L1', sessionId: a.id, provider: 'cloud-a', pool: 'main', supportedLabels: ['small', 'large'] });
      assert.deepEqual(again, { ...first, supportedLabels: ['small', 'large'], registered: T0 + 5 });
      await launcher('L2', b.id);
      assert.deepEqual((await h.store.listLaunchers()).map((l) => l.id), ['L1', 'L2']);
      await h.lapse(a.id);
      await h.store.renewSession(b.id);
      assert.deepEqual((await h.store.listLaunchers()).map((l) => l.id), ['L2']);
      await storeError(launcher('L3', a.id));
      await h.store.unregisterLauncher('L2');
      await h.store.unregisterLauncher('L2');
      assert.deepEqual(await h.store.listLaunchers(), []);
    });
  });
}
