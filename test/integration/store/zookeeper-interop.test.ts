/**
 * The ZooKeeper store as other programs see it: Nodepool's field names in the raw znode JSON,
 * everything under the configured chroot, locks that exclude a kazoo `Lock` (Debian's
 * python3-kazoo, as Zuul and Nodepool take them) both ways, and mutual TLS through the
 * in-process tunnel against ZooKeeper's secure port.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import zookeeper from 'node-zookeeper-client';
import { StoreError } from '../../../lib/errors.js';
import { waitFor } from '../../../lib/lifecycle.js';
import { openStore } from '../../../lib/store/open-store.js';
import { ZooKeeperStore } from '../../../lib/store/zookeeper/zookeeper-store.js';
import { runningProcesses, startProcess } from '../../support/processes.js';
import { startZooKeeper, type ZooKeeperHandle } from '../../support/zookeeper.js';

const kazooScript = fileURLToPath(new URL('../../zookeeper/kazoo-lock.py', import.meta.url));

let zk: ZooKeeperHandle;
let raw: zookeeper.Client;

before(async () => {
  zk = await startZooKeeper({ tls: true });
  raw = zookeeper.createClient(zk.connectString, { sessionTimeout: 10_000, spinDelay: 50 });
  await new Promise<void>((resolve) => { raw.once('connected', () => resolve()); raw.connect(); });
});

after(async () => {
  raw.close();
  await zk.stop();
  assert.deepEqual(runningProcesses().map((p) => p.name), []);
});

/** The JSON of a znode, read straight from the server. */
function rawJson(p: string): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => raw.getData(p, (e, data) => (e ? reject(e) : resolve(JSON.parse(data.toString('utf8')) as Record<string, unknown>))));
}

function rawChildren(p: string): Promise<string[] | undefined> {
  return new Promise((resolve, reject) => raw.getChildren(p, (e, children) => {
    if (e && (e as { code?: number }).code === zookeeper.Exception.NO_NODE) resolve(undefined);
    else if (e) reject(e);
    else resolve(children.sort());
  }));
}

/** Runs the kazoo lock script; resolves with its first line of output and the process. */
async function kazoo(chroot: string, lockPath: string, mode: 'try' | 'hold'): Promise<{ first: string; release(): Promise<string> }> {
  const p = startProcess(`kazoo-lock:${mode}`, '/usr/bin/python3', [kazooScript, `127.0.0.1:${zk.port}${chroot}`, lockPath, mode], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  p.child.stdout?.on('data', (d: Buffer) => { out += d.toString(); });
  p.child.stderr?.on('data', (d: Buffer) => { err += d.toString(); });
  try {
    await waitFor(() => out.includes('\n') || !p.alive(), { timeoutMs: 20_000, what: `kazoo ${mode} to answer`, intervalMs: 20 });
  } catch (e) {
    await p.stop(2000);
    throw e;
  }
  const first = out.split('\n')[0] as string;
  if (!first) { await p.stop(2000); throw new Error(`kazoo ${mode} said nothing: ${err}`); }
  return {
    first,
    async release() {
      // `try` exits by itself: its stdin may be closed already.
      p.child.stdin?.on('error', () => undefined);
      if (p.alive()) p.child.stdin?.end('release\n');
      const exit = await p.exited;
      assert.equal(exit.code, 0, `kazoo ${mode} failed: ${err}`);
      return out;
    },
  };
}

void describe('ZooKeeperStore with other programs', () => {
  let chroot: string;
  let store: ZooKeeperStore;

  beforeEach(async () => {
    chroot = `/interop-${randomUUID()}`;
    store = await ZooKeeperStore.open({ servers: [{ host: '127.0.0.1', port: zk.port, chroot }] });
  });
  afterEach(() => store.close());

  void it('writes Nodepool\'s field names, with state_time in seconds, under the chroot only', async () => {
    const now = Date.now();
    const b = await store.createBuild({ diskimage: 'debian', formats: ['qcow2', 'raw'] });
    await store.updateBuild(b.id, { state: 'ready', builderHostname: 'builder-1', builderId: 'b-uuid' });
    const u = await store.createUpload({ buildId: b.id, provider: 'cloud-a', imageName: 'debian-small', externalName: 'debian-1700' });
    await store.updateUpload(u.id, { state: 'ready', externalId: 'glance-id', format: 'qcow2' });
    const n = await store.createNode({ state: 'ready', provider: 'cloud-a', pool: 'main', labels: ['small'], interfaceIp: '192.0.2.5', allocatedTo: '100-0000000000' });
    const s = await store.openSession({ owner: 'nodepool-server', hostname: 'h', pid: 1, ttlMs: 10_000 });
    await store.registerLauncher({ id: 'h-1-PoolWorker.cloud-a-main', sessionId: s.id, provider: 'cloud-a', pool: 'main', supportedLabels: ['small'] });
    const r = await store.createRequest({ labels: ['small', 'large'], requestor: 'zuul-scheduler' });
    await store.updateRequest(r.id, { declinedBy: ['other-launcher'] });

    const root = `${chroot}/nodepool`;
    const build = await rawJson(`${root}/images/debian/builds/${b.id.slice(-10)}`);
    assert.equal(build.state, 'ready');
    assert.equal(build.builder, 'builder-1');
    assert.equal(build.builder_id, 'b-uuid');
    assert.equal(build.formats, 'qcow2,raw');
    assert.ok(typeof build.state_time === 'number' && Math.abs(build.state_time - now / 1000) < 60, `state_time ${String(build.state_time)} in seconds`);
    const upload = await rawJson(`${root}/images/debian/builds/${b.id.slice(-10)}/providers/cloud-a/images/${u.id}`);
    assert.deepEqual([upload.state, upload.external_id, upload.external_name, upload.format], ['ready', 'glance-id', 'debian-1700', 'qcow2']);
    const node = await rawJson(`${root}/nodes/${n.id}`);
    assert.deepEqual([node.state, node.provider, node.pool, node.type, node.interface_ip, node.allocated_to, node.connection_port, node.ssh_port],
      ['ready', 'cloud-a', 'main', ['small'], '192.0.2.5', '100-0000000000', 22, 22]);
    const launcher = await rawJson(`${root}/launchers/h-1-PoolWorker.cloud-a-main`);
    assert.deepEqual([launcher.id, launcher.provider_name, launcher.supported_labels], ['h-1-PoolWorker.cloud-a-main', 'cloud-a', ['small']]);
    const request = await rawJson(`${root}/requests/${r.id}`);
    assert.deepEqual([request.state, request.node_types, request.requestor, request.declined_by, request.reuse],
      ['requested', ['small', 'large'], 'zuul-scheduler', ['other-launcher'], true]);
    assert.equal(await rawChildren('/nodepool'), undefined, 'nothing outside the chroot');
  });

  void it('reads a request Zuul-style clients create themselves (ephemeral sequential) with their sequence number', async () => {
    const zuulData = Buffer.from(JSON.stringify({ state: 'requested', state_time: Date.now() / 1000, node_types: ['small'], nodes: [], declined_by: [], reuse: true, requestor: 'zuul', relative_priority: 3, event_id: 'e-1' }));
    const made = await new Promise<string>((resolve, reject) => raw.create(`${chroot}/nodepool/requests/200-`, zuulData, zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL, (e, p) => (e ? reject(e) : resolve(p))));
    const id = made.slice(made.lastIndexOf('/') + 1);
    await waitFor(async () => (await store.listRequests()).length === 1, { timeoutMs: 5000, what: 'the request to reach the cache', intervalMs: 10 });
    const [seen] = await store.listRequests();
    assert.equal(seen?.id, id);
    assert.equal(seen?.priority, 200);
    assert.deepEqual(seen?.labels, ['small']);
    assert.equal(seen?.requestorSession, raw.getSessionId().toString('hex'), 'an ephemeral request belongs to its creator\'s session');
    // The launcher's writes keep what only Zuul writes.
    await store.updateRequest(id, { state: 'pending', declinedBy: ['l-1'] });
    const stored = await rawJson(`${chroot}/nodepool/requests/${id}`);
    assert.deepEqual([stored.state, stored.declined_by, stored.relative_priority, stored.event_id], ['pending', ['l-1'], 3, 'e-1']);
  });

  void it('keeps a request\'s created_time null (as a Zuul-style client wrote it) through updates, instead of writing 0', async () => {
    const t = Date.now() / 1000;
    const data = Buffer.from(JSON.stringify({ state: 'requested', state_time: t, created_time: null, node_types: ['small'], nodes: [], declined_by: [], reuse: true, requestor: 'zuul' }));
    const made = await new Promise<string>((resolve, reject) => raw.create(`${chroot}/nodepool/requests/100-`, data, zookeeper.CreateMode.PERSISTENT_SEQUENTIAL, (e, p) => (e ? reject(e) : resolve(p))));
    const id = made.slice(made.lastIndexOf('/') + 1);
    await waitFor(async () => (await store.listRequests()).length === 1, { timeoutMs: 5000, what: 'the request to reach the cache', intervalMs: 10 });
    const [seen] = await store.listRequests();
    assert.equal(seen?.created, Math.round(t * 1000), 'read as made at its state_time');
    await store.updateRequest(id, { state: 'pending', declinedBy: ['l-1'] });
    const stored = await rawJson(`${chroot}/nodepool/requests/${id}`);
    assert.deepEqual([stored.state, stored.created_time], ['pending', null], 'created_time stays null, not 0');
    assert.deepEqual(await store.listCorrupt(), []);
  });

  void it('reads builds and nodes Nodepool wrote itself, and numbers new ones past them', async () => {
    const create = (p: string, json: unknown): Promise<unknown> => new Promise((resolve, reject) =>
      raw.mkdirp(p, Buffer.from(JSON.stringify(json)), (e) => (e ? reject(e) : resolve(undefined))));
    const t = Date.now() / 1000;
    await create(`${chroot}/nodepool/images/debian/builds/0000000000`, { state: 'ready', state_time: t, builder: 'nb01', formats: 'qcow2' });
    await create(`${chroot}/nodepool/images/debian/builds/0000000005`, { state: 'building', state_time: t });
    await create(`${chroot}/nodepool/nodes/0000000006`, { state: 'hold', state_time: t, provider: 'cloud-a', pool: 'main', type: ['small'], comment: 'debug', hold_expiration: 3600 });
    await create(`${chroot}/nodepool/nodes/0000000007`, { state: 'ready', state_time: t, provider: 'cloud-a', pool: 'main', type: 'small', ssh_port: 2222 });
    await waitFor(async () => (await store.listBuilds()).length === 2 && (await store.listNodes()).length === 2, { timeoutMs: 5000, what: 'the cache to see Nodepool\'s records', intervalMs: 10 });
    const [first] = await store.listBuilds();
    assert.deepEqual([first?.id, first?.state, first?.builderHostname, first?.formats], ['debian-0000000000', 'ready', 'nb01', ['qcow2']]);
    const [held, node] = await store.listNodes();
    assert.deepEqual([held?.holdReason, held?.holdExpiration], ['debug', Math.round(t * 1000) + 3_600_000], "Zuul's hold_expiration (seconds from state_time) is read");
    assert.deepEqual([node?.labels, node?.connectionPort], [['small'], 2222], 'a legacy string type and ssh_port are read');
    assert.equal((await store.createBuild({ diskimage: 'debian', formats: [] })).id, 'debian-0000000006');
    assert.equal((await store.createNode({ state: 'building', provider: 'cloud-a', pool: 'main', labels: ['small'] })).id, '0000000008');
  });

  void it('reads our finer state beside Nodepool\'s, Nodepool\'s when another writer moved it on, and our older records that held ours in state', async () => {
    const setRaw = (p: string, json: unknown): Promise<unknown> => new Promise((resolve, reject) =>
      raw.setData(p, Buffer.from(JSON.stringify(json)), (e) => (e ? reject(e) : resolve(undefined))));
    const b = await store.createBuild({ diskimage: 'debian', formats: ['qcow2'] });
    await store.updateBuild(b.id, { state: 'ready' });
    await store.updateBuild(b.id, { state: 'lost', reason: 'no builder holds its files' });
    const u = await store.createUpload({ buildId: b.id, provider: 'cloud-a', imageName: 'debian', externalName: null });
    await store.updateUpload(u.id, { state: 'validating' });
    const buildPath = `${chroot}/nodepool/images/debian/builds/${b.id.slice(-10)}`;
    const uploadPath = `${buildPath}/providers/cloud-a/images/${u.id}`;
    assert.deepEqual([(await rawJson(buildPath)).state, (await rawJson(buildPath)).lifecycle_state], ['ready', 'lost']);
    assert.deepEqual([(await rawJson(uploadPath)).state, (await rawJson(uploadPath)).lifecycle_state], ['uploading', 'validating']);

    // An operator (or a writer that keeps keys it does not know) moves the records on: its state stands.
    await setRaw(buildPath, { ...await rawJson(buildPath), state: 'deleting' });
    await setRaw(uploadPath, { ...await rawJson(uploadPath), state: 'failed' });
    await waitFor(async () => (await store.listBuilds())[0]?.state === 'deleting', { timeoutMs: 5000, what: 'the cache to see the build deleting', intervalMs: 10 });
    assert.equal((await store.getBuild(b.id))?.state, 'deleting');
    assert.equal((await store.getUpload(u.id))?.state, 'failed');

    // Records this program wrote before issue 31 hold `lost` and `validating` in state itself: read as
    // they are, rewritten Nodepool's way by the next store that opens the tree to write (a listing leaves them).
    await setRaw(buildPath, { ...await rawJson(buildPath), state: 'lost', lifecycle_state: undefined });
    await setRaw(uploadPath, { ...await rawJson(uploadPath), state: 'validating', lifecycle_state: undefined });
    assert.equal((await store.getBuild(b.id))?.state, 'lost');
    assert.equal((await store.getUpload(u.id))?.state, 'validating');
    const servers = [{ host: '127.0.0.1', port: zk.port, chroot }];
    await (await ZooKeeperStore.open({ servers, readOnly: true })).close();
    assert.equal((await rawJson(buildPath)).state, 'lost', 'a read-only handle writes nothing');
    await (await ZooKeeperStore.open({ servers })).close();
    assert.deepEqual([(await rawJson(buildPath)).state, (await rawJson(buildPath)).lifecycle_state], ['ready', 'lost']);
    assert.deepEqual([(await rawJson(uploadPath)).state, (await rawJson(uploadPath)).lifecycle_state], ['uploading', 'validating']);
    assert.equal((await store.getBuild(b.id))?.state, 'lost');
    assert.equal((await store.getUpload(u.id))?.state, 'validating');
    // A lifecycle_state that is no state of ours makes the record corrupt, as an unknown state does.
    await setRaw(buildPath, { ...await rawJson(buildPath), lifecycle_state: 'exploded' });
    await waitFor(async () => (await store.listCorrupt()).length === 1, { timeoutMs: 5000, what: 'the build to read corrupt', intervalMs: 10 });
    assert.match((await store.listCorrupt())[0]?.reason ?? '', /unknown lifecycle_state "exploded"/);
  });

  void it('refuses a node lock a kazoo Lock holds, and kazoo refuses one the store holds', async () => {
    const n = await store.createNode({ state: 'ready', provider: 'cloud-a', pool: 'main', labels: ['small'] });
    const s = await store.openSession({ owner: 'nodepool-server', hostname: 'h', pid: 1, ttlMs: 10_000 });
    const lockPath = `/nodepool/nodes/${n.id}/lock`;

    assert.equal(await store.tryLock(`node:${n.id}`, s.id), true);
    const refused = await kazoo(chroot, lockPath, 'try');
    assert.equal(refused.first, 'refused');
    await refused.release();
    assert.equal(await store.unlock(`node:${n.id}`, s.id), true);

    const held = await kazoo(chroot, lockPath, 'hold');
    assert.equal(held.first, 'held');
    assert.equal(await store.tryLock(`node:${n.id}`, s.id), false);
    const lock = await store.getLock(`node:${n.id}`);
    assert.ok(lock && lock.sessionId !== s.id, 'the lock shows kazoo\'s session');
    await held.release();
    await waitFor(() => store.tryLock(`node:${n.id}`, s.id), { timeoutMs: 5000, what: 'the lock to be free after kazoo released it', intervalMs: 20 });
    assert.equal((await store.getLock(`node:${n.id}`))?.sessionId, s.id);
  });

  void it('connects with mutual TLS through its tunnel to the secure port (config keys zookeeper-tls)', async () => {
    const files = zk.tlsFiles;
    assert.ok(files && zk.tlsPort);
    const tlsStore = await openStore({
      stateDir: '/nonexistent/state', zookeeperServers: [{ host: '127.0.0.1', port: zk.tlsPort, chroot }],
      zookeeperTls: { ca: files.ca, cert: files.cert, key: files.key }, zookeeperTimeout: 10,
    });
    try {
      const b = await tlsStore.createBuild({ diskimage: 'debian', formats: ['qcow2'] });
      assert.equal((await store.getBuild(b.id))?.id, b.id, 'the plain-port store reads what came over TLS');
      const s = await tlsStore.openSession({ owner: 'cli', hostname: 'h', pid: 1, ttlMs: 10_000 });
      assert.equal(await tlsStore.tryLock('node:0000000001', s.id), true);
    } finally {
      await tlsStore.close();
    }
  });

  void it('names the key of an unreadable TLS file, and gives up on a TLS port without TLS', async () => {
    await assert.rejects(openStore({
      stateDir: '/nonexistent', zookeeperServers: [{ host: '127.0.0.1', port: zk.port, chroot: undefined }], file: '/etc/nodepool/nodepool.yaml',
      zookeeperTls: { ca: '/nonexistent/ca.pem', cert: '/nonexistent/c.pem', key: '/nonexistent/k.pem' },
    }), /\/etc\/nodepool\/nodepool.yaml: zookeeper-tls.ca: cannot read \/nonexistent\/ca.pem/);
    await assert.rejects(ZooKeeperStore.open({ servers: [{ host: '127.0.0.1', port: zk.tlsPort as number }], connectTimeoutMs: 1000 }),
      (err) => err instanceof StoreError);
  });
});

