/**
 * nodepool-server pointed at a ZooKeeper tree Nodepool 11 wrote (test/support/nodepool11-tree.ts):
 * three ready uuid builds of `deb` with one upload each, whose images exist in the loopback
 * Nova cloud's Glance; a paused image; a Zuul request; an in-use node that a Zuul-like kazoo
 * client holds locked. The server serves the request from the newest adopted upload, keeps the
 * two newest ready uploads and deletes the oldest (its Glance image too), marks the builds lost
 * (no builder advertises their files; still `ready` in Nodepool's `state` field, as Nodepool 11's
 * readers take them) while their uploads stay usable, leaves the locked node
 * alone, builds nothing while the pause lasts, and once unpaused builds `deb-0000000001`, whose
 * upload then supersedes the older adopted one.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../../lib/config/load.js';
import { loadCloud } from '../../../lib/drivers/openstack/clouds-yaml.js';
import { KeystoneSession } from '../../../lib/drivers/openstack/keystone.js';
import { waitFor } from '../../../lib/lifecycle.js';
import type { DibBuilder } from '../../../workers/builder/dib-builder.js';
import { fakeDiskimage, inProcessBuilder, type BuilderEnv } from '../../support/builder-env.js';
import { startGearmand, type GearmandHandle } from '../../support/gearmand.js';
import { LauncherSystem } from '../../support/launcher-system.js';
import { connectRaw, Nodepool11Tree, type RawZk } from '../../support/nodepool11-tree.js';
import { useNovaCloud, type NovaCloud } from '../../support/openstack-full.js';
import { startProcess, stopAllProcesses, type TrackedProcess } from '../../support/processes.js';
import { startZooKeeper, type ZooKeeperHandle } from '../../support/zookeeper.js';

const kazooScript = fileURLToPath(new URL('../../zookeeper/kazoo-lock.py', import.meta.url));
const nodepool11Read = fileURLToPath(new URL('../../fixtures/nodepool11_read.py', import.meta.url));
const run = promisify(execFile);

/** Glance calls as the provider's own (demo) user. */
class Glance {
  private constructor(private readonly ks: KeystoneSession) {}

  static async open(nova: NovaCloud): Promise<Glance> {
    return new Glance(await KeystoneSession.authenticate(await loadCloud(nova.cloud, { path: nova.cloudsFile })));
  }

  /** Creates an active qcow2 image from `file`; returns its id. */
  async create(name: string, file: string): Promise<string> {
    const res = await this.ks.request(`${this.ks.endpoint('image')}/v2/images`, { method: 'POST', json: { name, disk_format: 'qcow2', container_format: 'bare' } });
    const id = (JSON.parse(res.body) as { id: string }).id;
    const put = await fetch(`${this.ks.endpoint('image')}/v2/images/${id}/file`, {
      method: 'PUT', headers: { 'Content-Type': 'application/octet-stream', 'X-Auth-Token': await this.ks.token() }, body: await readFile(file),
    });
    if (put.status !== 204) throw new Error(`uploading ${name}: ${put.status} ${await put.text()}`);
    await waitFor(async () => (await this.status(id)) === 'active', { timeoutMs: 30_000, what: `image ${name} active`, intervalMs: 200 });
    return id;
  }

  /** The image's status, or undefined when Glance no longer has it. */
  async status(id: string): Promise<string | undefined> {
    const res = await this.ks.request(`${this.ks.endpoint('image')}/v2/images/${id}`, { method: 'GET', expect: [200, 404] });
    return res.status === 404 ? undefined : (JSON.parse(res.body) as { status: string }).status;
  }

  async delete(id: string): Promise<void> {
    await this.ks.request(`${this.ks.endpoint('image')}/v2/images/${id}`, { method: 'DELETE', expect: [204, 404] });
  }
}

void describe('nodepool-server adopting a Nodepool 11 ZooKeeper tree', () => {
  const provider = `adopt-${process.pid}`;
  let nova: NovaCloud;
  let zk: ZooKeeperHandle;
  let gearmand: GearmandHandle;
  let glance: Glance;
  let sys: LauncherSystem | undefined;
  let builder: DibBuilder | undefined;
  let raw: RawZk | undefined;
  let zuulLock: TrackedProcess | undefined;
  let tmp: string;
  const images: string[] = [];

  before(async () => {
    nova = await useNovaCloud();
    [zk, gearmand] = await Promise.all([startZooKeeper(), startGearmand()]);
    glance = await Glance.open(nova);
    tmp = await mkdtemp(path.join(os.tmpdir(), 'nodepool-adopt-'));
  });
  after(async () => {
    if (sys) {
      // This file's servers only (the cloud is shared): nothing min-ready, every node of ours used.
      await waitFor(async () => {
        for (const n of await sys!.store.listNodes({ provider })) {
          if (n.state === 'ready' || n.state === 'in-use') await sys!.store.updateNode(n.id, { state: 'used' }).catch(() => undefined);
        }
        return !(await nova.listAllServers()).some((s) => s.metadata.nodepool_provider_name === provider);
      }, { timeoutMs: 90_000, what: `no server of ${provider} left`, intervalMs: 1000 }).catch((err: unknown) => console.error(String(err)));
    }
    await sys?.stop();
    await builder?.stop({ abortAfterMs: 1000 });
    for (const id of images) await glance.delete(id).catch(() => undefined);
    raw?.close();
    await gearmand?.stop();
    await zk?.stop();
    await stopAllProcesses();
    await rm(tmp, { recursive: true, force: true });
  });

  it('serves from the adopted uploads, keeps them by retention, deletes nothing in use, honours the pause, then builds <image>-<seq>', async () => {
    const chroot = `/adopt-${randomUUID()}`;
    const file = path.join(tmp, 'tiny.qcow2');
    await run('qemu-img', ['create', '-q', '-f', 'qcow2', file, '1M']);
    for (const n of [1, 2, 3]) images.push(await glance.create(`${provider}-nodepool11-${n}`, file));
    const [imgA, imgB, imgC] = images as [string, string, string];

    // The tree, as Nodepool 11's builder, launcher and Zuul left it.
    raw = await connectRaw(`127.0.0.1:${zk.port}`);
    await new Promise<void>((resolve, reject) => raw!.client.mkdirp(chroot, (e) => (e ? reject(e) : resolve())));
    const rawChroot = await connectRaw(`127.0.0.1:${zk.port}${chroot}`);
    const tree = new Nodepool11Tree(rawChroot.client);
    const now = Date.now();
    const hex: string[] = [];
    const up: string[] = [];
    for (const [i, img] of [imgA, imgB, imgC].entries()) {
      const at = now - (3 - i) * 3600_000;
      const h = await tree.build({ image: 'deb', state: 'ready', at });
      hex.push(h);
      up.push(`${h}-${provider}-${await tree.upload({ image: 'deb', buildId: h, provider, state: 'ready', at: at + 600_000, externalId: img, externalName: `deb-${h}` })}`);
    }
    const [u1, u2, u3] = up as [string, string, string];
    const inUse = await tree.node({ state: 'in-use', at: now - 600_000, provider, pool: 'main', label: 'disk', externalId: randomUUID(),
      imageId: `/nodepool/images/deb/builds/${hex[0]}/providers/${provider}/images/${u1.slice(-10)}`, allocatedTo: null });
    const request = await tree.request(['disk'], now - 1000);
    await tree.pause('deb');
    rawChroot.close();
    // Zuul holds its in-use node locked (kazoo Lock), as it does while a job runs.
    zuulLock = startProcess('zuul-node-lock', '/usr/bin/python3', [kazooScript, `127.0.0.1:${zk.port}${chroot}`, `/nodepool/nodes/${inUse}/lock`, 'hold'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let lockOut = '';
    zuulLock.child.stdout?.on('data', (d: Buffer) => { lockOut += d.toString(); });
    await waitFor(() => lockOut.includes('held'), { timeoutMs: 20_000, what: "Zuul's lock on the in-use node", intervalMs: 50 });

    sys = await LauncherSystem.create({
      labels: [{ name: 'disk' }],
      providers: [{
        name: provider, driver: 'openstack', cloud: nova.cloud, 'region-name': nova.region, 'launch-timeout': 60, 'launch-retries': 2,
        diskimages: [{ name: 'deb' }],
        pools: [{ name: 'main', networks: [nova.network.name], 'host-key-checking': false, 'max-servers': 5, labels: [{ name: 'disk', diskimage: 'deb', 'flavor-name': 'm1.tiny' }] }],
      }],
      extra: {
        'zookeeper-servers': [{ host: '127.0.0.1', port: zk.port, chroot }],
        'clouds-file': nova.cloudsFile,
        'gearman-servers': [{ host: '127.0.0.1', port: gearmand.port }],
        diskimages: [fakeDiskimage('deb')],
        'image-lifecycle': { interval: 1, 'retry-delay': 2, 'max-retry-delay': 8, 'leak-check-interval': 0, 'lost-grace': 2 },
      },
    });
    builder = inProcessBuilder({ config: loadConfig(sys.configPath) } as BuilderEnv, { hostname: 'builder-a' });
    await builder.start();
    await sys.startServer();
    const store = sys.store;

    // The Zuul request is served from the newest adopted upload.
    const served = await sys.waitForRequest(request, ['fulfilled'], 120_000);
    const node = await store.getNode(served.nodes[0] as string);
    assert.equal(node?.image, u3, 'booted from the newest ready adopted upload');
    assert.ok((await nova.listAllServers()).some((s) => s.id === node?.externalId), 'the server exists in Nova');
    assert.deepEqual(await store.listCorrupt(), [], "nothing Nodepool wrote reads as corrupt");

    // Retention: the two newest ready uploads stay; the oldest goes, with its Glance image.
    await waitFor(async () => (await store.getUpload(u1)) === undefined, { timeoutMs: 60_000, what: `upload ${u1} deleted by retention`, intervalMs: 250 });
    assert.equal(await glance.status(imgA), undefined, 'its Glance image deleted');
    assert.deepEqual([(await store.getUpload(u2))?.state, (await store.getUpload(u3))?.state], ['ready', 'ready']);
    assert.equal(await glance.status(imgB), 'active');
    // Their files sit on Nodepool builders (no image-upload:<id> registered): lost, the uploads usable.
    await waitFor(async () => {
      const builds = await store.listBuilds({ diskimage: 'deb' });
      return builds.length === 2 && builds.every((b) => b.state === 'lost');
    }, { timeoutMs: 60_000, what: 'builds 2 and 3 lost, build 1 deleted with its upload', intervalMs: 250 });
    // Lost to us, ready to Nodepool 11 (issue 31): its readers, mirrored in Python, still take every record of the tree.
    const np11 = await run('/usr/bin/python3', [nodepool11Read, `127.0.0.1:${zk.port}${chroot}`], { timeout: 30_000 }).catch((err: { stdout?: string }) => {
      throw new Error(`Nodepool 11 cannot read the adopted tree: ${err.stdout ?? String(err)}`);
    });
    const read = JSON.parse(np11.stdout) as { states: Record<string, string>; errors: string[] };
    assert.deepEqual(read.errors, []);
    assert.deepEqual([hex[1], hex[2]].map((h) => read.states[`/nodepool/images/deb/builds/${h}`]), ['ready', 'ready']);
    // The node Zuul holds is left alone.
    assert.equal((await store.getNode(inUse))?.state, 'in-use');
    // Paused: nothing was built.
    assert.deepEqual((await store.listBuilds({ diskimage: 'deb' })).filter((b) => !hex.includes(b.id.slice(4))), []);

    // Unpaused (what `nodepool image-unpause` does): a build of ours, named <image>-<seq>, supersedes the older adoption.
    await store.setPause('deb', null, false);
    const ours = await waitFor(async () => (await store.listUploads({ diskimage: 'deb', states: ['ready'] })).find((u) => /^\d{10}$/.test(u.id)),
      { timeoutMs: 120_000, what: 'our build uploaded and ready', intervalMs: 250 });
    assert.equal(ours.buildId, 'deb-0000000001');
    if (ours.externalId) images.push(ours.externalId);
    await waitFor(async () => (await store.getUpload(u2)) === undefined, { timeoutMs: 60_000, what: `upload ${u2} superseded and deleted`, intervalMs: 250 });
    assert.equal((await store.getUpload(u3))?.state, 'ready', 'the newest adopted upload is kept beside ours');
    assert.equal(await glance.status(imgC), 'active');
    assert.equal((await store.getNode(inUse))?.state, 'in-use', 'still untouched');
    await zuulLock.stop();
  });
});
