import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { arm, finish, reach, resume, type FaultMoment } from '../support/fault-scenario.js';
import { FaultSystem } from '../support/fault-system.js';
import { runningProcesses } from '../support/processes.js';
import { startZooKeeper, type ZooKeeperHandle } from '../support/zookeeper.js';

/**
 * The image system on a ZooKeeper store (nodepool-server and nodepool-builder as processes,
 * gearmand, the loopback Glance): ZooKeeper is killed (SIGKILL) while victim's build waits in
 * fake-dib or its upload is held by the Glance proxy, and left down for 10 s or 60 s. Two
 * seconds into the outage the victim is let go, so its WORK_COMPLETE reaches the server while
 * the store cannot be written: the result must be recorded once ZooKeeper is back (the
 * builder keeps the files, the server re-attaches by the Gearman unique), not lost or
 * repeated. The server's session is 20 s: a 10 s outage keeps it, a 60 s one outlasts it.
 * The server must never exit; afterwards base and victim are ready and uploaded, nothing
 * lost or leaked.
 */
const SESSION_TIMEOUT_S = 20;

describe('faults: ZooKeeper killed mid-build and mid-upload', () => {
  let zk: ZooKeeperHandle;
  let sys: FaultSystem | undefined;

  before(async () => {
    zk = await startZooKeeper();
  });
  afterEach(async () => {
    await sys?.stop();
    sys = undefined;
  });
  after(async () => {
    await zk?.stop();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  for (const outageS of [10, 60]) {
    for (const moment of ['mid-build', 'mid-upload'] as FaultMoment[]) {
      it(`rides out ZooKeeper down ${outageS} s ${moment}: victim ready and uploaded, the server never exits`, { timeout: 360_000 }, async () => {
        sys = await FaultSystem.start({ zookeeper: { port: zk.port, sessionTimeoutS: SESSION_TIMEOUT_S } });
        await arm(sys, moment);
        await sys.startBuilder();
        const server = sys.startServer();
        const before = await reach(sys, moment);
        const t0 = Date.now();
        await zk.kill();
        await delay(2000);
        await resume(sys);
        await delay(outageS * 1000 - 2000);
        assert.ok(server.alive(), `nodepool-server exited during the outage:\n${await sys.logTails()}`);
        await zk.restart();
        await finish(sys, `ZooKeeper killed ${outageS} s ${moment}`, t0, before, 90_000 + SESSION_TIMEOUT_S * 1000);
        assert.ok(server.alive(), `nodepool-server exited after the outage:\n${await sys.logTails()}`);
      });
    }
  }
});
