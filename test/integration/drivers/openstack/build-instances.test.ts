/**
 * The openstack driver's build instances (snapshot builds, docs/snapshot-builds.md) against the
 * loopback Nova: a base image the cloud does not have, and the download with Glance's hashes
 * checked on an image that has data (the cloud's own). Its fake virt driver boots no guest (a
 * server never answers SSH) and its `createImage` makes an image without data, so the boot and
 * the snapshot are faults there: test/faults/snapshot-openstack.test.ts. The whole build, setup
 * over SSH included, runs on the qemu driver (test/integration/builder/snapshot-qemu.test.ts).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createReadStream, existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { parseConfig } from '../../../../lib/config/load.js';
import { OpenStackAccess } from '../../../../lib/drivers/openstack/access.js';
import { BUILD_BUILDER_KEY, OpenStackBuildInstances } from '../../../../lib/drivers/openstack/build-instances.js';
import { loadCloud } from '../../../../lib/drivers/openstack/clouds-yaml.js';
import type { OpenStackProviderConfig } from '../../../../lib/drivers/openstack/config.js';
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
  let dir: string;

  before(async () => {
    cloud = await useNovaCloud();
    dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-build-instances-'));
    const parsed = parseConfig(providerYaml(cloud, 'build-cloud', { extra: { 'boot-timeout': 5 } }), path.join(dir, 'nodepool.yaml'));
    config = parsed.providers[0] as OpenStackProviderConfig;
    access = await OpenStackAccess.create(await loadCloud(cloud.cloud, { path: cloud.cloudsFile }));
    instances = new OpenStackBuildInstances(config, access, silentLogger(), { pollMs: 250 });
  });

  after(async () => {
    access?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** Build servers of this test's builder that Nova still lists. */
  const buildServers = async (): Promise<string[]> =>
    (await cloud.listAllServers()).filter((s) => s.metadata[BUILD_BUILDER_KEY] === BUILDER).map((s) => s.id);

  it('refuses a base image the cloud does not have, before booting anything', async () => {
    await assert.rejects(
      instances.boot({ buildId: 'snap-0000000002', builderId: BUILDER, baseImage: 'no such image', authorizedKey: KEY }, new AbortController().signal),
      /base-image "no such image": no active image with that name or id in cloud/,
    );
    assert.deepEqual(await buildServers(), []);
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
