/**
 * Faults of snapshot builds on an openstack provider, against the loopback Nova (its fake virt
 * driver boots no guest and makes snapshots without data; see
 * test/integration/drivers/openstack/build-instances.test.ts): a build instance that never
 * answers SSH, and a snapshot that never becomes an image; a builder that died mid-build,
 * whose tagged server is found and deleted; and a snapshot whose download is cut (the test
 * puts the disk data into Nova's snapshot image, the part the fake driver skips, so the whole
 * create-image, wait, download and delete flow runs). Each leaves no server, image or file behind.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, readdirSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import os from 'node:os';
import path from 'node:path';
import { parseConfig } from '../../lib/config/load.js';
import { OpenStackAccess } from '../../lib/drivers/openstack/access.js';
import { BUILD_BUILDER_KEY, BUILD_INSTANCE_KEY, BUILD_SNAPSHOT_KEY, OpenStackBuildInstances } from '../../lib/drivers/openstack/build-instances.js';
import { loadCloud, type CloudCredentials } from '../../lib/drivers/openstack/clouds-yaml.js';
import type { OpenStackProviderConfig } from '../../lib/drivers/openstack/config.js';
import { NovaClient } from '../../lib/drivers/openstack/nova.js';
import { CloudError, LaunchError } from '../../lib/errors.js';
import { waitFor } from '../../lib/lifecycle.js';
import { silentLogger } from '../../lib/log.js';
import { providerYaml } from '../integration/drivers/openstack/openstack-env.js';
import { DownloadCutProxy } from '../support/download-cut-proxy.js';
import { recordFault } from '../support/fault-report.js';
import { useNovaCloud, type NovaCloud } from '../support/openstack-full.js';

const BUILDER = 'fault-builder';
const KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBuildKeyOfThisTestOnly0000000000000000000 nodepool-build-x';
/** The provider's boot-timeout (seconds). */
const BOOT_TIMEOUT_S = 30;
/** How long the snapshot may take to become an image here (the provider's image-upload-timeout in a site). */
const SNAPSHOT_TIMEOUT_MS = 8000;

describe('faults: snapshot builds on openstack', { timeout: 600_000 }, () => {
  let cloud: NovaCloud;
  let access: OpenStackAccess;
  let creds: CloudCredentials;
  let config: OpenStackProviderConfig;
  let instances: OpenStackBuildInstances;
  let nova: NovaClient;
  let dir: string;

  before(async () => {
    cloud = await useNovaCloud();
    dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-snapshot-faults-'));
    // boot-timeout 30 s: ACTIVE within it even under load (a loaded run once took over 5 s), the rest is the SSH wait.
    const parsed = parseConfig(providerYaml(cloud, 'build-cloud', { extra: { 'boot-timeout': BOOT_TIMEOUT_S } }), path.join(dir, 'nodepool.yaml'));
    creds = await loadCloud(cloud.cloud, { path: cloud.cloudsFile });
    access = await OpenStackAccess.create(creds);
    config = parsed.providers[0] as OpenStackProviderConfig;
    instances = new OpenStackBuildInstances(config, access, silentLogger(), {
      pollMs: 250, snapshotTimeoutMs: SNAPSHOT_TIMEOUT_MS, deleteTimeoutMs: 120_000,
    });
    nova = new NovaClient(access.session);
  });

  after(async () => {
    access?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** Build servers of this file's builder that Nova still lists. */
  const buildServers = async (): Promise<string[]> =>
    (await cloud.listAllServers()).filter((s) => s.metadata[BUILD_BUILDER_KEY] === BUILDER).map((s) => s.id);

  /** A tagged build server, booted without the builder (as one a dead builder left), once ACTIVE. */
  async function taggedServer(buildId: string): Promise<string> {
    const flavor = cloud.flavors.find((f) => f.name === 'm1.tiny');
    const id = await nova.createServer({
      name: `build-${buildId}`, imageId: cloud.image.id, flavorId: flavor?.id ?? '', networkIds: [cloud.network.id],
      metadata: { [BUILD_INSTANCE_KEY]: buildId, [BUILD_BUILDER_KEY]: BUILDER },
    });
    for (let i = 0; i < 480 && (await nova.getServer(id))?.status !== 'ACTIVE'; i++) await new Promise((r) => setTimeout(r, 250));
    return id;
  }

  /**
   * Plays the hypervisor's part, which the fake virt driver skips: once Nova has made the
   * snapshot image of `serverId` (queued, no data, no formats), sets its disk and container
   * formats and puts `disk` into it as its data, as a real driver's snapshot upload does.
   */
  async function fillSnapshot(serverId: string, disk: string): Promise<string> {
    const image = await waitFor(async () => (await access.glance.listImages({ properties: { [BUILD_SNAPSHOT_KEY]: serverId } }))[0], {
      timeoutMs: 60_000, intervalMs: 250, what: `Nova's snapshot image of ${serverId}`,
    });
    const token = await access.session.token();
    const formats = await fetch(`${access.glance.baseUrl}/v2/images/${image.id}`, {
      method: 'PATCH', headers: { 'x-auth-token': token, 'content-type': 'application/openstack-images-v2.1-json-patch' },
      body: JSON.stringify([{ op: 'replace', path: '/disk_format', value: 'qcow2' }, { op: 'replace', path: '/container_format', value: 'bare' }]),
    });
    if (formats.status !== 200) throw new Error(`Glance refused the snapshot's formats: ${formats.status} ${await formats.text()}`);
    const res = await fetch(`${access.glance.baseUrl}/v2/images/${image.id}/file`, {
      method: 'PUT', body: await readFile(disk), headers: { 'x-auth-token': token, 'content-type': 'application/octet-stream' },
    });
    if (res.status !== 204) throw new Error(`Glance refused the snapshot's data: ${res.status} ${await res.text()}`);
    return image.id;
  }

  const sha256Of = async (file: string): Promise<string> => {
    const h = createHash('sha256');
    await pipeline(createReadStream(file), h);
    return h.digest('hex');
  };

  it('a build instance that never answers SSH: the boot fails naming its address, within boot-timeout, and the server is deleted', async () => {
    const started = Date.now();
    await assert.rejects(
      instances.boot({ buildId: 'snap-0000000001', builderId: BUILDER, baseImage: cloud.image.name, authorizedKey: KEY, flavor: 'm1.tiny' }, new AbortController().signal),
      (err: Error) => err instanceof LaunchError && /at 10\.1\.0\.\d+ does not answer SSH/.test(err.message),
    );
    const left = await buildServers();
    assert.deepEqual(left, [], 'the build server is deleted');
    recordFault({ scenario: 'snapshot build: instance never answers SSH (openstack)', runs: 1, recovered: 1, lost: 0, leaked: left.length, recoverMs: Date.now() - started, notes: `boot-timeout ${BOOT_TIMEOUT_S} s; time to the boot failing with the server deleted` });
  });

  it('a snapshot that never becomes an image: the wait is bounded, the image deleted, no partial file', async () => {
    const id = await taggedServer('snap-0000000002');
    const signal = new AbortController().signal;
    await instances.stop(id, 120_000, signal);
    assert.equal((await nova.getServer(id))?.status, 'SHUTOFF');
    await instances.stop(id, 120_000, signal); // already stopped: fine
    const started = Date.now();
    await assert.rejects(
      instances.snapshot(id, path.join(dir, 'snap-0000000002.qcow2'), 'qcow2', { signal }),
      (err: Error) => err instanceof LaunchError && new RegExp(`did not become a usable image: image \\S+ still (queued|saving) after ${SNAPSHOT_TIMEOUT_MS} ms`).test(err.message),
    );
    const took = Date.now() - started;
    assert.ok(took < 60_000, `bounded by the snapshot timeout (${took} ms)`);
    const files = readdirSync(dir).filter((f) => f.startsWith('snap-'));
    const images = await access.glance.listImages({ properties: { [BUILD_SNAPSHOT_KEY]: id } });
    assert.deepEqual(files, [], 'no partial file');
    assert.deepEqual(images, [], 'the snapshot image is deleted');
    await instances.remove(id);
    recordFault({ scenario: 'snapshot build: snapshot never becomes an image (openstack)', runs: 1, recovered: 1, lost: 0, leaked: files.length + images.length, recoverMs: took, notes: `the fake virt driver's snapshot stays queued; bound ${SNAPSHOT_TIMEOUT_MS} ms` });
  });

  it('a builder that died mid-build: its tagged server is a leftover of its id only, and removing it deletes it and its snapshot image', async () => {
    const id = await taggedServer('snap-0000000003');
    // A snapshot image of it left too (as after a kill -9 while Nova made it).
    const imageId = await nova.createImage(id, `build-snapshot-${id}`, { [BUILD_SNAPSHOT_KEY]: id });
    assert.deepEqual(await instances.leftovers(BUILDER), [id]);
    assert.deepEqual(await instances.leftovers('another-builder'), []);
    const started = Date.now();
    for (const left of await instances.leftovers(BUILDER)) await instances.remove(left);
    const took = Date.now() - started;
    assert.equal(await nova.getServer(id), undefined);
    assert.equal(await access.glance.getImage(imageId), undefined, 'its snapshot image is deleted');
    assert.deepEqual(await instances.leftovers(BUILDER), []);
    await instances.remove(id); // gone already: fine
    recordFault({ scenario: 'snapshot build: builder killed, server left (openstack)', runs: 1, recovered: 1, lost: 0, leaked: (await buildServers()).length, recoverMs: took, notes: 'time for the next start to delete the tagged server and its snapshot image' });
  });

  it('a snapshot download cut mid-way: the snapshot fails naming Glance\'s call, no partial file, the snapshot image deleted; the next try brings the same bytes', async () => {
    const id = await taggedServer('snap-0000000004');
    const signal = new AbortController().signal;
    await instances.stop(id, 120_000, signal);
    // The instance's disk as the hypervisor would give it: a real qcow2 holding 4 MiB of random data.
    const raw = path.join(dir, 'disk.raw');
    const disk = path.join(dir, 'disk.qcow2');
    await writeFile(raw, randomBytes(4 << 20));
    execFileSync('qemu-img', ['convert', '-q', '-f', 'raw', '-O', 'qcow2', raw, disk]);
    const proxy = await DownloadCutProxy.start(access.glance.baseUrl);
    const cutAccess = await OpenStackAccess.create(creds, silentLogger(), { glance: { endpoint: proxy.url } });
    const cutInstances = new OpenStackBuildInstances(config, cutAccess, silentLogger(), { pollMs: 250, snapshotTimeoutMs: 60_000, deleteTimeoutMs: 120_000 });
    const dest = path.join(dir, 'snap-0000000004.qcow2');
    try {
      proxy.cut = { times: 1, afterBytes: 1 << 20 };
      const started = Date.now();
      const [cut, filled] = await Promise.allSettled([cutInstances.snapshot(id, dest, 'qcow2', { signal }), fillSnapshot(id, disk)]);
      const took = Date.now() - started;
      assert.equal(filled.status, 'fulfilled', filled.status === 'rejected' ? String(filled.reason) : '');
      assert.equal(cut.status, 'rejected', 'the cut download fails the snapshot');
      const reason = (cut as PromiseRejectedResult).reason as Error;
      assert.ok(reason instanceof CloudError && /Glance GET \S*\/file/.test(reason.message), `names Glance's call: ${reason.message}`);
      assert.deepEqual(proxy.downloads.map((d) => [d.outcome, d.bytes]), [['cut', 1 << 20]]);
      const files = readdirSync(dir).filter((f) => f.startsWith('snap-'));
      const images = await access.glance.listImages({ properties: { [BUILD_SNAPSHOT_KEY]: id } });
      assert.deepEqual(files, [], 'no partial file');
      assert.deepEqual(images, [], 'the snapshot image is deleted');

      // The next try, nothing cut: the bytes the hypervisor gave arrive, checked against Glance's hashes.
      const [again, refilled] = await Promise.allSettled([cutInstances.snapshot(id, dest, 'qcow2', { signal }), fillSnapshot(id, disk)]);
      assert.equal(refilled.status, 'fulfilled', refilled.status === 'rejected' ? String(refilled.reason) : '');
      assert.equal(again.status, 'fulfilled', again.status === 'rejected' ? String(again.reason) : '');
      assert.equal(await sha256Of(dest), await sha256Of(disk), 'the snapshot file holds the instance\'s disk');
      assert.deepEqual(await access.glance.listImages({ properties: { [BUILD_SNAPSHOT_KEY]: id } }), [], 'the cloud\'s snapshot image is deleted once downloaded');
      recordFault({
        scenario: 'snapshot build: snapshot download cut (openstack)', runs: 1, recovered: 1, lost: 0, leaked: files.length + images.length, recoverMs: took,
        notes: 'cut after 1 MiB of a 4 MiB qcow2 (the test puts the data Nova\'s fake driver does not); time to the failure with the file and image gone',
      });
    } finally {
      await proxy.stop();
      cutAccess.close();
      await rm(dest, { force: true });
      await instances.remove(id);
    }
  });
});
