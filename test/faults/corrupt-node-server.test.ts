/**
 * Fault rows: a node record the store refuses (as Zuul writing it in a form this version does
 * not know) whose server is in use, under a running nodepool-server process with the openstack
 * driver on the full cloud (Nova), on ZooKeeper (garbage: no field of the record can be read)
 * and on SQLite (a state no version knows). Wanted (issue 31 §1): the leak passes run past it
 * (a server whose record was deleted meanwhile is cleaned up, proving they ran) and the corrupt
 * record's server stays, as Nodepool keeps the server of any znode that exists; once the record
 * is deleted with the ordinary delete, its server is cleaned up. Nothing lost, nothing leaked.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { waitFor } from '../../lib/lifecycle.js';
import type { SqliteStore } from '../../lib/store/sqlite/sqlite-store.js';
import type { ZooKeeperStore } from '../../lib/store/zookeeper/zookeeper-store.js';
import { sqliteSpoiler, zkSpoiler } from '../contract/spoil.js';
import { recordFault } from '../support/fault-report.js';
import { LaunchFaultSystem } from '../support/launch-fault-system.js';
import { useNovaCloud, type NovaCloud } from '../support/openstack-full.js';
import { runningProcesses } from '../support/processes.js';
import { startZooKeeper, type ZooKeeperHandle } from '../support/zookeeper.js';

describe('faults: a corrupt node record of a server in use', () => {
  let nova: NovaCloud;
  let zk: ZooKeeperHandle;
  let sys: LaunchFaultSystem | undefined;

  before(async () => {
    nova = await useNovaCloud();
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

  for (const backend of ['ZooKeeper', 'SQLite'] as const) {
    it(`keeps the server of a corrupt node record through the leak passes, and cleans it up once the record is deleted (${backend})`, { timeout: 420_000 }, async () => {
      sys = await LaunchFaultSystem.start(nova, backend === 'ZooKeeper'
        ? { store: { 'zookeeper-servers': [{ host: '127.0.0.1', port: zk.port, chroot: `/corrupt-node-server-${Date.now()}` }] } }
        : {});
      const s = sys;
      const server = s.startServer();
      const steady = await s.reachSteady();
      const client = await s.consumer();
      const req = await s.requestVictim();
      const [node] = await client.accept(await s.launcher.waitForRequest(req.id, ['fulfilled'], 90_000));
      assert.ok(node?.externalId, 'the victim node has a server');
      const victimServer = node.externalId;
      const store = s.launcher.store;

      const spoiledAt = Date.now();
      if (backend === 'ZooKeeper') {
        await zkSpoiler(`127.0.0.1:${zk.port}`, (store as ZooKeeperStore).layout)({ kind: 'node', id: node.id }, 'garbage');
      } else {
        await sqliteSpoiler((store as SqliteStore).file)({ kind: 'node', id: node.id }, 'unknown-state');
      }
      assert.deepEqual((await store.listCorruptNodes()).map((c) => c.id), [node.id]);
      // Proof that leak passes run after the spoil: the steady node's record goes, so its server is a leak they delete.
      const [steadyId, steadyServer] = [...steady][0] ?? [];
      assert.ok(steadyId && steadyServer);
      assert.equal(await store.deleteNode(steadyId), true);
      await waitFor(async () => !(await s.servers()).some((v) => v.id === steadyServer),
        { timeoutMs: 120_000, what: `the leaked server ${steadyServer} deleted by a leak pass`, intervalMs: 250 });
      const passedMs = Date.now() - spoiledAt;
      const kept = (await s.servers()).some((v) => v.id === victimServer);
      const stillCorrupt = (await store.listCorruptNodes()).some((c) => c.id === node.id);
      assert.ok(server.alive(), `nodepool-server exited:\n${await s.logTails()}`);

      // The ordinary delete removes the record; its server is then a leak like any other.
      const deletedAt = Date.now();
      assert.equal(await store.deleteNode(node.id), true);
      await waitFor(async () => !(await s.servers()).some((v) => v.id === victimServer),
        { timeoutMs: 120_000, what: `server ${victimServer} cleaned up once its record is deleted`, intervalMs: 250 });
      const cleanedMs = Date.now() - deletedAt;
      await s.settled([], 120_000);
      const audit = await s.audit(new Map());
      recordFault({
        scenario: `corrupt node record of an in-use server (${backend})`, runs: 1, recovered: kept && stillCorrupt ? 1 : 0,
        lost: kept ? 0 : 1, leaked: audit.leaked, recoverMs: passedMs,
        notes: `${backend === 'ZooKeeper' ? 'garbage znode (only its id readable)' : 'unknown state'}; leak passes ran past it `
          + `(a server whose record was deleted after the spoil was cleaned up ${(passedMs / 1000).toFixed(1)} s after it) and its server stayed; `
          + `deleted with the ordinary delete, its server was cleaned up in ${(cleanedMs / 1000).toFixed(1)} s`,
      });
      assert.ok(kept, `the server ${victimServer} of the corrupt record was deleted`);
      assert.ok(stillCorrupt);
      assert.deepEqual(audit.details, []);
      assert.ok(server.alive(), `nodepool-server exited:\n${await s.logTails()}`);
    });
  }
});
