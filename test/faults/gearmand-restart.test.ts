import { after, afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { arm, finish, reach, resume, type FaultMoment } from '../support/fault-scenario.js';
import { FaultSystem } from '../support/fault-system.js';
import { runningProcesses } from '../support/processes.js';

describe('faults: gearmand killed -9 and restarted', () => {
  let sys: FaultSystem | undefined;

  afterEach(async () => {
    await sys?.stop();
    sys = undefined;
  });
  after(() => assert.deepEqual(runningProcesses().map((p) => p.name), []));

  for (const moment of ['mid-build', 'mid-upload'] as FaultMoment[]) {
    it(`recovers from gearmand kill -9 ${moment}: the victim ends ready and uploaded, nothing lost or leaked`, async () => {
      sys = await FaultSystem.start();
      await arm(sys, moment);
      await sys.startBuilder();
      sys.startServer();
      const before = await reach(sys, moment);
      const t0 = Date.now();
      await sys.gearmand.kill();
      await sys.gearmand.restart();
      await resume(sys);
      await finish(sys, `gearmand kill -9 + restart ${moment}`, t0, before);
    });
  }
});
