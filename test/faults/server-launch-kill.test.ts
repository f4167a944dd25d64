import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { waitFor } from '../../lib/lifecycle.js';
import { finishLaunchFault, LaunchFaultSystem } from '../support/launch-fault-system.js';
import { useNovaCloud, type NovaCloud } from '../support/openstack-full.js';
import { runningProcesses } from '../support/processes.js';

/**
 * Where the launch is when the server gets the signal: `building` — the server id is recorded
 * and Nova is building it; `create in flight` — Nova has created the server but its answer
 * (held by the proxy, let go a second after the signal) has not reached nodepool, so no
 * record names the server yet.
 */
type LaunchMoment = 'building' | 'create in flight';

describe('faults: nodepool-server stopped or killed mid-launch', () => {
  let nova: NovaCloud;
  let sys: LaunchFaultSystem | undefined;

  before(async () => {
    nova = await useNovaCloud();
  });
  afterEach(async () => {
    await sys?.stop();
    sys = undefined;
  });
  after(() => assert.deepEqual(runningProcesses().map((p) => p.name), []));

  for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
    for (const moment of ['building', 'create in flight'] as LaunchMoment[]) {
      it(`recovers from a server ${signal} mid-launch (${moment}) once a server is back: the request is fulfilled, nothing lost or leaked`, async () => {
        const s = await LaunchFaultSystem.start(nova);
        sys = s;
        const proc = s.startServer();
        const readyBefore = await s.reachSteady();
        if (moment === 'create in flight') s.proxy.arm({ call: 'create', kind: 'hold', times: 1 });
        const req = await s.requestVictim();
        // Only the store and the proxy are read while waiting: the moment is short (Nova builds in ~2 s).
        const at = await waitFor(async () => {
          const node = (await s.launcher.store.listNodes()).find((n) => n.labels.includes('victim') && n.state === 'building');
          if (moment === 'building') return node?.externalId ? node : undefined;
          return node && s.proxy.holding() === 1 ? node : undefined;
        }, { timeoutMs: 60_000, what: `the victim's launch at "${moment}"`, intervalMs: 25 });
        const exitedAt = proc.exited.then(() => Date.now());
        const t0 = Date.now();
        proc.child.kill(signal);
        if (moment === 'create in flight') setTimeout(() => s.proxy.release(), 1000).unref();
        const inNova = (await s.servers()).find((v) => v.metadata.nodepool_node_id === at.id)?.status;
        assert.ok(inNova, `the victim's server exists in Nova at the ${signal}`);
        const exit = await Promise.race([proc.exited, new Promise<'hung'>((r) => setTimeout(() => r('hung'), 10_000).unref())]);
        assert.notEqual(exit, 'hung', `the server exited within 10 s of ${signal}`);
        const exitMs = (await exitedAt) - t0;
        s.startServer();
        await finishLaunchFault(s, {
          scenario: `server ${signal} mid-launch (${moment})`, faultAt: t0, before: readyBefore, requests: [req.id],
          notes: `the victim's server was ${inNova} in Nova${at.externalId ? '' : ' and in no record'} at the ${signal}; the server exited in ${(exitMs / 1000).toFixed(1)} s`,
        });
        assert.equal((await s.launcher.store.getRequest(req.id))?.nodes.length, 1, 'the request got its node');
      });
    }
  }
});
