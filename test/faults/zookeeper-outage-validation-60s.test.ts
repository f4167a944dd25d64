import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { runningProcesses } from '../support/processes.js';
import { zookeeperOutageMidValidation } from '../support/validation-outage.js';
import { startZooKeeper, type ZooKeeperHandle } from '../support/zookeeper.js';

/** ZooKeeper down 60 s while a validation VM boots (test/support/validation-outage.ts says what must hold). */
describe('faults: ZooKeeper killed 60 s mid-validation', () => {
  let zk: ZooKeeperHandle;

  before(async () => {
    zk = await startZooKeeper();
  });
  after(async () => {
    await zk?.stop();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  it('rides it out: the upload ends validated, the server never exits, no VM or image left', { timeout: 580_000 }, async () => {
    await zookeeperOutageMidValidation(zk, 60);
  });
});
