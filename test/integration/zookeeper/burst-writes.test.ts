/**
 * The ZooKeeper store's short cuts for the launcher's burst, on a real ZooKeeper: a node
 * written under our lock at the version of an earlier read (no read again) must not bring
 * back a node removed meanwhile whose path came back as the empty parent of another lock;
 * unlocks batched into one transaction still answer each caller; a request lock made with its
 * directory excludes other sessions.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { waitFor } from '../../../lib/lifecycle.js';
import { nodeLock, requestLock } from '../../../lib/store/lock-names.js';
import { ZooKeeperStore } from '../../../lib/store/zookeeper/zookeeper-store.js';
import { runningProcesses } from '../../support/processes.js';
import { startZooKeeper, type ZooKeeperHandle } from '../../support/zookeeper.js';

let zk: ZooKeeperHandle;

before(async () => {
  zk = await startZooKeeper();
});

after(async () => {
  await zk.stop();
  assert.deepEqual(runningProcesses().map((p) => p.name), []);
});

void describe('ZooKeeper burst short cuts', () => {
  const open = (chroot: string): Promise<ZooKeeperStore> => ZooKeeperStore.open({ servers: [{ host: zk.host, port: zk.port, chroot }] });
  const session = (store: ZooKeeperStore, owner: string): Promise<{ id: string }> =>
    store.openSession({ owner, hostname: 'host-1', pid: 1, ttlMs: 10_000 });

  void it('does not write a node back whose path came back as the empty parent of a lock after it was read under our lock', async () => {
    const chroot = `/t-${randomUUID()}`;
    const a = await open(chroot);
    const b = await open(chroot);
    try {
      const node = await a.createNode({ state: 'ready', provider: 'p', pool: 'main', labels: ['x'] });
      const sa = await session(a, 'launcher');
      assert.equal(await a.tryLock(nodeLock(node.id), sa.id, { exclusive: true }), true);
      assert.equal((await a.getNode(node.id))?.state, 'ready'); // the read the update would write at (version 0)
      // Meanwhile another handle removes the node (with our lock) and locks its id again: the
      // node's path is back, empty, at version 0 like the read.
      assert.equal(await b.deleteNode(node.id), true);
      const sb = await session(b, 'other');
      assert.equal(await b.tryLock(nodeLock(node.id), sb.id, { exclusive: true }), true);
      assert.equal(await a.updateNode(node.id, { allocatedTo: '100-0000000001' }, { expectStates: ['ready'] }), undefined);
      assert.equal(await b.getNode(node.id), undefined, 'the removed node stays removed');
      assert.equal((await b.listNodes()).length, 0);
    } finally {
      await a.close();
      await b.close();
    }
  });

  void it('writes a node read under our lock in one round trip and keeps other fields', async () => {
    const chroot = `/t-${randomUUID()}`;
    const a = await open(chroot);
    try {
      const node = await a.createNode({ state: 'ready', provider: 'p', pool: 'main', labels: ['x'], hostname: 'h1' });
      const sa = await session(a, 'launcher');
      assert.equal(await a.tryLock(nodeLock(node.id), sa.id, { exclusive: true }), true);
      await a.getNode(node.id);
      const reads = a.readCount();
      const updated = await a.updateNode(node.id, { allocatedTo: '100-0000000001' }, { expectStates: ['ready'] });
      // No read at all: none before the write, and the watched cache takes what we wrote from the write's answer.
      assert.equal(a.readCount() - reads, 0, 'no read before the write, none of it afterwards');
      assert.equal((await a.listNodes())[0]?.allocatedTo, '100-0000000001', 'the cache shows the write at once');
      assert.equal(updated?.allocatedTo, '100-0000000001');
      assert.equal((await a.getNode(node.id))?.hostname, 'h1');
      // A second update builds on what the first wrote.
      assert.equal((await a.updateNode(node.id, { state: 'in-use' }, { expectStates: ['ready'] }))?.allocatedTo, '100-0000000001');
      assert.equal(await a.unlock(nodeLock(node.id), sa.id), true);
    } finally {
      await a.close();
    }
  });

  void it('keeps a node it created in its cache without reading it back, and reads another handle\'s change of it', async () => {
    const chroot = `/t-${randomUUID()}`;
    const a = await open(chroot);
    const b = await open(chroot);
    try {
      const first = await a.createNode({ state: 'ready', provider: 'p', pool: 'main', labels: ['x'] }); // the counter is read once
      assert.equal(await a.deleteNode(first.id), true);
      await a.listNodes();
      const reads = a.readCount();
      const node = await a.createNode({ state: 'ready', provider: 'p', pool: 'main', labels: ['x'], hostname: 'h1' });
      assert.deepEqual(await a.listNodes(), [node], 'listed as created');
      assert.equal(a.readCount() - reads, 0, 'our own create is not read back');
      // Its stand-in stat has the real version: an idle delete at it goes through once seen as is.
      await b.updateNode(node.id, { state: 'used' });
      const used = await waitFor(async () => (await a.listNodes())[0]?.state === 'used' ? (await a.listNodes())[0] : undefined,
        { timeoutMs: 5000, what: 'the other handle\'s write in the cache' });
      assert.ok(a.readCount() - reads >= 1, 'a change by another handle is read');
      assert.equal(await a.deleteNodeIfIdle(node), 'changed', 'the copy from before the write');
      assert.equal(await a.deleteNodeIfIdle(used), 'deleted');
      assert.equal(await b.getNode(node.id), undefined);
    } finally {
      await a.close();
      await b.close();
    }
  });

  void it('answers each of the unlocks sent in one transaction, also when one of them is gone', async () => {
    const chroot = `/t-${randomUUID()}`;
    const a = await open(chroot);
    const b = await open(chroot);
    try {
      const n1 = await a.createNode({ state: 'ready', provider: 'p', pool: 'main', labels: ['x'] });
      const n2 = await a.createNode({ state: 'ready', provider: 'p', pool: 'main', labels: ['x'] });
      const sa = await session(a, 'launcher');
      assert.equal(await a.tryLock(nodeLock(n1.id), sa.id), true);
      assert.equal(await a.tryLock(nodeLock(n2.id), sa.id), true);
      assert.deepEqual(await Promise.all([a.unlock(nodeLock(n1.id), sa.id), a.unlock(nodeLock(n2.id), sa.id)]), [true, true]);
      assert.equal(await b.getLock(nodeLock(n1.id)), undefined);
      assert.equal(await b.getLock(nodeLock(n2.id)), undefined);
      assert.equal(await a.tryLock(nodeLock(n1.id), sa.id), true);
      assert.equal(await a.tryLock(nodeLock(n2.id), sa.id), true);
      assert.equal(await b.deleteNode(n1.id), true); // our contender on n1 goes with it
      assert.deepEqual(await Promise.all([a.unlock(nodeLock(n1.id), sa.id), a.unlock(nodeLock(n2.id), sa.id)]), [false, true]);
      assert.equal(await b.getLock(nodeLock(n2.id)), undefined);
    } finally {
      await a.close();
      await b.close();
    }
  });

  void it('holds a request lock made with its directory, and refuses it to another session until released', async () => {
    const chroot = `/t-${randomUUID()}`;
    const a = await open(chroot);
    const b = await open(chroot);
    try {
      const req = await a.createRequest({ labels: ['x'], requestor: 'zuul' });
      const sa = await session(a, 'launcher-a');
      const sb = await session(b, 'launcher-b');
      assert.equal(await a.tryLock(requestLock(req.id), sa.id, { exclusive: true }), true);
      assert.equal(await b.tryLock(requestLock(req.id), sb.id, { exclusive: true }), false);
      assert.equal((await b.getLock(requestLock(req.id)))?.sessionId, sa.id);
      assert.equal(await a.unlock(requestLock(req.id), sa.id), true);
      assert.equal(await b.tryLock(requestLock(req.id), sb.id, { exclusive: true }), true);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
