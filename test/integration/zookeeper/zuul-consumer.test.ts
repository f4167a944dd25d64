/**
 * A Zuul-style consumer that is not this project's code (test/fixtures/zuul_consumer.py:
 * Debian's python3-kazoo) gets nodes from nodepool-server through ZooKeeper alone: it writes
 * a request znode as Zuul does, watches it, locks the nodes with kazoo's Lock, marks them
 * in-use and used, deletes the request. Real ZooKeeper, real sshd static hosts, the server as
 * a process; the test reads ZooKeeper through our store only to check what the consumer did.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { waitFor } from '../../../lib/lifecycle.js';
import { nodeLock } from '../../../lib/store/lock-names.js';
import { LauncherSystem } from '../../support/launcher-system.js';
import { runningProcesses, stopAllProcesses } from '../../support/processes.js';
import { startSshd, type SshdHandle } from '../../support/sshd.js';
import { startZooKeeper, type ZooKeeperHandle } from '../../support/zookeeper.js';
import { kazooLockFree, startConsumer } from './consumer-process.js';

void describe('a Zuul-style kazoo consumer against nodepool-server on ZooKeeper', () => {
  let zk: ZooKeeperHandle;
  let small: SshdHandle;
  let big: SshdHandle;
  let sys: LauncherSystem;
  const chroot = `/zuul-consumer-${randomUUID().slice(0, 8)}`;
  let hosts: string;

  before(async () => {
    [zk, small, big] = await Promise.all([startZooKeeper(), startSshd(), startSshd()]);
    hosts = `${zk.connectString}${chroot}`;
    const host = (h: SshdHandle, label: string): Record<string, unknown> => ({
      name: h.host, 'connection-port': h.port, labels: [label], 'host-key': h.hostKey('ed25519'), 'max-parallel-jobs': 1, timeout: 2,
    });
    sys = await LauncherSystem.create({
      labels: [{ name: 'small' }, { name: 'big' }],
      providers: [{ name: 'static-hosts', driver: 'static', pools: [{ name: 'main', nodes: [host(small, 'small'), host(big, 'big')] }] }],
      extra: { 'zookeeper-servers': [{ host: zk.host, port: zk.port, chroot }], 'zookeeper-timeout': 5 },
    });
    sys.startServerProcess('server');
    await sys.waitForNodes('both static hosts ready', (ns) => ns.filter((n) => n.state === 'ready').length === 2, 60_000);
  });

  after(async () => {
    await sys?.stop();
    for (const s of [small, big]) await s?.stop();
    await zk?.stop();
    await stopAllProcesses();
    assert.deepEqual(runningProcesses().map((p) => p.name), [], 'no process left running');
  });

  it('fulfils its request, lets kazoo lock the nodes, sees them in-use and used, and returns the hosts to ready', async () => {
    const before = await sys.store.listNodes({ states: ['ready'] });
    const consumer = startConsumer({ hosts, labels: ['big', 'small'] });
    try {
      const created = await consumer.waitForEvent('request-created', 30_000);
      assert.match(String(created.id), /^100-\d{10}$/, 'the request id is <priority>-<sequence>');
      await consumer.waitForEvent('waiting-for-release', 60_000);

      const states = consumer.all('request-update').map((e) => e.state);
      assert.equal(states.at(-1), 'fulfilled', `request states seen: ${states.join(' → ')}`);
      const fulfilled = consumer.all('request-update').at(-1)?.data as Record<string, unknown>;
      assert.equal(fulfilled.requestor, 'zuul-test-scheduler');
      assert.deepEqual(fulfilled.node_types, ['big', 'small']);
      assert.ok(typeof fulfilled.event_id === 'string' && fulfilled.event_id.length > 0, 'Zuul\'s event_id survives the launcher\'s writes');
      assert.ok(fulfilled.requestor_data && typeof fulfilled.requestor_data === 'object', 'requestor_data survives the launcher\'s writes');
      assert.ok(Array.isArray(fulfilled.declined_by), 'declined_by is a list');

      const nodeIds = (consumer.all('fulfilled')[0]?.nodes ?? []) as string[];
      assert.equal(nodeIds.length, 2);
      const locked = consumer.all('node-locked');
      assert.deepEqual(locked.map((e) => e.id), nodeIds, 'nodes locked in request order');
      for (const [i, e] of locked.entries()) {
        const data = e.data as Record<string, unknown>;
        const sshd = i === 0 ? big : small;
        assert.match(String(e.lock_node), /^[0-9a-f]{32}__lock__\d{10}$/, 'kazoo\'s own lock node');
        assert.deepEqual(e.lock_children, [e.lock_node], 'no other contender while the consumer holds it');
        assert.equal(data.state, 'ready');
        assert.equal(data.allocated_to, created.id);
        assert.deepEqual(data.type, [i === 0 ? 'big' : 'small']);
        assert.equal(data.provider, 'static-hosts');
        assert.equal(data.pool, 'main');
        assert.equal(data.interface_ip, sshd.host);
        assert.equal(data.connection_port, sshd.port);
        assert.equal(data.connection_type, 'ssh');
        assert.ok((data.host_keys as string[]).includes(sshd.hostKey('ed25519')), 'host_keys carry the scanned key');
        assert.equal(typeof data.state_time, 'number');
      }

      // What our side sees while the consumer holds the nodes.
      assert.deepEqual(await sys.store.listRequests(), [], 'the consumer deleted its request');
      for (const id of nodeIds) {
        const n = await sys.store.getNode(id);
        assert.equal(n?.state, 'in-use', `node ${id} in-use as kazoo wrote it`);
        const lock = await sys.store.getLock(nodeLock(id));
        assert.equal(lock?.live, true, `kazoo's lock on node ${id} is a live lock to our store`);
      }
      const probe = await sys.store.openSession({ owner: 'zuul-consumer-test', hostname: 'test', pid: process.pid, ttlMs: 10_000 });
      try {
        assert.equal(await sys.store.tryLock(nodeLock(nodeIds[0] as string), probe.id), false, 'our lock yields to kazoo\'s');
      } finally {
        await sys.store.closeSession(probe.id);
      }

      consumer.release();
      await consumer.waitForEvent('done', 30_000);
      assert.equal((await consumer.proc.exited).code, 0, consumer.stderr());
      assert.deepEqual(consumer.all('node-used').map((e) => e.id), nodeIds);

      // The launcher deletes the used nodes and registers both hosts again as new ready nodes.
      const after = await sys.waitForNodes('both hosts ready again under new node ids', (ns) => {
        const ready = ns.filter((n) => n.state === 'ready');
        return ns.length === 2 && ready.length === 2 && ready.every((n) => !nodeIds.includes(n.id));
      }, 30_000);
      assert.deepEqual(after.map((n) => n.connectionPort).sort(), before.map((n) => n.connectionPort).sort());
      assert.ok(after.every((n) => n.allocatedTo === null));
      assert.deepEqual((await sys.store.listLocks('node:')).filter((l) => l.live), [], 'no node lock left');
    } finally {
      await consumer.proc.stop(2000);
    }
  });

  it('a consumer killed -9 while its nodes are in use: its kazoo locks lapse and the launcher deletes the abandoned nodes, as Nodepool does', async () => {
    const consumer = startConsumer({ hosts, labels: ['small'], sessionTimeoutS: 2 });
    let nodeIds: string[] = [];
    try {
      await consumer.waitForEvent('waiting-for-release', 60_000);
      nodeIds = (consumer.all('fulfilled')[0]?.nodes ?? []) as string[];
      assert.equal(nodeIds.length, 1);
      assert.equal((await sys.store.getNode(nodeIds[0] as string))?.state, 'in-use');
      await consumer.proc.kill();
    } finally {
      await consumer.proc.stop(2000);
    }
    // No consumer session on the node and not handed off: once kazoo's lock lapses it is abandoned.
    await sys.waitForNodes('the abandoned in-use node deleted and its host ready again', (ns) =>
      !ns.some((n) => nodeIds.includes(n.id)) && ns.filter((n) => n.state === 'ready').length === 2, 40_000);
  });

  it('a node our store has locked is held to kazoo, and free to it once unlocked', async () => {
    const [node] = await sys.store.listNodes({ states: ['ready'] });
    assert.ok(node);
    const session = await sys.store.openSession({ owner: 'zuul-consumer-test', hostname: 'test', pid: process.pid, ttlMs: 10_000 });
    const lockPath = `/nodepool/nodes/${node.id}/lock`; // under the chroot in `hosts`
    try {
      assert.equal(await sys.store.tryLock(nodeLock(node.id), session.id, { exclusive: true }), true);
      assert.equal(await kazooLockFree(hosts, lockPath), false, 'kazoo sees our lock');
      assert.equal(await sys.store.unlock(nodeLock(node.id), session.id), true);
      assert.equal(await kazooLockFree(hosts, lockPath), true, 'and takes it once we let go');
    } finally {
      await sys.store.closeSession(session.id);
    }
    await waitFor(async () => (await sys.store.getNode(node.id))?.state === 'ready', { timeoutMs: 60_000, what: 'the node untouched' });
  });

  it('a consumer killed while its request waits leaves nothing behind: the ephemeral request goes with its session', async () => {
    // Our own lock on the only 'small' slot keeps the launcher from serving the request (it waits, pending).
    const [slot] = await sys.store.listNodes({ label: 'small', states: ['ready'] });
    assert.ok(slot);
    const holder = await sys.store.openSession({ owner: 'zuul-consumer-test', hostname: 'test', pid: process.pid, ttlMs: 10_000 });
    try {
      assert.equal(await sys.store.tryLock(nodeLock(slot.id), holder.id, { exclusive: true }), true);
      const consumer = startConsumer({ hosts, labels: ['small'], sessionTimeoutS: 1 });
      const created = await consumer.waitForEvent('request-created', 30_000);
      const id = String(created.id);
      await waitFor(async () => (await sys.store.getRequest(id))?.state === 'pending', { timeoutMs: 20_000, what: `request ${id} pending` });
      await consumer.proc.kill();
      await waitFor(async () => (await sys.store.getRequest(id)) === undefined,
        { timeoutMs: 20_000, what: `request ${id} gone with the consumer's ZooKeeper session` });
      assert.equal(consumer.all('fulfilled').length, 0, 'it was never served');
    } finally {
      await sys.store.closeSession(holder.id);
    }
    await sys.waitForNodes('both hosts ready and unallocated', (ns) =>
      ns.length === 2 && ns.every((n) => n.state === 'ready' && n.allocatedTo === null), 20_000);
    assert.equal((await sys.store.listRequests()).length, 0);
  });
});
