import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { silentLogger } from '../../../../lib/log.js';
import { openStore } from '../../../../lib/store/open-store.js';
import { countByState, CountSampler } from '../../../../server/web/console/count-sampler.js';

describe('CountSampler', () => {
  it('counts by state', () => {
    assert.deepEqual(countByState([{ state: 'a' }, { state: 'b' }, { state: 'a' }]), { a: 2, b: 1 });
  });

  it('keeps the newest samples up to its capacity, from a real store', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-sampler-'));
    const store = await openStore({ stateDir: dir, zookeeperServers: [] });
    try {
      let now = 1000;
      const sampler = new CountSampler({ store, clock: () => now, log: silentLogger(), intervalMs: 60_000, capacity: 2 });
      assert.equal(sampler.windowMs, 120_000);
      await sampler.sample();
      await store.createNode({ state: 'ready', provider: 'p', pool: 'main', labels: ['l'] });
      await store.createRequest({ labels: ['l'], requestor: 'me' });
      now = 2000;
      await sampler.sample();
      now = 3000;
      await sampler.sample();
      assert.deepEqual(sampler.samples(), [
        { time: 2000, nodes: { ready: 1 }, requests: { requested: 1 } },
        { time: 3000, nodes: { ready: 1 }, requests: { requested: 1 } },
      ]);
      sampler.stop();
    } finally {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
