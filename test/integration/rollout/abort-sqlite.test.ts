/**
 * A canary whose launches fail is revoked after K failures (issue 24 §3 `abort-on`), with
 * nodepool-server on SQLite and an openstack provider on the loopback Nova: the new upload's
 * Glance image was created without data (it stays `queued`), so the real Nova refuses every
 * boot of it ("Image ... is not active"). With `rollout: {canary: 50, abort-on:
 * {launch-failures: K}}` and a previous good upload, launches go on until the new upload is
 * revoked: its record then says revoked with the reason and its failures were counted, every
 * node that came up runs the previous upload, and the previous upload serves every later launch.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { RequestFailedError } from '../../../lib/errors.js';
import type { NodepoolClient } from '../../../lib/client/nodepool-client.js';
import type { UploadRecord } from '../../../lib/store/models.js';
import type { LauncherSystem } from '../../support/launcher-system.js';
import { closeParts, launch, oneProviderSystem, RolloutCloud, type OneProvider } from './rollout-env.js';

/** `abort-on.launch-failures`. */
const K = 2;

void describe('rollout on SQLite: a canary whose launches fail is revoked after K failures', () => {
  let parts: OneProvider | undefined;
  let cloud: RolloutCloud;
  let sys: LauncherSystem;
  let client: NodepoolClient;
  let previous: UploadRecord;
  let broken: UploadRecord;
  let goodImage: string;
  const provider = RolloutCloud.unique('abort');

  before(async () => {
    parts = await oneProviderSystem(provider, {
      rollout: { canary: 50, 'promote-after': { launches: 1000, age: 0 }, 'abort-on': { 'launch-failures': K } }, launchRetries: 1,
    }, 'unbootable');
    ({ cloud, sys, client, older: previous, newer: broken } = parts);
    goodImage = parts.images.get(previous.id) ?? '';
  });
  after(() => closeParts(parts, [provider]));

  it(`revokes the failing upload after ${K} launch failures, with the reason; every node that comes up runs the previous upload`, async () => {
    let launched = 0;
    let failed = 0;
    // Two requests at a time until the record says revoked (half the launches try the canary);
    // a request may fail while the canary is still served (every attempt of its node failing).
    while ((await sys.store.getUpload(broken.id))?.rollout?.state !== 'revoked') {
      assert.ok(launched + failed < 20, `upload ${broken.id} not revoked after ${launched} launches and ${failed} failed requests`);
      for (const r of await Promise.allSettled([launch(cloud, client, 'disk'), launch(cloud, client, 'disk')])) {
        if (r.status === 'rejected') {
          assert.ok(r.reason instanceof RequestFailedError, String(r.reason));
          assert.match(r.reason.message, /is not active/, 'a request fails only on Nova refusing the broken image');
          failed += 1;
          continue;
        }
        for (const l of r.value) {
          assert.equal(l.upload, previous.id, `node ${l.node.id} came up on the previous upload (the broken one cannot boot)`);
          assert.equal(l.glanceImage, goodImage);
          launched += 1;
        }
      }
    }
    const record = await sys.store.getUpload(broken.id);
    assert.ok(record);
    console.log(`# revoked after ${launched} launches and ${failed} failed requests; ${record.launchFailures ?? 0} failures counted on it`);
    assert.ok((record.launchFailures ?? 0) >= K, `${record.launchFailures ?? 0} failures counted, at least ${K}`);
    assert.equal(record.launches ?? 0, 0, 'no launch from it succeeded');
    assert.match(record.rollout?.reason ?? '', new RegExp(`${K} launch failures`), 'the reason says why');
    assert.equal(record.state, 'ready', 'the upload itself stays (revoked, not deleted)');
  });

  it('the previous upload serves every later launch', async () => {
    const before = (await sys.store.getUpload(broken.id))?.launchFailures ?? 0;
    const got = await launch(cloud, client, 'disk', 6);
    assert.deepEqual(got.map((l) => l.upload), got.map(() => previous.id));
    assert.equal((await sys.store.getUpload(broken.id))?.launchFailures ?? 0, before, 'no launch tried the revoked upload');
  });
});
