import { after, afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { arm, finish, reach, resume, type FaultMoment } from '../support/fault-scenario.js';
import { FaultSystem } from '../support/fault-system.js';
import { runningProcesses } from '../support/processes.js';

describe('faults: nodepool-builder stopped or killed', () => {
  let sys: FaultSystem | undefined;

  afterEach(async () => {
    await sys?.stop();
    sys = undefined;
  });
  after(() => assert.deepEqual(runningProcesses().map((p) => p.name), []));

  for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
    for (const moment of ['mid-build', 'mid-upload'] as FaultMoment[]) {
      it(`recovers from a builder ${signal} ${moment} once the builder is back: nothing lost or leaked`, async () => {
        sys = await FaultSystem.start();
        await arm(sys, moment);
        const b = await sys.startBuilder({ shutdownTimeoutS: 1 });
        sys.startServer();
        const before = await reach(sys, moment);
        const t0 = Date.now();
        const proc = b.process!;
        proc.child.kill(signal);
        const exit = await Promise.race([proc.exited, new Promise<'hung'>((r) => setTimeout(() => r('hung'), 15_000).unref())]);
        assert.notEqual(exit, 'hung', `the builder exited within 15 s of ${signal}`);
        await resume(sys);
        if (signal === 'SIGKILL') {
          // Down for longer than 3 passes: its ready builds are marked lost, and must be found
          // again (not deleted) when it is back (image-lifecycle.lost-grace).
          await sys.waitForState('the ready builds lost while the builder is down', (s) =>
            before.builds.every((id) => s.builds.some((b) => b.id === id && b.state === 'lost')), 30_000);
          // And down 5 more passes: a lost build left without uploads (victim's, mid-upload) is
          // not given up within lost-grace.
          await delay(5_000);
        }
        await sys.startBuilder({ shutdownTimeoutS: 1 });
        await finish(sys, `builder ${signal} ${moment}`, t0, before);
      });
    }
  }
});
