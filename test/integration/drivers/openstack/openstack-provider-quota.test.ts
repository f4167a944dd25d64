/**
 * The openstack provider and the cloud's own compute quota on the loopback Nova: a boot Nova
 * refuses for quota aborts the node and leaves the handler no room, and the provider reports
 * Nova's limits (metrics), leaving unlimited ones out.
 *
 * Apart from openstack-provider.test.ts because these cases change the instance quota of the
 * shared `demo` project, which every file that boots servers uses: this file runs alone, and
 * gives the quota back as the cloud starts it (unlimited, -1), never a value read earlier
 * (another file may have had it changed at that moment).
 */
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { useNovaCloud } from '../../../support/openstack-full.js';
import { OpenStackEnv } from './openstack-env.js';

/** The loopback cloud's compute quota for `demo` (test/support/openstack-full-admin.ts lifts it). */
const UNLIMITED = -1;

describe("openstack provider and the cloud's compute quota", () => {
  let env: OpenStackEnv;

  before(async () => { env = await OpenStackEnv.create(await useNovaCloud()); });
  afterEach(() => env.reset());
  after(async () => {
    await env?.cloud.setComputeQuota('demo', { instances: UNLIMITED });
    await env?.finish();
  });

  it('aborts the node when Nova refuses the server for quota, and the handler then sees no room', async () => {
    const p = await env.startProvider();
    await env.cloud.setComputeQuota('demo', { instances: 0 });
    try {
      const handler = p.getRequestHandler('main', await env.store.createRequest({ labels: ['tiny'], requestor: 'openstack-test' }));
      assert.equal(await handler.hasRemainingQuota('tiny'), false);
      assert.equal(await handler.hasProviderQuota(['tiny']), false);
      const node = await env.launch(p, 'tiny');
      assert.equal(node.state, 'aborted');
      assert.match(String(node.reason), /quota exceeded/i);
      assert.deepEqual(await env.servers(), []);
    } finally {
      await env.cloud.setComputeQuota('demo', { instances: UNLIMITED });
    }
    const handler = p.getRequestHandler('main', await env.store.createRequest({ labels: ['tiny'], requestor: 'openstack-test' }));
    assert.equal(await handler.hasRemainingQuota('tiny'), true, 'room again once the quota is back');
  });

  it("reports the cloud's own limits from Nova's quota, leaving unlimited ones out (metrics)", async () => {
    const p = await env.startProvider();
    await env.cloud.setComputeQuota('demo', { instances: 7 });
    try {
      const limits = await p.resourceLimits();
      assert.equal(limits.instances, 7);
      for (const [resource, limit] of Object.entries(limits)) {
        assert.ok(['cores', 'ram', 'instances'].includes(resource), resource);
        assert.ok(Number.isFinite(limit), `${resource} ${limit}`);
      }
    } finally {
      await env.cloud.setComputeQuota('demo', { instances: UNLIMITED });
    }
  });
});
