/**
 * ZkClient.multi against a real ZooKeeper: the versions asked for are the versions checked,
 * 0 included (node-zookeeper-client's Transaction would turn 0 into "any version"), so the
 * first bump of an id counter and a remove at version 0 cannot apply over a newer write.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ReadCounter, ZkClient } from '../../../lib/store/zookeeper/zk-client.js';
import { runningProcesses } from '../../support/processes.js';
import { startZooKeeper, type ZooKeeperHandle } from '../../support/zookeeper.js';

describe('ZkClient.multi', () => {
  let zk: ZooKeeperHandle;
  let client: ZkClient;

  before(async () => {
    zk = await startZooKeeper();
    client = await ZkClient.connect({ hosts: zk.connectString, sessionTimeoutMs: 10_000, reads: new ReadCounter() });
  });

  after(async () => {
    await client?.close();
    await zk?.stop();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  it('refuses set, check and remove at version 0 once the znode is at version 1, and applies them at 1', async () => {
    await client.multi([{ op: 'create', path: '/counter', data: Buffer.from('1') }], 'creating');
    await client.setData('/counter', Buffer.from('2'), 0);
    for (const op of [
      { op: 'set', path: '/counter', data: Buffer.from('stale'), version: 0 },
      { op: 'check', path: '/counter', version: 0 },
      { op: 'remove', path: '/counter', version: 0 },
    ] as const) {
      await assert.rejects(client.multi([op, { op: 'create', path: '/side-effect' }], `a stale ${op.op}`), /BADVERSION|version/i, op.op);
    }
    assert.deepEqual((await client.getChildren('/'))?.filter((n) => n !== 'zookeeper'), ['counter'], 'nothing of the refused transactions applied');
    await client.multi([{ op: 'set', path: '/counter', data: Buffer.from('3'), version: 1 }], 'a current set');
    await client.multi([{ op: 'remove', path: '/counter', version: 2 }], 'a current remove');
    assert.deepEqual((await client.getChildren('/'))?.filter((n) => n !== 'zookeeper'), []);
  });
});
