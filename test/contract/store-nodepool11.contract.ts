/**
 * The store contract's Nodepool 11 fields (issue 21 §2): the node and request fields Zuul
 * reads and writes, and the launcher registration's pool priority and paused flag. Part of
 * storeContract in store.contract.ts; the component registry's znodes are checked against a
 * real ZooKeeper in test/integration/store/zookeeper-components.test.ts.
 *
 * And (issue 31) every record kind in every state the store writes, read back as written and,
 * on a backend Nodepool 11 reads (ZooKeeper), checked raw against Nodepool 11's model
 * (test/support/nodepool11-model.ts: its states and field types).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  BUILD_STATES, NODE_STATES, REQUEST_STATES, UPLOAD_STATES,
  type BuildRecord, type BuildState, type NewNode, type NodeRecord, type SessionRecord, type UploadRecord, type UploadState,
} from '../../lib/store/models.js';
import { nodepool11Problems, type Nodepool11Record } from '../support/nodepool11-model.js';
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

    void it('keeps a pool\'s standing (ours, issue 35) beside the Nodepool fields: published, kept by a refresh, refused when not whole', async () => {
      const s = await session();
      await h.store.registerLauncher({ id: 'L1', sessionId: s.id, provider: 'cloud-a', pool: 'main', supportedLabels: ['small'] });
      assert.equal((await h.store.listLaunchers())[0]?.standing, undefined, 'none until published');
      const standing = {
        headroom: 0.2, full: { by: 'max-servers' as const, detail: '8 of 10 nodes' },
        breaker: { state: 'open' as const, failures: 3, since: 1_700_000_000_000, until: 1_700_000_060_000, backoffMs: 60_000 },
        noReadyImage: ['big'], tenantLimited: [{ tenant: 'acme', detail: 'cores: 8 of 8 used, the request needs 2' }],
      };
      const updated = await h.store.updateLauncher('L1', { standing });
      assert.deepEqual(updated?.standing, standing);
      await h.store.registerLauncher({ id: 'L1', sessionId: s.id, provider: 'cloud-a', pool: 'main', supportedLabels: ['small'], paused: true });
      const listed = (await h.store.listLaunchers())[0];
      assert.deepEqual([listed?.standing, listed?.paused, listed?.priority], [standing, true, 100], 'a refresh keeps it; the Nodepool fields are untouched');
      const closed = { headroom: 1, breaker: { state: 'closed' as const, failures: 0 } };
      await h.store.updateLauncher('L1', { standing: closed });
      assert.deepEqual((await h.store.listLaunchers())[0]?.standing, closed);
      await storeError(h.store.updateLauncher('L1', { standing: { headroom: 2, breaker: { state: 'closed', failures: 0 } } }));
      await storeError(h.store.updateLauncher('L1', { standing: { headroom: 0.5, breaker: { state: 'open', failures: 1 } } as never }));
      await storeError(h.store.updateLauncher('L1', { standing: { ...closed, tenantLimited: [{ tenant: 'acme' }] } as never }));
      assert.deepEqual((await h.store.listLaunchers())[0]?.standing, closed, 'a refused standing changes nothing');
    });

    void it('accepts component registrations for a live session and refuses them for an unknown one', async () => {
      const s = await session();
      await h.store.publishComponents(s.id, 'launcher', [{ hostname: 'nl01.example.org', state: 'running' }]);
      await h.store.publishComponents(s.id, 'builder', [{ hostname: 'nb01', state: 'running' }, { hostname: 'nb02', state: 'running' }]);
      await h.store.publishComponents(s.id, 'builder', []);
      await storeError(h.store.publishComponents('no-such-session', 'launcher', [{ hostname: 'nl01', state: 'running' }]));
    });
  });

  void describe('records Nodepool 11 reads (issue 31)', () => {
    /** A build in `state`, through the transitions the server makes (lost only from ready). */
    async function buildIn(state: BuildState): Promise<BuildRecord> {
      const b = await h.store.createBuild({ diskimage: `deb-${state}`, formats: ['qcow2', 'raw'] });
      if (state === 'building') return b;
      if (state === 'lost') await h.store.updateBuild(b.id, { state: 'ready' });
      return (await h.store.updateBuild(b.id, { state })) as BuildRecord;
    }
    /** An upload in `state`, of `buildId`, to a provider of its own. */
    async function uploadIn(buildId: string, state: UploadState): Promise<UploadRecord> {
      const u = await h.store.createUpload({ buildId, provider: `cloud-${state}`, imageName: 'deb', externalName: `deb-${state}` });
      if (state === 'uploading') return u;
      return (await h.store.updateUpload(u.id, { state, externalId: `img-${state}`, format: 'qcow2' })) as UploadRecord;
    }
    /** The raw records Nodepool 11 reads, by path (undefined when the backend is not Nodepool's). */
    async function rawByPath(): Promise<Map<string, Nodepool11Record> | undefined> {
      const got = await h.nodepool11Records();
      return got && new Map(got.map((r) => [r.path, r]));
    }
    const buildPath = (b: BuildRecord): string => `/nodepool/images/${b.diskimage}/builds/${b.id.slice(b.diskimage.length + 1)}`;
    const uploadPath = (u: UploadRecord): string => `${buildPath({ id: u.buildId, diskimage: u.diskimage } as BuildRecord)}/providers/${u.provider}/images/${u.id.slice(-10)}`;

    void it('writes every kind in every state so that Nodepool 11 reads it, and reads each back in the state written', async () => {
      const builds = await Promise.all(BUILD_STATES.map(buildIn));
      const ready = builds[BUILD_STATES.indexOf('ready')] as BuildRecord;
      const uploads = await Promise.all(UPLOAD_STATES.map((s) => uploadIn(ready.id, s)));
      const nodes = await Promise.all(NODE_STATES.map((state) => h.store.createNode({
        state, provider: 'static-a', pool: 'main', labels: ['small'], connectionPort: 2222, resources: { cores: 2, ram: 2048, instances: 1 },
        attributes: { 'executor-zone': 'z1' }, hostKeys: ['ssh-ed25519 AAAA'], ...(state === 'hold' ? { holdReason: 'debug', holdExpiration: T0 + 3_600_400, holdJob: 'job-1' } : {}),
      })));
      const requests = await Promise.all(REQUEST_STATES.map(async (state) => {
        const r = await h.store.createRequest({ labels: ['small', 'big'], requestor: 'zuul', tenantName: 't1' });
        return state === 'requested' ? r : h.store.updateRequest(r.id, { state, declinedBy: ['L0'], nodes: state === 'fulfilled' ? [nodes[0]?.id as string] : [] });
      }));
      const s = await h.store.openSession({ owner: 'nodepool-server', hostname: 'nl01.example.org', pid: 1, ttlMs: 10_000 });
      await h.store.registerLauncher({ id: 'L1', sessionId: s.id, provider: 'cloud-a', pool: 'main', supportedLabels: ['small'], priority: 50, paused: true });
      await h.store.publishComponents(s.id, 'launcher', [{ hostname: 'nl01.example.org', state: 'running' }]);
      await h.store.publishComponents(s.id, 'builder', [{ hostname: 'nb01.example.org', state: 'running' }]);

      // Ours, as written, on every backend: by get, and by list with a state filter.
      for (const [i, state] of BUILD_STATES.entries()) {
        const b = builds[i] as BuildRecord;
        assert.equal(b.state, state);
        assert.equal((await h.store.getBuild(b.id))?.state, state);
        assert.deepEqual((await h.store.listBuilds({ diskimage: b.diskimage, states: [state] })).map((x) => x.id), [b.id]);
      }
      for (const [i, state] of UPLOAD_STATES.entries()) {
        const u = uploads[i] as UploadRecord;
        assert.equal((await h.store.getUpload(u.id))?.state, state);
        assert.deepEqual((await h.store.listUploads({ provider: u.provider, states: [state] })).map((x) => x.id), [u.id]);
      }
      assert.deepEqual((await h.store.listNodes()).map((n) => n.state).sort(), [...NODE_STATES].sort());
      assert.deepEqual((await h.store.listRequests()).map((r) => r.state).sort(), [...REQUEST_STATES].sort());
      assert.deepEqual(await h.store.listCorrupt(), []);

      const raw = await rawByPath();
      if (!raw) return;
      // Every record Nodepool 11 reads, checked as its model classes would take it.
      const problems = [...raw.values()].flatMap((r) => nodepool11Problems(r.kind, r.json).map((p) => `${r.kind} ${r.path}: ${p}`));
      assert.deepEqual(problems, []);
      const kinds = new Set([...raw.values()].map((r) => r.kind));
      assert.deepEqual([...kinds].sort(), ['build', 'component', 'node', 'pool-component', 'request', 'upload']);
      assert.equal([...raw.values()].filter((r) => r.kind === 'node').length, NODE_STATES.length);
      assert.equal([...raw.values()].filter((r) => r.kind === 'request').length, requests.length);
      // Our finer states beside Nodepool's: what Nodepool reads of each, and ours in lifecycle_state.
      const told = (path: string): [unknown, unknown] => [raw.get(path)?.json.state, raw.get(path)?.json.lifecycle_state];
      assert.deepEqual(BUILD_STATES.map((_, i) => told(buildPath(builds[i] as BuildRecord))),
        [['building', undefined], ['ready', undefined], ['failed', undefined], ['deleting', undefined], ['ready', 'lost']]);
      assert.deepEqual(UPLOAD_STATES.map((_, i) => told(uploadPath(uploads[i] as UploadRecord))),
        [['uploading', undefined], ['uploading', 'validating'], ['ready', undefined], ['failed', undefined], ['deleting', undefined]]);
    });

    void it("keeps its pauses, pins, revocations and upload retries where Nodepool 11's path parsers take nothing for a build or an upload", async () => {
      const b = await buildIn('ready');
      const d = b.diskimage;
      for (const p of ['cloud-a', 'cloud-b']) await h.store.setPause(d, p, true, `maintenance of ${p}`);
      await h.store.setPause(d, null, true);
      await h.store.setPin(d, null, b.id, 'known good');
      await h.store.setPin(d, 'cloud-a', b.id);
      await h.store.setRevocation(d, b.id, true, 'kernel panics');
      await h.store.requestUploadRetry(d, 'cloud-b');
      assert.deepEqual((await h.store.listPauses()).map((p) => [p.diskimage, p.provider]), [[d, null], [d, 'cloud-a'], [d, 'cloud-b']]);
      assert.deepEqual((await h.store.listPins()).map((p) => [p.provider, p.buildId]), [[null, b.id], ['cloud-a', b.id]]);
      assert.deepEqual((await h.store.listRevocations()).map((r) => [r.diskimage, r.buildId]), [[d, b.id]]);
      assert.deepEqual((await h.store.listUploadRetries()).map((r) => [r.diskimage, r.provider]), [[d, 'cloud-b']]);

      const raw = await rawByPath();
      if (!raw) return;
      // Nodepool 11's image cache parses by depth alone: whatever it reads as a build or an upload must be one.
      const shapes: Record<string, RegExp> = {
        build: /^\/nodepool\/images\/[^/]+\/builds\/[^/]+$/,
        upload: /^\/nodepool\/images\/[^/]+\/builds\/[^/]+\/providers\/[^/]+\/images\/[^/]+$/,
      };
      const misread = [...raw.values()].filter((r) => shapes[r.kind] !== undefined && !shapes[r.kind]?.test(r.path)).map((r) => `${r.path} read as a ${r.kind}`);
      assert.deepEqual(misread, []);
      assert.deepEqual([...raw.values()].filter((r) => r.kind === 'build').map((r) => r.path), [buildPath(b)]);
      const problems = [...raw.values()].flatMap((r) => nodepool11Problems(r.kind, r.json).map((p) => `${r.kind} ${r.path}: ${p}`));
      assert.deepEqual(problems, []);
      // Undone, they are gone for every reader.
      for (const p of ['cloud-a', 'cloud-b']) await h.store.setPause(d, p, false);
      await h.store.setPin(d, 'cloud-a', null);
      await h.store.setRevocation(d, b.id, false);
      assert.deepEqual((await h.store.listPauses()).map((p) => p.provider), [null]);
      assert.deepEqual((await h.store.listPins()).map((p) => p.provider), [null]);
      assert.deepEqual(await h.store.listRevocations(), []);
    });

    void it('leaves no state of its own behind when a lost build is found again and a validated upload becomes ready', async () => {
      const b = await buildIn('lost');
      const u = await uploadIn(b.id, 'validating');
      const before = await rawByPath();
      if (before) assert.deepEqual([before.get(buildPath(b))?.json.lifecycle_state, before.get(uploadPath(u))?.json.lifecycle_state], ['lost', 'validating']);
      h.now = T0 + 5000;
      const found = await h.store.updateBuild(b.id, { state: 'ready', reason: 'a builder holds its files again' }, { expectStates: ['lost'] });
      const validated = await h.store.updateUpload(u.id, { state: 'ready' }, { expectStates: ['validating'] });
      assert.deepEqual([found?.state, found?.stateTime, validated?.state], ['ready', T0 + 5000, 'ready']);
      // A conditional write still sees ours, not Nodepool's, state.
      await storeError(h.store.updateBuild(b.id, { state: 'deleting' }, { expectStates: ['lost'] }));
      assert.equal((await h.store.getBuild(b.id))?.state, 'ready');
      const after = await rawByPath();
      if (!after) return;
      for (const path of [buildPath(b), uploadPath(u)]) {
        assert.equal(after.get(path)?.json.state, 'ready');
        assert.equal('lifecycle_state' in (after.get(path)?.json ?? {}), false, `${path} keeps no lifecycle_state`);
      }
    });
  });
}
