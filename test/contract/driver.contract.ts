/**
 * The driver contract: every driver (static, openstack, …) runs this suite from its own test
 * file against the real thing behind it (sshd on loopback, the loopback Nova). A fixture
 * starts that, and gives a config with one pool serving one label.
 *
 * Launching drivers (canLaunch) must create a ready node from a `building` record, list it
 * with our metadata, delete it, and remove a resource whose record is gone. Registering
 * drivers (static) must register ready nodes at start, give a slot back after its record is
 * deleted, and re-register a slot whose record vanished.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import os from 'node:os';
import type { Config } from '../../lib/config/schema.js';
import type { Driver, Provider, ProviderConfigBase, ProviderContext } from '../../lib/drivers/driver.js';
import { waitFor } from '../../lib/lifecycle.js';
import type { NodeRecord } from '../../lib/store/models.js';
import type { Store } from '../../lib/store/store.js';

/** What a driver's fixture provides. */
export interface DriverFixture<C extends ProviderConfigBase> {
  driver: Driver<C>;
  /** Starts what the driver talks to; the provider config has a pool `pool` serving `label`. */
  setUp(): Promise<{ config: Config; provider: C; pool: string; label: string; ctx: ProviderContext }>;
  /** Stops everything setUp started. */
  tearDown(): Promise<void>;
  /** Bound for launches and deletes (default 60 s). */
  timeoutMs?: number;
}

/** Registers the driver contract suite for one driver. */
export function driverContract<C extends ProviderConfigBase>(name: string, fixture: DriverFixture<C>): void {
  void describe(`driver contract: ${name}`, () => {
    let config: C;
    let pool: string;
    let label: string;
    let ctx: ProviderContext;
    let store: Store;
    let provider: Provider;
    const timeoutMs = fixture.timeoutMs ?? 60_000;

    before(async () => {
      const set = await fixture.setUp();
      ({ provider: config, pool, label, ctx } = set);
      store = ctx.store;
      provider = fixture.driver.createProvider(config, ctx);
      await provider.start();
    });
    after(async () => {
      await provider?.stop();
      await fixture.tearDown();
    });

    const request = (labels = [label]) => store.createRequest({ labels, requestor: 'driver-contract' });
    const handlerFor = async (labels = [label]) => provider.getRequestHandler(pool, await request(labels));

    /** A ready node of the label: launched (cloud) or registered at start (static). */
    async function readyNode(): Promise<NodeRecord> {
      const handler = await handlerFor();
      if (!handler.canLaunch) {
        return waitFor(async () => (await store.listNodes({ provider: provider.name, label, states: ['ready'] }))[0],
          { timeoutMs, what: `a registered ready ${label} node` });
      }
      const node = await store.createNode({
        state: 'building', provider: provider.name, pool, labels: [label], launcher: `${os.hostname()}-contract`,
        ...handler.nodeMetadata(label),
      });
      handler.launch(node);
      await waitFor(() => handler.launchesComplete(), { timeoutMs, what: 'the launch to complete' });
      const done = await store.getNode(node.id);
      assert.equal(done?.state, 'ready', `launch ended ${done?.state}: ${done?.reason}`);
      return done;
    }

    it('describes its pools and whether it manages images', () => {
      const pools = fixture.driver.pools(config);
      const p = pools.find((x) => x.name === pool);
      assert.ok(p, `pool ${pool} listed`);
      assert.ok(p.labels.includes(label));
      assert.ok(p.maxServers > 0);
      // The image capability comes whole: targets in the config part, an image service at run time.
      assert.equal(fixture.driver.imageTargets === undefined, fixture.driver.imageService === undefined);
      assert.equal(provider.name, config.name);
    });

    it('has the label ready and its images available', async () => {
      assert.equal(await provider.labelReady(label), true);
      const handler = await handlerFor();
      assert.equal(await handler.imagesAvailable(), true);
      assert.equal(await handler.hasProviderQuota([label]), true);
    });

    it('gives a ready node with the fields a consumer needs', async () => {
      const node = await readyNode();
      assert.ok(node.interfaceIp, 'interface ip');
      assert.ok(node.connectionPort > 0);
      assert.ok(node.connectionType);
      assert.deepEqual(node.labels.includes(label), true);
      const handler = await handlerFor();
      if (handler.canLaunch) {
        assert.ok(node.externalId, 'external id');
        const listed = (await provider.listNodes()).find((n) => n.externalId === node.externalId);
        assert.ok(listed, 'the resource is listed');
        assert.equal(listed.nodeId, node.id);
        assert.equal(listed.provider, provider.name);
      } else {
        assert.equal(await handler.checkReusableNode(node), true);
      }
    });

    it('cleans up a node, and a node already gone is not an error', async () => {
      const node = await readyNode();
      const handler = await handlerFor();
      await store.updateNode(node.id, { state: 'deleting' });
      await provider.cleanupNode(node);
      if (handler.canLaunch) {
        await waitFor(async () => !(await provider.listNodes()).some((n) => n.externalId === node.externalId),
          { timeoutMs, what: 'the resource to go' });
        await provider.cleanupNode(node); // already gone
        await store.deleteNode(node.id);
      } else {
        await store.deleteNode(node.id);
        await provider.nodeDeleted(node);
        await waitFor(async () => (await store.listNodes({ provider: provider.name, states: ['ready'] }))
          .find((n) => n.hostname === node.hostname && n.id !== node.id), { timeoutMs, what: 'the slot to be registered again' });
      }
    });

    it('cleans up leaked resources so the provider agrees with the records', async () => {
      const node = await readyNode();
      const handler = await handlerFor();
      await store.deleteNode(node.id); // the record vanishes behind the driver's back
      await provider.cleanupLeakedResources();
      if (handler.canLaunch) {
        await waitFor(async () => {
          await provider.cleanupLeakedResources();
          for (const n of await store.listNodes({ provider: provider.name, states: ['deleting'] })) {
            await provider.cleanupNode(n);
            await store.deleteNode(n.id);
          }
          return !(await provider.listNodes()).some((n) => n.externalId === node.externalId);
        }, { timeoutMs, what: 'the leaked resource to be removed', intervalMs: 500 });
      } else {
        await waitFor(async () => (await store.listNodes({ provider: provider.name, states: ['ready'] }))
          .find((n) => n.hostname === node.hostname), { timeoutMs, what: 'the missing slot to be registered again' });
      }
    });

    it('stops idempotently', async () => {
      const p = fixture.driver.createProvider(config, ctx);
      await p.start();
      await p.stop();
      await p.stop();
    });
  });
}
