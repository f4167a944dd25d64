/**
 * The node operator actions (lib/actions: holdNode, releaseNode, deleteNode, requestNodes,
 * eraseProvider) on both stores, a real SQLite file and a real ZooKeeper (a chroot per test):
 * each typed result, each typed refusal, and that a refusal changed nothing.
 */
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { eraseProvider, type ErasePlan } from '../../../lib/actions/erase.js';
import { deleteNode } from '../../../lib/actions/node-delete.js';
import { holdNode, releaseNode } from '../../../lib/actions/node-hold.js';
import { requestNodes } from '../../../lib/actions/node-request.js';
import { Releasers } from '../../../lib/lifecycle.js';
import { driverOf } from '../../../lib/drivers/registry.js';
import { silentLogger } from '../../../lib/log.js';
import { nodeLock } from '../../../lib/store/lock-names.js';
import { startZooKeeper, type ZooKeeperHandle } from '../../support/zookeeper.js';
import { createCliEnv, NODES_TEST_CONFIG, type CliEnv } from '../cli/cli-env.js';

for (const backend of ['sqlite', 'zookeeper'] as const) {
  describe(`node actions on ${backend}`, () => {
    const releasers = new Releasers();
    let zk: ZooKeeperHandle | undefined;
    let chroots = 0;
    before(async () => {
      if (backend === 'zookeeper') zk = await startZooKeeper();
    });
    after(async () => {
      await zk?.stop();
    });
    afterEach(() => releasers.releaseAll());

    async function setup(): Promise<CliEnv> {
      const zkLine = zk ? `\nzookeeper-servers: [{host: 127.0.0.1, port: ${zk.port}, chroot: /actions-${++chroots}}]\n` : '';
      const env = await createCliEnv((stateDir) => NODES_TEST_CONFIG(stateDir) + zkLine);
      releasers.add('env', () => env.close());
      return env;
    }

    it('holds and releases a node, and refuses an unknown node, a building one and a bad expiry', async () => {
      const env = await setup();
      const ctx = { store: env.store, config: env.config };
      const ready = await env.store.createNode({ state: 'ready', provider: 'cloud-a', pool: 'main', labels: ['small'], externalId: 'srv-1' });
      const building = await env.store.createNode({ state: 'building', provider: 'cloud-a', pool: 'main', labels: ['small'] });
      assert.deepEqual(await holdNode(ctx, { nodeId: '0099999999' }), { ok: false, refusal: 'unknown-node', message: 'Node 0099999999 not found' });
      const wrong = await holdNode(ctx, { nodeId: building.id });
      assert.equal(wrong.ok ? null : wrong.refusal, 'wrong-state');
      assert.match(wrong.message, new RegExp(`node ${building.id} is building`));
      const bad = await holdNode(ctx, { nodeId: ready.id, expireSeconds: -1 });
      assert.equal(bad.ok ? null : bad.refusal, 'invalid-argument');
      assert.equal((await env.store.getNode(ready.id))?.state, 'ready', 'refusals changed nothing');

      const held = await holdNode(ctx, { nodeId: ready.id, reason: 'debug job 42', expireSeconds: 3600 });
      assert.ok(held.ok, held.message);
      assert.deepEqual([held.node.id, held.node.state, held.node.holdReason, held.message], [ready.id, 'hold', 'debug job 42', `Node ${ready.id} held`]);
      assert.equal(held.node.holdExpiration !== null, true);
      const released = await releaseNode(ctx, { nodeId: ready.id });
      assert.ok(released.ok, released.message);
      assert.equal(released.node.state, 'used');
      const twice = await releaseNode(ctx, { nodeId: ready.id });
      assert.equal(twice.ok ? null : twice.refusal, 'wrong-state');
    });

    it("marks a node deleting under its lock, refuses while another session holds it, and removes it now with the caller's provider", async () => {
      const env = await setup();
      const ctx = { store: env.store, config: env.config };
      const node = await env.store.createNode({ state: 'ready', provider: 'cloud-a', pool: 'main', labels: ['small'], externalId: 'srv-1' });
      assert.deepEqual(await deleteNode(ctx, { nodeId: '0099999999' }), { ok: false, refusal: 'unknown-node', message: 'Node 0099999999 not found' });

      const other = await env.store.openSession({ owner: 'another launcher', hostname: 'np-test', pid: process.pid, ttlMs: 30_000 });
      releasers.add('other session', () => env.store.closeSession(other.id));
      assert.equal(await env.store.tryLock(nodeLock(node.id), other.id), true);
      const locked = await deleteNode(ctx, { nodeId: node.id, lockTimeoutMs: 300 });
      assert.deepEqual(locked, { ok: false, refusal: 'locked', message: `Node ${node.id} is locked by another session; not deleted (try again later)` });
      assert.equal((await env.store.getNode(node.id))?.state, 'ready');
      await env.store.unlock(nodeLock(node.id), other.id);

      const marked = await deleteNode(ctx, { nodeId: node.id });
      assert.ok(marked.ok, marked.message);
      assert.deepEqual([marked.outcome, marked.node?.state], ['marked', 'deleting']);
      assert.equal((await env.store.getLock(nodeLock(node.id)))?.live ?? false, false, 'the lock was given back');

      // With a provider to do it with (the real static driver, created and not started), the record goes now.
      // The node names no configured host, so the provider registers no slot again (and scans nothing).
      const gone = await env.store.createNode({ state: 'ready', provider: 'static-1', pool: 'hosts', labels: ['small'], hostname: 'retired.invalid' });
      const made: string[] = [];
      const now = await deleteNode(ctx, {
        nodeId: gone.id,
        removeWith: (pc, sessionId) => {
          made.push(`${pc.name} ${sessionId.length > 0}`);
          // The static driver takes no host access (the provider context's cloud part is not needed here).
          const context = { store: env.store, log: silentLogger(), clock: Date.now, config: env.config, sessionId: () => sessionId };
          return driverOf(pc).createProvider(pc, context as Parameters<ReturnType<typeof driverOf>['createProvider']>[1]);
        },
      });
      assert.ok(now.ok, now.message);
      assert.deepEqual([now.outcome, now.message, made], ['deleted', `Node ${gone.id} deleted`, ['static-1 true']]);
      assert.equal(await env.store.getNode(gone.id), undefined);
    });

    it('makes a request that outlives the action, and refuses unknown labels and bad arguments', async () => {
      const env = await setup();
      const ctx = { store: env.store, config: env.config };
      const unknown = await requestNodes(ctx, { labels: ['small', 'tiny', 'huge'] });
      assert.deepEqual(unknown, { ok: false, refusal: 'unknown-label', message: `Labels tiny, huge not defined in ${env.configFile}` });
      const bad = await requestNodes(ctx, { labels: ['small'], priority: 1000 });
      assert.equal(bad.ok ? null : bad.refusal, 'invalid-argument');
      assert.deepEqual(await env.store.listRequests(), []);

      const made = await requestNodes(ctx, { labels: ['small', 'large'], priority: 50, provider: 'cloud-z' });
      assert.ok(made.ok && !made.waited, made.message);
      assert.deepEqual(made.warnings, [`provider cloud-z is not in ${env.configFile}; the launchers ignore the preference`]);
      const [stored, ...more] = await env.store.listRequests();
      assert.deepEqual([stored?.id, stored?.labels, stored?.priority, stored?.requestorSession, more.length], [made.request.id, ['small', 'large'], 50, null, 0]);
    });

    it('erases a provider after confirmation, and refuses an unknown provider or a no', async () => {
      const env = await setup();
      const ctx = { store: env.store, config: env.config };
      assert.deepEqual(await eraseProvider(ctx, { provider: 'cloud-z' }),
        { ok: false, refusal: 'unknown-provider', message: `Provider cloud-z not found in ${env.configFile} or in the state store` });
      await env.store.createNode({ state: 'ready', provider: 'cloud-a', pool: 'main', labels: ['small'] });
      await env.store.createNode({ state: 'in-use', provider: 'cloud-a', pool: 'main', labels: ['large'] });
      await env.store.createNode({ state: 'ready', provider: 'static-1', pool: 'hosts', labels: ['small'] });
      const plans: ErasePlan[] = [];
      const no = await eraseProvider(ctx, { provider: 'cloud-a', confirm: async (plan) => { plans.push(plan); return false; } });
      assert.deepEqual(no, { ok: false, refusal: 'not-confirmed', message: 'Aborting. No data erased.' });
      assert.deepEqual(plans, [{ provider: 'cloud-a', uploads: 0, nodes: 2, configured: true }]);
      assert.equal((await env.store.listNodes()).length, 3);

      const yes = await eraseProvider(ctx, { provider: 'cloud-a', confirm: async () => true });
      assert.ok(yes.ok, yes.message);
      assert.deepEqual([yes.erasedUploads, yes.erasedNodes], [0, 2]);
      assert.deepEqual((await env.store.listNodes()).map((n) => n.provider), ['static-1']);
    });
  });
}
