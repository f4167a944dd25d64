/**
 * Revoke on two server hosts (issue 24 §2: "effective within one launcher pass on every
 * host"): two nodepool-servers (hostnames host-a and host-b, each its own store handle and
 * launcher, each limited with `--provider` to its own openstack provider on the loopback Nova)
 * share one real ZooKeeper. Both providers have ready uploads of the same two builds. Revoking
 * the newest build, written once through a third store handle, makes the next launch on EACH
 * host boot the previous build; unrevoking switches both back.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { NodepoolClient } from '../../../lib/client/nodepool-client.js';
import type { UploadRecord } from '../../../lib/store/models.js';
import { LauncherSystem } from '../../support/launcher-system.js';
import { stopAllProcesses } from '../../support/processes.js';
import { startZooKeeper, type ZooKeeperHandle } from '../../support/zookeeper.js';
import { cloudProvider, DISKIMAGE, drained, launch, readyUploads, RolloutCloud } from './rollout-env.js';

void describe('rollout on ZooKeeper: a revoke switches the next launch on two server hosts', () => {
  let cloud: RolloutCloud;
  let zk: ZooKeeperHandle;
  let sys: LauncherSystem;
  let client: NodepoolClient;
  const hosts = [
    { host: 'host-a', provider: RolloutCloud.unique('rev-a'), label: 'disk-a' },
    { host: 'host-b', provider: RolloutCloud.unique('rev-b'), label: 'disk-b' },
  ];
  /** Per build (old, newer): its upload on each host's provider, in `hosts` order. */
  let old: UploadRecord[];
  let newer: UploadRecord[];
  const images = new Map<string, string>();

  /** Launches one node on each host at once; asserts each booted that host's upload of `build`. */
  async function eachBoots(build: UploadRecord[]): Promise<void> {
    const got = await Promise.all(hosts.map((h) => launch(cloud, client, h.label)));
    got.forEach(([l], i) => {
      const want = build[i];
      assert.ok(l && want);
      assert.equal(l.node.provider, hosts[i]?.provider);
      assert.equal(l.upload, want.id, `${hosts[i]?.host}: node ${l.node.id} booted upload ${want.id} of build ${want.buildId}`);
      assert.equal(l.glanceImage, images.get(want.buildId), `${hosts[i]?.host}: its Nova server runs build ${want.buildId}'s image`);
    });
  }

  before(async () => {
    [cloud, zk] = await Promise.all([RolloutCloud.open(), startZooKeeper()]);
    sys = await LauncherSystem.create({
      labels: hosts.map((h) => ({ name: h.label })),
      providers: hosts.map((h) => cloudProvider(cloud.nova, h.provider, { label: h.label })),
      extra: {
        'clouds-file': cloud.nova.cloudsFile, diskimages: [{ name: DISKIMAGE }],
        'zookeeper-servers': [{ host: zk.host, port: zk.port, chroot: `/rollout-${randomUUID().slice(0, 8)}` }], 'zookeeper-timeout': 5,
      },
    });
    const providers = hosts.map((h) => h.provider);
    const [oldImage, newImage] = await Promise.all([cloud.bootableImage(`${providers[0]}-old`), cloud.bootableImage(`${providers[0]}-new`)]);
    old = await readyUploads(sys.store, providers, oldImage);
    newer = await readyUploads(sys.store, providers, newImage);
    images.set(old[0]!.buildId, oldImage).set(newer[0]!.buildId, newImage);
    for (const h of hosts) await sys.startServer(h.host, [h.provider]);
    client = await sys.client();
  });
  after(async () => {
    if (sys) {
      for (const h of hosts) await drained(cloud, sys, h.provider).catch((err: unknown) => console.error(`drain: ${String(err)}`));
    }
    await sys?.stop();
    await cloud?.close();
    await zk?.stop();
    await stopAllProcesses();
  });

  it('both hosts boot the newest build first', async () => {
    await eachBoots(newer);
  });

  it('after the revoke of the newest build the next launch on each host boots the previous build', async () => {
    await sys.store.setRevocation(DISKIMAGE, newer[0]!.buildId, true, 'bad image');
    await eachBoots(old);
  });

  it('after the unrevoke the next launch on each host boots the newest build again', async () => {
    await sys.store.setRevocation(DISKIMAGE, newer[0]!.buildId, false);
    await eachBoots(newer);
  });
});
