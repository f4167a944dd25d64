/**
 * Every write endpoint of the web API on a real ZooKeeper store (its own chroot per test):
 * roles, refused tokens and the audit trail (endpoint-cases.ts).
 */
import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import { runningProcesses } from '../../../support/processes.js';
import { startZooKeeper, type ZooKeeperHandle } from '../../../support/zookeeper.js';
import { describeEndpoints } from './endpoint-cases.js';

let zk: ZooKeeperHandle | undefined;
before(async () => {
  zk = await startZooKeeper();
});
after(async () => {
  await zk?.stop();
  assert.deepEqual(runningProcesses().map((p) => p.name), []);
});

describeEndpoints('write API on ZooKeeper', () => {
  if (!zk) throw new Error('ZooKeeper did not start');
  return { zookeeper: { host: zk.host, port: zk.port } };
});
