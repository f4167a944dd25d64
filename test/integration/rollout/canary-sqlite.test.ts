/**
 * Canary rollout of a new upload (issue 24 §3) with nodepool-server on SQLite and an openstack
 * provider on the loopback Nova: the provider diskimage has `rollout: {canary: 50, promote-after:
 * {launches: N, age: 0}}` and two ready uploads (the previous build's and the new one's, each
 * its own Glance image). Over 20 launches the new upload serves between 5 and 15 and its
 * `launches` count is the number of nodes that booted it; with N set just above that count it is
 * a canary until its N-th successful launch, then its record says promoted and every launch
 * boots it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { NodepoolClient } from '../../../lib/client/nodepool-client.js';
import type { UploadRecord } from '../../../lib/store/models.js';
import type { LauncherSystem } from '../../support/launcher-system.js';
import { closeParts, cloudProvider, launch, oneProviderSystem, RolloutCloud, type Launched, type OneProvider } from './rollout-env.js';

/** Launches over which the share is measured, and how many at once. */
const LAUNCHES = 20;
const AT_ONCE = 10;
/** `promote-after.launches` while the share is measured: out of reach of the launches made. */
const OUT_OF_REACH = 1000;

void describe('rollout on SQLite: a 50 % canary serves its share, then is promoted after N launches', () => {
  let parts: OneProvider | undefined;
  let cloud: RolloutCloud;
  let sys: LauncherSystem;
  let client: NodepoolClient;
  let previous: UploadRecord;
  let fresh: UploadRecord;
  let images: Map<string, string>;
  const provider = RolloutCloud.unique('canary');
  const rollout = (launches: number): Record<string, unknown> => ({ canary: 50, 'promote-after': { launches, age: 0 } });

  /** Launches `count` nodes, `AT_ONCE` in flight; checks each node's upload is its server's image. */
  async function launches(count: number): Promise<Launched[]> {
    const out: Launched[] = [];
    let started = 0;
    await Promise.all(Array.from({ length: Math.min(AT_ONCE, count) }, async () => {
      while (started < count) {
        started += 1;
        for (const l of await launch(cloud, client, 'disk')) {
          assert.ok(l.upload === previous.id || l.upload === fresh.id, `node ${l.node.id} booted ${l.upload}, one of the two uploads`);
          assert.equal(l.glanceImage, images.get(l.upload), `node ${l.node.id}'s Nova server runs its upload's Glance image`);
          out.push(l);
        }
      }
    }));
    return out;
  }

  before(async () => {
    parts = await oneProviderSystem(provider, { rollout: rollout(OUT_OF_REACH), maxServers: 2 * AT_ONCE });
    ({ cloud, sys, client, older: previous, newer: fresh, images } = parts);
  });
  after(() => closeParts(parts, [provider]));

  let served = 0;

  it(`over ${LAUNCHES} launches the new upload serves between a quarter and three quarters, as its launch count says`, async () => {
    const started = Date.now();
    const got = await launches(LAUNCHES);
    served = got.filter((l) => l.upload === fresh.id).length;
    console.log(`# ${LAUNCHES} launches through Nova in ${((Date.now() - started) / 1000).toFixed(1)} s; the canary served ${served}`);
    assert.ok(served >= LAUNCHES / 4 && served <= (3 * LAUNCHES) / 4, `the canary served ${served} of ${LAUNCHES}`);
    const record = await sys.store.getUpload(fresh.id);
    assert.equal(record?.launches, served, 'its launches count is the nodes that booted it');
    assert.equal(record?.launchFailures ?? 0, 0);
    assert.notEqual(record?.rollout?.state, 'promoted', `not promoted before ${OUT_OF_REACH} launches`);
    assert.equal((await sys.store.getUpload(previous.id))?.state, 'ready');
  });

  it('with promote-after N it stays a canary until its N-th launch, then is promoted and serves every launch', async () => {
    assert.ok(served > 0, 'the share was measured');
    const n = served + 1;
    await sys.rewrite((p) => ({ ...p, providers: [cloudProvider(cloud.nova, provider, { rollout: rollout(n), maxServers: 2 * AT_ONCE })] }));
    // Two launches at a time, the record read between them: a canary below N, promoted from N on.
    for (let batch = 0; ; batch++) {
      const record = await sys.store.getUpload(fresh.id);
      assert.ok(record);
      if ((record.launches ?? 0) >= n) break;
      assert.notEqual(record.rollout?.state, 'promoted', `promoted after ${record.launches ?? 0} launches, before ${n}`);
      assert.ok(batch < 10, `the canary had ${record.launches ?? 0} launches after ${batch} more batches, not ${n}`);
      await launches(2);
    }
    const promoted = await sys.store.getUpload(fresh.id);
    assert.equal(promoted?.rollout?.state, 'promoted', `the record says promoted after ${promoted?.launches ?? 0} launches (N = ${n})`);
    const later = await launches(4);
    assert.deepEqual(later.map((l) => l.upload), later.map(() => fresh.id), 'every launch after the promotion boots it');
  });
});
