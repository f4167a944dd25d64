/**
 * The ZooKeeper store on a tree Nodepool 11 wrote (test/support/nodepool11-tree.ts): its uuid
 * builds, its uploads (whose ids repeat per build and provider), nodes, requests and pause read
 * as records; new builds take `<image>-<seq>` ids; and a build of ours running is what Nodepool
 * 11's `getBuildRequest` (replicated below in Python with Debian's python3-kazoo) calls
 * `building`, through a kazoo-style contender in `builds/lock` that goes with the build.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import { waitFor } from '../../../lib/lifecycle.js';
import { ZooKeeperStore } from '../../../lib/store/zookeeper/zookeeper-store.js';
import { connectRaw, Nodepool11Tree, type RawZk } from '../../support/nodepool11-tree.js';
import { runningProcesses } from '../../support/processes.js';
import { startZooKeeper, type ZooKeeperHandle } from '../../support/zookeeper.js';

/** Nodepool 11's `getBuildRequest` (zookeeper.py:2114-2148, reference §3.5), as it reads the tree. */
const GET_BUILD_REQUEST_PY = `
import json, sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1]); zk.start(timeout=15)
base = '/nodepool/images/%s' % sys.argv[2]
req = zk.exists(base + '/request-build')
if req is None:
    print(json.dumps(None))
else:
    pending = True
    lock = zk.exists(base + '/builds/lock')
    if lock is not None and zk.get_children(base + '/builds/lock'):
        ids = [i for i in zk.get_children(base + '/builds') if i != 'lock']
        if ids:
            pending = zk.exists(base + '/builds/' + ids[0]).ctime < lock.ctime
    print(json.dumps({'state': 'pending' if pending else 'building', 'state_time': req.ctime / 1000.0}))
zk.stop()
`;

const run = promisify(execFile);
const nodepool11Read = fileURLToPath(new URL('../../fixtures/nodepool11_read.py', import.meta.url));

let zk: ZooKeeperHandle;
let raw: RawZk;

before(async () => {
  zk = await startZooKeeper();
  raw = await connectRaw(`127.0.0.1:${zk.port}`);
});

after(async () => {
  raw.close();
  await zk.stop();
  assert.deepEqual(runningProcesses().map((p) => p.name), []);
});

function children(p: string): Promise<string[]> {
  return new Promise((resolve, reject) => raw.client.getChildren(p, (e, c) => (e ? reject(e) : resolve(c.sort()))));
}

function dataOf(p: string): Promise<{ data: string; ephemeralOwner: string }> {
  return new Promise((resolve, reject) => raw.client.getData(p, (e, d, stat) => (e ? reject(e) : resolve({ data: d.toString('utf8'), ephemeralOwner: stat.ephemeralOwner.toString('hex') }))));
}

void describe('the ZooKeeper store on a Nodepool 11 tree', () => {
  let chroot: string;
  let store: ZooKeeperStore;
  let tree: Nodepool11Tree;
  let rawChroot: RawZk;

  beforeEach(async () => {
    chroot = `/adopt-${randomUUID()}`;
    await new Promise<void>((resolve, reject) => raw.client.mkdirp(chroot, (e) => (e ? reject(e) : resolve())));
    rawChroot = await connectRaw(`127.0.0.1:${zk.port}${chroot}`);
    tree = new Nodepool11Tree(rawChroot.client);
  });
  afterEach(async () => {
    await store?.close();
    rawChroot.close();
  });

  /** What Nodepool 11's getBuildRequest says of `image` in this chroot. */
  async function buildRequest(image: string): Promise<{ state: string } | null> {
    const { stdout } = await run('/usr/bin/python3', ['-c', GET_BUILD_REQUEST_PY, `127.0.0.1:${zk.port}${chroot}`, image], { timeout: 30_000 });
    return JSON.parse(stdout) as { state: string } | null;
  }

  void it('reads uuid builds, repeating upload ids, nodes, requests and the pause; new builds take <image>-<seq>', async () => {
    const now = Date.now();
    const h1 = await tree.build({ image: 'deb', state: 'ready', at: now - 7200_000, pythonPath: '/usr/bin/python3', shellType: 'sh' });
    const h2 = await tree.build({ image: 'deb', state: 'ready', at: now - 3600_000 });
    const u1a = await tree.upload({ image: 'deb', buildId: h1, provider: 'cloud-a', state: 'ready', at: now - 7000_000, externalId: 'img-1a', externalName: 'deb-1a' });
    const u1b = await tree.upload({ image: 'deb', buildId: h1, provider: 'cloud-b', state: 'ready', at: now - 7000_000, externalId: 'img-1b', externalName: 'deb-1b' });
    const u2a = await tree.upload({ image: 'deb', buildId: h2, provider: 'cloud-a', state: 'ready', at: now - 3500_000, externalId: 'img-2a', externalName: 'deb-2a' });
    assert.deepEqual([u1a, u1b, u2a], ['0000000001', '0000000001', '0000000001'], "Nodepool's upload ids repeat: a sequence per build and provider");
    const nodeId = await tree.node({ state: 'ready', at: now - 60_000, provider: 'cloud-a', pool: 'main', label: 'disk', externalId: 'srv-1',
      imageId: `/nodepool/images/deb/builds/${h2}/providers/cloud-a/images/${u2a}` });
    const reqId = await tree.request(['disk'], now - 1000);
    await tree.pause('deb');

    store = await ZooKeeperStore.open({ servers: [{ host: '127.0.0.1', port: zk.port, chroot }] });
    const builds = await store.listBuilds({ diskimage: 'deb' });
    assert.deepEqual(builds.map((b) => b.id).sort(), [`deb-${h1}`, `deb-${h2}`].sort());
    const b1 = builds.find((b) => b.id === `deb-${h1}`);
    assert.deepEqual([b1?.state, b1?.formats, b1?.builderHostname, b1?.username, b1?.pythonPath, b1?.shellType, b1?.created],
      ['ready', ['qcow2'], 'nb01.example.org', 'zuul', '/usr/bin/python3', 'sh', b1?.stateTime]);
    const uploads = await store.listUploads({ diskimage: 'deb' });
    const ids = uploads.map((u) => u.id).sort();
    assert.deepEqual(ids, [`${h1}-cloud-a-0000000001`, `${h1}-cloud-b-0000000001`, `${h2}-cloud-a-0000000001`].sort(), 'one id per upload');
    const got = await store.getUpload(`${h1}-cloud-b-0000000001`);
    assert.deepEqual([got?.buildId, got?.provider, got?.externalId, got?.state, got?.pythonPath], [`deb-${h1}`, 'cloud-b', 'img-1b', 'ready', 'auto']);
    await store.updateUpload(`${h1}-cloud-b-0000000001`, { state: 'deleting' });
    assert.equal((await store.getUpload(`${h1}-cloud-a-0000000001`))?.state, 'ready', 'the update reached only the upload it named');
    assert.ok(await store.deleteUpload(`${h1}-cloud-b-0000000001`));
    assert.deepEqual(await children(`${chroot}/nodepool/images/deb/builds/${h1}/providers/cloud-b/images`), ['lock']);

    const node = await store.getNode(nodeId);
    assert.deepEqual([node?.state, node?.labels, node?.externalId, node?.interfaceIp], ['ready', ['disk'], 'srv-1', '10.1.0.9']);
    assert.deepEqual((await store.listRequests()).map((r) => [r.id, r.labels]), [[reqId, ['disk']]]);
    assert.deepEqual((await store.listPauses()).map((p) => [p.diskimage, p.provider]), [['deb', null]]);

    const exported = await store.exportImageData();
    assert.deepEqual(exported.builds.map((b) => b.id).sort(), [`deb-${h1}`, `deb-${h2}`].sort(), 'an export holds the uuid builds');
    assert.deepEqual(exported.uploads.map((u) => u.id).sort(), ids.filter((i) => i !== `${h1}-cloud-b-0000000001`).sort());
    assert.deepEqual(exported.sequences.build, { deb: 0 }, 'uuid ids take nothing from the build sequence');
    const copy = await ZooKeeperStore.open({ servers: [{ host: '127.0.0.1', port: zk.port, chroot: `${chroot}-copy` }] });
    try {
      await copy.importImageData(exported);
      assert.deepEqual(await copy.listUploads(), await store.listUploads(), 'and imports into another store as it was');
      assert.deepEqual(await copy.listBuilds(), await store.listBuilds());
    } finally {
      await copy.close();
    }

    const ours = await store.createBuild({ diskimage: 'deb', formats: ['qcow2'], username: 'debian', pythonPath: 'auto', shellType: null });
    assert.equal(ours.id, 'deb-0000000001', 'the counter ignores uuid builds');
    const up = await store.createUpload({ buildId: `deb-${h2}`, provider: 'cloud-b', imageName: 'deb', externalName: null });
    assert.match(up.id, new RegExp(`^${h2}-cloud-b-\\d{10}$`), 'our upload of a Nodepool build is named as its siblings are');
    assert.deepEqual([up.username, up.pythonPath], ['zuul', 'auto'], "an upload copies its build's image fields");
    assert.deepEqual((await store.getUpload(up.id))?.buildId, `deb-${h2}`);
    const stored = JSON.parse((await dataOf(`${chroot}/nodepool/images/deb/builds/${ours.id.slice(-10)}`)).data) as Record<string, unknown>;
    assert.deepEqual([stored.username, stored.python_path, stored.shell_type], ['debian', 'auto', null], "Nodepool's fields on our build");
  });

  void it("keeps Nodepool 11's states in its records when adopted builds are lost and an upload is validating (issue 31)", async () => {
    const now = Date.now();
    const h = await tree.build({ image: 'deb', state: 'ready', at: now - 3600_000 });
    const hu = await tree.upload({ image: 'deb', buildId: h, provider: 'cloud-a', state: 'ready', at: now - 3500_000, externalId: 'img-1', externalName: 'deb-1' });
    await tree.node({ state: 'ready', at: now - 60_000, provider: 'cloud-a', pool: 'main', label: 'disk', externalId: 'srv-1', imageId: null });
    await tree.request(['disk'], now - 1000);
    store = await ZooKeeperStore.open({ servers: [{ host: '127.0.0.1', port: zk.port, chroot }] });
    // What the server does to a build whose files no builder advertises (server/image-lifecycle/build-jobs.ts).
    await store.updateBuild(`deb-${h}`, { state: 'lost', reason: 'no builder holds its files' }, { expectStates: ['ready'] });
    const ours = await store.createBuild({ diskimage: 'deb', formats: ['qcow2'] });
    await store.updateBuild(ours.id, { state: 'ready' });
    const validating = await store.createUpload({ buildId: ours.id, provider: 'cloud-a', imageName: 'deb', externalName: null });
    await store.updateUpload(validating.id, { state: 'validating', externalId: 'img-2' });
    assert.equal((await store.getBuild(`deb-${h}`))?.state, 'lost');
    assert.equal((await store.getUpload(validating.id))?.state, 'validating');

    const adopted = JSON.parse((await dataOf(`${chroot}/nodepool/images/deb/builds/${h}`)).data) as Record<string, unknown>;
    assert.deepEqual([adopted.state, adopted.lifecycle_state, adopted.builder], ['ready', 'lost', 'nb01.example.org'], 'ready to Nodepool, lost to us');
    // Nodepool 11's readers, mirrored in Python (test/fixtures/nodepool11_read.py), take every record of the tree.
    const { stdout } = await run('/usr/bin/python3', [nodepool11Read, `127.0.0.1:${zk.port}${chroot}`], { timeout: 30_000 }).catch((err: { stdout?: string }) => {
      throw new Error(`Nodepool 11 cannot read the tree: ${err.stdout ?? String(err)}`);
    });
    const read = JSON.parse(stdout) as { records: Record<string, number>; states: Record<string, string>; errors: string[] };
    assert.deepEqual(read.errors, []);
    assert.deepEqual(read.records, { build: 2, node: 1, request: 1, upload: 2 });
    assert.equal(read.states[`/nodepool/images/deb/builds/${h}`], 'ready');
    assert.equal(read.states[`/nodepool/images/deb/builds/${h}/providers/cloud-a/images/${hu}`], 'ready', "the lost build's upload serves");
    assert.equal(read.states[`/nodepool/images/deb/builds/${ours.id.slice(-10)}/providers/cloud-a/images/${validating.id}`], 'uploading', 'no Nodepool launcher boots an upload being validated');
  });

  void it("shows a running build of ours to Nodepool's getBuildRequest as building, and pending once it ends", async () => {
    store = await ZooKeeperStore.open({ servers: [{ host: '127.0.0.1', port: zk.port, chroot }] });
    assert.equal(await buildRequest('deb'), null);
    await store.requestBuild('deb');
    assert.equal((await buildRequest('deb'))?.state, 'pending', 'requested, nothing building');
    const b = await store.createBuild({ diskimage: 'deb', formats: ['qcow2'] });
    const lock = `${chroot}/nodepool/images/deb/builds/lock`;
    const [contender] = await children(lock);
    assert.match(contender ?? '', /^[0-9a-f]{32}__lock__\d{10}$/, "a kazoo Lock contender's name");
    const seen = await dataOf(`${lock}/${contender}`);
    assert.equal(seen.data, b.id);
    assert.notEqual(seen.ephemeralOwner, '0000000000000000', 'ephemeral: it goes with the store session');
    assert.equal((await buildRequest('deb'))?.state, 'building');

    await store.updateBuild(b.id, { state: 'ready', formats: ['qcow2'] });
    assert.deepEqual(await children(lock), [], 'the contender went with the build');
    await store.requestBuild('deb');
    assert.equal((await buildRequest('deb'))?.state, 'pending');

    // A second build, then the store's session ends (the server died): its contender goes too.
    await store.createBuild({ diskimage: 'deb', formats: ['qcow2'] });
    assert.equal((await children(lock)).length, 1);
    await store.close();
    await waitFor(async () => (await children(lock)).length === 0, { timeoutMs: 15_000, what: 'the contender gone with the session', intervalMs: 50 });
  });

  void it('reads building on a Nodepool tree whose lock dir predates its builds, and deletes a uuid build with its lock dirs', async () => {
    const now = Date.now();
    const h = await tree.build({ image: 'deb', state: 'ready', at: now - 3600_000 });
    await tree.requestBuild('deb');
    store = await ZooKeeperStore.open({ servers: [{ host: '127.0.0.1', port: zk.port, chroot }] });
    const ours = await store.createBuild({ diskimage: 'deb', formats: ['qcow2'] });
    assert.equal((await buildRequest('deb'))?.state, 'building');
    await store.updateBuild(ours.id, { state: 'failed' });
    assert.deepEqual(await children(`${chroot}/nodepool/images/deb/builds/lock`), []);
    assert.ok(await store.deleteBuild(`deb-${h}`), 'a uuid build (with its build-id lock dir) is deleted');
    assert.deepEqual((await store.listBuilds()).map((b) => b.id), [ours.id]);
  });
});
