/**
 * The driver contract: every driver (static, openstack, qemu) runs this suite from its own test
 * file against the real thing behind it (sshd on loopback, the loopback Nova, QEMU). A fixture
 * starts that, gives a config with one pool serving one label, and says how the driver comes
 * by ready nodes: `launch` (the handler creates a server or VM from a `building` record) or
 * `register` (the provider registers the configured hosts itself, as static does). The suite
 * checks the handler says the same, and every test asserts something of every driver; the
 * two ways differ only where the contract itself does (a deleted static node's slot comes
 * back, a deleted server does not).
 *
 * Deletes go through the code the launcher deletes with (lib/drivers/core/remove-node.ts and the
 * real NodeDeleter), never through steps of the suite's own: the leak test makes a real leak
 * (fixture.leak) and only runs the provider's leak cleanup and the deleter until it is gone.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { after, before, describe, it } from 'node:test';
import type { Config } from '../../lib/config/schema.js';
import type { Driver, Provider, ProviderConfigBase, ProviderContext } from '../../lib/drivers/contract/driver.js';
import { removeNode } from '../../lib/drivers/core/remove-node.js';
import { waitFor } from '../../lib/lifecycle.js';
import type { NodeRecord } from '../../lib/store/models.js';
import type { Store } from '../../lib/store/store.js';
import { NodeDeleter } from '../../server/launcher/node-deleter.js';

/** A real leak a fixture made behind the records' back. */
export interface Leak {
  /** For messages: what was leaked. */
  what: string;
  /** Whether the provider and the records still disagree about it (the leak is still there). */
  present(): Promise<boolean>;
}

/** What a driver's fixture provides. */
export interface DriverFixture<C extends ProviderConfigBase> {
  driver: Driver<C>;
  /** `launch`: the handler creates nodes (canLaunch); `register`: the provider registers its hosts' nodes itself. */
  nodes: 'launch' | 'register';
  /** Starts what the driver talks to; the provider config has a pool `pool` serving `label`. */
  setUp(): Promise<{ config: Config; provider: C; pool: string; label: string; ctx: ProviderContext }>;
  /** Stops everything setUp started. */
  tearDown(): Promise<void>;
  /** Whether the real resource behind a node runs now, seen from outside the driver (a TCP connect, Nova, /proc). */
  runs(node: NodeRecord): Promise<boolean>;
  /**
   * Makes a real leak of `provider` (whose config and pool are given), not through the driver:
   * launch drivers a server or VM carrying this provider's tags whose node record does not
   * exist; register drivers a configured host whose records were removed behind the provider's back.
   */
  leak(provider: Provider, pool: string, label: string): Promise<Leak>;
  /** Bound for launches and deletes (default 60 s). */
  timeoutMs?: number;
}

/** Pids of this process's children (the sshd of a fixture, an ssh-keyscan, a qemu-img …). */
function childPids(): Set<number> {
  const pids = new Set<number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // Field 4 of /proc/<pid>/stat is the parent pid; the command (field 2) may hold spaces.
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === process.pid) pids.add(Number(name));
    } catch {
      // gone
    }
  }
  return pids;
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
    const launches = fixture.nodes === 'launch';

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

    const handlerFor = async () => provider.getRequestHandler(pool, await store.createRequest({ labels: [label], requestor: 'driver-contract' }));
    const readyOf = async (): Promise<NodeRecord[]> => store.listNodes({ provider: provider.name, label, states: ['ready'] });

    /** The node a launch gave that no case has used up yet (a VM boot under TCG takes minutes: one serves every case that only reads it). */
    let launched: NodeRecord | undefined;

    /** A ready node of the label: launched by the handler (or the one launched before, while it is still ready), or registered by the provider. */
    async function readyNode(): Promise<NodeRecord> {
      const handler = await handlerFor();
      assert.equal(handler.canLaunch, launches, `the fixture says the driver's nodes are ${fixture.nodes}ed`);
      if (!launches) {
        return waitFor(async () => (await readyOf())[0], { timeoutMs, what: `a registered ready ${label} node` });
      }
      const before = launched && await store.getNode(launched.id);
      if (before?.state === 'ready') return before;
      const node = await store.createNode({
        state: 'building', provider: provider.name, pool, labels: [label], launcher: `${os.hostname()}-contract`,
        ...handler.nodeMetadata(label),
      });
      handler.launch(node);
      await waitFor(() => handler.launchesComplete(), { timeoutMs, what: 'the launch to complete' });
      const done = await store.getNode(node.id);
      assert.equal(done?.state, 'ready', `launch ended ${done?.state}: ${done?.reason}`);
      launched = done;
      return done;
    }

    /** Runs what the launcher's cleanup and deleter run, until `done` holds; the suite deletes nothing itself. */
    async function cleanUntil(done: () => Promise<boolean>, what: string): Promise<void> {
      const deleter = new NodeDeleter({ store, log: ctx.log, providers: () => new Map([[provider.name, provider]]), sessionId: ctx.sessionId });
      await waitFor(async () => {
        await provider.cleanupLeakedResources();
        await deleter.pass();
        await deleter.settled();
        return done();
      }, { timeoutMs, what, intervalMs: 500 });
    }

    it('describes its pools, whether it manages images, and how it comes by nodes', async () => {
      const pools = fixture.driver.pools(config);
      const p = pools.find((x) => x.name === pool);
      assert.ok(p, `pool ${pool} listed`);
      assert.ok(p.labels.includes(label));
      assert.ok(p.maxServers > 0);
      // The image capability comes whole: targets in the config part, an image service at run time.
      assert.equal(fixture.driver.imageTargets === undefined, fixture.driver.imageService === undefined);
      assert.equal(provider.name, config.name);
      assert.equal((await handlerFor()).canLaunch, launches, `the fixture says the driver's nodes are ${fixture.nodes}ed`);
    });

    it('has the label ready and its images available', async () => {
      assert.equal(await provider.labelReady(label), true);
      const handler = await handlerFor();
      assert.equal(await handler.imagesAvailable(), true);
      assert.equal(await handler.hasProviderQuota([label]), true);
    });

    it('gives a ready node with the fields a consumer needs, listed and running', async () => {
      const node = await readyNode();
      assert.ok(node.interfaceIp, 'interface ip');
      assert.ok(node.connectionPort > 0);
      assert.ok(node.connectionType);
      assert.ok(node.labels.includes(label));
      const listed = (await provider.listNodes()).find((n) => n.nodeId === node.id);
      assert.ok(listed, 'the provider lists the node');
      assert.equal(listed.provider, provider.name);
      if (node.externalId !== null) assert.equal(listed.externalId, node.externalId);
      assert.equal(await (await handlerFor()).checkReusableNode(node), true);
      assert.equal(await fixture.runs(node), true, 'its resource runs');
    });

    it('cleans up a node the way the launcher deletes it, and a node already gone is not an error', async () => {
      const node = await readyNode();
      const deleting = await store.updateNode(node.id, { state: 'deleting' });
      assert.ok(deleting);
      await removeNode(store, provider, deleting);
      assert.equal(await store.getNode(node.id), undefined, 'the record is gone');
      assert.ok(!(await provider.listNodes()).some((n) => n.nodeId === node.id), 'the provider lists no resource of the node');
      await provider.cleanupNode(deleting); // already gone
      if (launches) {
        assert.equal(await fixture.runs(node), false, 'its resource no longer runs');
      } else {
        // A registered host is not deleted: its slot is registered again as a fresh node.
        const again = await waitFor(async () => (await readyOf()).find((n) => n.hostname === node.hostname),
          { timeoutMs, what: 'the slot to be registered again' });
        assert.notEqual(again.id, node.id);
        assert.equal(await fixture.runs(again), true);
      }
    });

    it('removes a real leak with its leak cleanup, and then lists only resources a record accounts for', async () => {
      const leak = await fixture.leak(provider, pool, label);
      assert.equal(await leak.present(), true, `the fixture made a leak: ${leak.what}`);
      await cleanUntil(async () => !(await leak.present()), `the leak cleanup to remove ${leak.what}`);
      const records = await store.listNodes({ provider: provider.name });
      const ids = new Set(records.map((r) => r.id));
      const externalIds = new Set(records.flatMap((r) => (r.externalId ? [r.externalId] : [])));
      for (const n of await provider.listNodes()) {
        assert.ok(n.nodeId !== null && ids.has(n.nodeId) || externalIds.has(n.externalId), `resource ${n.externalId} (${n.name}) has a record`);
      }
      assert.deepEqual(records.filter((r) => r.state === 'deleting').map((r) => r.id), [], 'no record is left deleting');
    });

    it('stops idempotently: a second stop resolves, work in flight settles, nothing it started runs', async () => {
      const children = childPids();
      const p = fixture.driver.createProvider(config, ctx);
      await p.start();
      const work = p.cleanupLeakedResources(); // in flight while it stops: scans, cloud calls
      const stops = [p.stop(), p.stop()];
      const bounded = <T>(x: Promise<T>, what: string): Promise<T> => Promise.race([x, new Promise<never>((_, reject) => {
        setTimeout(() => reject(new Error(`${what} did not resolve within ${timeoutMs} ms`)), timeoutMs).unref();
      })]);
      await bounded(Promise.all(stops), 'two stops');
      await bounded(Promise.allSettled([work]), 'the work in flight');
      await bounded(p.stop(), 'a stop after the provider stopped');
      const left = [...childPids()].filter((pid) => !children.has(pid));
      assert.deepEqual(left, [], 'no process the provider started still runs');
      // The provider the suite runs is untouched by another one's stop.
      assert.equal(await provider.labelReady(label), true);
    });
  });
}
