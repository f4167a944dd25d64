import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { waitFor } from '../../lib/lifecycle.js';
import { finishLaunchFault, LaunchFaultSystem } from '../support/launch-fault-system.js';
import { useNovaCloud, type NovaCloud } from '../support/openstack-full.js';
import { runningProcesses } from '../support/processes.js';
import { startZooKeeper, type ZooKeeperHandle } from '../support/zookeeper.js';

/**
 * ZooKeeper is killed (SIGKILL) while nodepool-server is launching a node in the loopback Nova
 * (the server exists there and its id is on the node record), left down for a while, then
 * started again on the same port and data. The server process must ride it out (it never
 * exits), and once ZooKeeper is back the request is fulfilled, the ready node from before is
 * still there, and no server in Nova lacks a node record. The store session is 20 s: a 10 s
 * outage keeps it, a 60 s outage outlasts it (the server makes a new session and takes its
 * locks again).
 */
const SESSION_TTL_S = 20;

describe('faults: ZooKeeper killed mid-launch', () => {
  let nova: NovaCloud;
  let zk: ZooKeeperHandle | undefined;
  let sys: LaunchFaultSystem | undefined;

  before(async () => {
    nova = await useNovaCloud();
  });
  afterEach(async () => {
    await sys?.stop();
    sys = undefined;
    await zk?.stop();
    zk = undefined;
  });
  after(() => assert.deepEqual(runningProcesses().map((p) => p.name), []));

  for (const outageS of [10, 60]) {
    it(`rides out ZooKeeper down ${outageS} s mid-launch: the server keeps running, the request is fulfilled, nothing lost or leaked`, async () => {
      const z = zk = await startZooKeeper();
      const s = sys = await LaunchFaultSystem.start(nova, {
        store: { 'zookeeper-servers': [{ host: z.host, port: z.port }] }, launcher: { 'session-ttl': SESSION_TTL_S },
      });
      const proc = s.startServer();
      let exited: string | undefined;
      void proc.exited.then((e) => { exited = `code ${e.code} signal ${e.signal}`; });
      const readyBefore = await s.reachSteady();
      // Not ephemeral: the consumer's own session may lapse in the outage too; the request must outlive it.
      const req = await (await s.consumer()).request(['victim'], { ephemeral: false });
      const at = await waitFor(async () => {
        const node = (await s.launcher.store.listNodes()).find((n) => n.labels.includes('victim') && n.state === 'building');
        return node?.externalId ? node : undefined;
      }, { timeoutMs: 60_000, what: "the victim's launch with its server recorded", intervalMs: 25 });
      const t0 = Date.now();
      await z.kill();
      // The outage itself is the fault: it lasts exactly this long (the server is watched meanwhile).
      await new Promise((resolve) => setTimeout(resolve, outageS * 1000));
      assert.equal(exited, undefined, `nodepool-server is still running after ${outageS} s without ZooKeeper\n${await s.logTails(40)}`);
      await z.restart();
      const upAt = Date.now();
      await finishLaunchFault(s, {
        scenario: `ZooKeeper killed ${outageS} s mid-launch`, faultAt: t0, before: readyBefore, requests: [req.id], timeoutMs: 120_000,
        notes: `ZooKeeper SIGKILLed while node ${at.id}'s server was building in Nova, started again ${outageS} s later; session ${SESSION_TTL_S} s; time counted from the kill`,
      });
      assert.equal(exited, undefined, 'nodepool-server never exited');
      const [got] = (await s.launcher.store.getRequest(req.id))?.nodes ?? [];
      assert.ok(got, 'the request got its node');
      assert.equal((await s.launcher.store.getNode(got))?.allocatedTo, req.id, 'and the node is still allocated to it');
      const log = await readFile(path.join(s.launcher.dir, 'server-0.log'), 'utf8');
      assert.doesNotMatch(log, /unhandled|uncaught/i, 'no unhandled rejection or exception was logged');
      process.stdout.write(`# ZooKeeper down ${outageS} s: recovered ${((Date.now() - upAt) / 1000).toFixed(1)} s after it came back\n`);
    });
  }
});
