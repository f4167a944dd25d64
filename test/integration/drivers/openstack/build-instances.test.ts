/**
 * The openstack driver's build instances (snapshot builds, docs/snapshot-builds.md) against the
 * loopback Nova. Its fake virt driver boots no guest: a server never answers SSH, and its
 * `createImage` makes a Glance image that stays `queued` with no data (nova/virt/fake.py's
 * snapshot() uploads nothing). So the whole build, setup over SSH included, runs on the qemu
 * driver (test/integration/builder/snapshot-qemu.test.ts); here: the boot and what is deleted
 * when SSH never answers, Nova's stop and create-image flow up to the point where the fake
 * driver stops, the bounded wait on a snapshot without data and its deletes, the download with
 * Glance's hashes checked on an image that has data (the cloud's own), and leftovers.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { parseConfig } from '../../../../lib/config/load.js';
import { OpenStackAccess } from '../../../../lib/drivers/openstack/access.js';
import {
  BUILD_BUILDER_KEY, BUILD_INSTANCE_KEY, BUILD_SNAPSHOT_KEY, OpenStackBuildInstances,
} from '../../../../lib/drivers/openstack/build-instances.js';
import { loadCloud } from '../../../../lib/drivers/openstack/clouds-yaml.js';
import type { OpenStackProviderConfig } from '../../../../lib/drivers/openstack/config.js';
import { NovaClient } from '../../../../lib/drivers/openstack/nova.js';
import { LaunchError } from '../../../../lib/errors.js';
import { silentLogger } from '../../../../lib/log.js';
import { useNovaCloud, type NovaCloud } from '../../../support/openstack-full.js';
import { providerYaml } from './openstack-env.js';

const BUILDER = 'builder-under-test';
const KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBuildKeyOfThisTestOnly0000000000000000000 nodepool-build-x';

describe('openstack build instances on the loopback Nova', { timeout: 600_000 }, () => {
  let cloud: NovaCloud;
  let access: OpenStackAccess;
  let config: OpenStackProviderConfig;
  let instances: OpenStackBuildInstances;
  let nova: NovaClient;
  let dir: string;

  before(async () => {
    cloud = await useNovaCloud();
    dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-build-instances-'));
    const parsed = parseConfig(providerYaml(cloud, 'build-cloud', { extra: { 'boot-timeout': 5 } }), path.join(dir, 'nodepool.yaml'));
    config = parsed.providers[0] as OpenStackProviderConfig;
    access = await OpenStackAccess.create(await loadCloud(cloud.cloud, { path: cloud.cloudsFile }));
    instances = new OpenStackBuildInstances(config, access, silentLogger(), { pollMs: 250, snapshotTimeoutMs: 8000, deleteTimeoutMs: 120_000 });
    nova = new NovaClient(access.session);
  });

  after(async () => {
    access?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** Build servers of this test's builder that Nova still lists. */
  const buildServers = async (): Promise<string[]> =>
    (await cloud.listAllServers()).filter((s) => s.metadata[BUILD_BUILDER_KEY] === BUILDER).map((s) => s.id);

  it('boots a tagged server from the base image by name; one that never answers SSH is deleted, the failure naming the host', async () => {
    const ac = new AbortController();
    await assert.rejects(
      instances.boot({ buildId: 'snap-0000000001', builderId: BUILDER, baseImage: cloud.image.name, authorizedKey: KEY, flavor: 'm1.tiny' }, ac.signal),
      (err: Error) => err instanceof LaunchError && /10\.1\.0\.\d+/.test(err.message),
    );
    assert.deepEqual(await buildServers(), [], 'the build server is deleted');
  });

  it('refuses a base image the cloud does not have, before booting anything', async () => {
    await assert.rejects(
      instances.boot({ buildId: 'snap-0000000002', builderId: BUILDER, baseImage: 'no such image', authorizedKey: KEY }, new AbortController().signal),
      /base-image "no such image": no active image with that name or id in cloud/,
    );
    assert.deepEqual(await buildServers(), []);
  });

  it('stops a server through Nova, asks for its image, and bounds the wait on a snapshot without data; the image is deleted, the server found as a leftover and removed', async () => {
    const flavor = cloud.flavors.find((f) => f.name === 'm1.tiny');
    const id = await nova.createServer({
      name: 'build-snap-0000000003', imageId: cloud.image.id, flavorId: flavor?.id ?? '', networkIds: [cloud.network.id],
      metadata: { [BUILD_INSTANCE_KEY]: 'snap-0000000003', [BUILD_BUILDER_KEY]: BUILDER },
    });
    for (let i = 0; i < 240 && (await nova.getServer(id))?.status !== 'ACTIVE'; i++) await new Promise((r) => setTimeout(r, 250));
    const signal = new AbortController().signal;
    await instances.stop(id, 120_000, signal);
    assert.equal((await nova.getServer(id))?.status, 'SHUTOFF');
    await instances.stop(id, 120_000, signal); // already stopped: fine
    const dest = path.join(dir, 'snap-0000000003.qcow2');
    const started = Date.now();
    await assert.rejects(
      instances.snapshot(id, dest, 'qcow2', { signal }),
      (err: Error) => err instanceof LaunchError && /did not become a usable image: image \S+ still (queued|saving) after 8000 ms/.test(err.message),
    );
    assert.ok(Date.now() - started < 60_000, 'bounded by the snapshot timeout');
    assert.deepEqual(readdirSync(dir).filter((f) => f.startsWith('snap-')), [], 'no partial file');
    assert.deepEqual(await access.glance.listImages({ properties: { [BUILD_SNAPSHOT_KEY]: id } }), [], 'the snapshot image is deleted');
    assert.deepEqual(await instances.leftovers(BUILDER), [id]);
    assert.deepEqual(await instances.leftovers('another-builder'), []);
    await instances.remove(id);
    assert.equal(await nova.getServer(id), undefined);
    assert.deepEqual(await instances.leftovers(BUILDER), []);
    await instances.remove(id); // gone already: fine
  });

  it('downloads an image with data (the cloud\'s own) with Glance\'s checksum and hash checked', async () => {
    const dest = path.join(dir, 'base.qcow2');
    const image = await access.glance.getImage(cloud.image.id);
    const got = await access.glance.downloadImage(cloud.image.id, dest);
    assert.equal(got.size, image?.size);
    assert.equal(got.md5, image?.checksum);
    const h = createHash('sha256');
    await pipeline(createReadStream(dest), h);
    assert.equal(got.sha256, h.digest('hex'));
    assert.ok(!existsSync(`${dest}.part`));
  });
});
