/**
 * Pin and revoke (issue 24 §1, §2) with nodepool-server on a SQLite store and an openstack
 * provider on the loopback Nova: two ready uploads of two builds (an old and a newer one, each
 * its own Glance image); the newest serves until the old build is pinned, the pinned build
 * serves while pinned (on the provider, and diskimage-wide), the newest again after the unpin;
 * revoking the newest build switches the next launch to the previous one, unrevoking back.
 * What a launch booted is read twice: the node's upload and the Glance image of its Nova server.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { NodepoolClient } from '../../../lib/client/nodepool-client.js';
import type { UploadRecord } from '../../../lib/store/models.js';
import type { LauncherSystem } from '../../support/launcher-system.js';
import { closeParts, DISKIMAGE, launch, oneProviderSystem, RolloutCloud, type Launched, type OneProvider } from './rollout-env.js';

void describe('rollout on SQLite: pin and revoke switch what the next launch boots', () => {
  let parts: OneProvider | undefined;
  let cloud: RolloutCloud;
  let sys: LauncherSystem;
  let client: NodepoolClient;
  let old: UploadRecord;
  let newer: UploadRecord;
  let images: Map<string, string>;
  const provider = RolloutCloud.unique('pin');

  /** One launch; asserts it booted `upload` (record and Nova agree). */
  async function boots(upload: UploadRecord, count = 1): Promise<Launched[]> {
    const got = await launch(cloud, client, 'disk', count);
    for (const l of got) {
      assert.equal(l.upload, upload.id, `node ${l.node.id} booted upload ${upload.id} (build ${upload.buildId})`);
      assert.equal(l.glanceImage, images.get(upload.id), `its Nova server runs the Glance image of upload ${upload.id}`);
    }
    return got;
  }

  before(async () => {
    parts = await oneProviderSystem(provider);
    ({ cloud, sys, client, older: old, newer, images } = parts);
  });
  after(() => closeParts(parts, [provider]));

  it('boots the newest ready upload while nothing is pinned', async () => {
    await boots(newer);
  });

  it('a pin of the old build on the provider boots it, the newer build staying ready', async () => {
    await sys.store.setPin(DISKIMAGE, provider, old.buildId, 'newer build breaks the tests');
    assert.deepEqual((await sys.store.listPins()).map((p) => [p.diskimage, p.provider, p.buildId]), [[DISKIMAGE, provider, old.buildId]]);
    await boots(old, 2);
    assert.equal((await sys.store.getUpload(newer.id))?.state, 'ready', 'the newer upload is still ready for the unpin');
  });

  it('a diskimage-wide pin holds too; unpinning both brings the newest back', async () => {
    await sys.store.setPin(DISKIMAGE, provider, null);
    await sys.store.setPin(DISKIMAGE, null, old.buildId, 'everywhere');
    await boots(old);
    await sys.store.setPin(DISKIMAGE, null, null);
    assert.deepEqual(await sys.store.listPins(), []);
    await boots(newer);
  });

  it('revoking the newest build boots the previous one at once; unrevoking switches back', async () => {
    await sys.store.setRevocation(DISKIMAGE, newer.buildId, true, 'kernel panic on boot');
    const [r] = await sys.store.listRevocations();
    assert.equal(r?.buildId, newer.buildId);
    assert.equal(r?.reason, 'kernel panic on boot');
    await boots(old, 2);
    await sys.store.setRevocation(DISKIMAGE, newer.buildId, false);
    assert.deepEqual(await sys.store.listRevocations(), []);
    await boots(newer);
  });
});
