/**
 * Fault suite: corrupt records under a running nodepool-server process (issue 20 §3). Records
 * are written straight into the store, past its checks, as a bug or another ZooKeeper client
 * would: a build and a pause (ZooKeeper, with the image system: builder, gearmand, loopback
 * Glance) and a node and a node request (ZooKeeper and SQLite, with a static pool on real sshd
 * hosts). Wanted: the other diskimages build and upload, the other nodes and requests are
 * served, the server never exits and logs each corrupt record once, the CLI lists each as
 * `corrupt` (exit 0) and its ordinary delete command removes it; nothing lost or leaked.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import { waitFor } from '../../lib/lifecycle.js';
import { LIFECYCLE_STATUS_KEY } from '../../lib/status/lifecycle-status.js';
import type { SqliteStore } from '../../lib/store/sqlite/sqlite-store.js';
import type { ZooKeeperStore } from '../../lib/store/zookeeper/zookeeper-store.js';
import { sqlitePlanter, zkPlanter, zkSpoiler, type Plant } from '../contract/spoil.js';
import { startCli } from '../integration/cli/cli-env.js';
import { fakeDiskimage } from '../support/builder-env.js';
import { recordFault } from '../support/fault-report.js';
import { FaultSystem } from '../support/fault-system.js';
import { LauncherSystem } from '../support/launcher-system.js';
import { runningProcesses, stopAllProcesses } from '../support/processes.js';
import { startSshd, type SshdHandle } from '../support/sshd.js';
import { startZooKeeper, type ZooKeeperHandle } from '../support/zookeeper.js';

/** Runs the CLI against `configPath` and returns its result (exit code asserted by the caller). */
const cli = (configPath: string, ...args: string[]): ReturnType<typeof startCli>['result'] => startCli(configPath, args, 90_000).result;

/** How many of the server log's lines report `id` as a corrupt record. */
async function corruptLogLines(logFile: string, id: string): Promise<number> {
  const text = await readFile(logFile, 'utf8').catch(() => '');
  // Either log format: pretty (` id=<id>`, the daemons' default) or JSON.
  return text.split('\n').filter((l) => l.includes('skipping a corrupt record') && (l.includes(` id=${id} `) || l.endsWith(` id=${id}`) || l.includes(`"id":"${id}"`))).length;
}

describe('faults: corrupt records under a running server', () => {
  let zk: ZooKeeperHandle;

  before(async () => {
    zk = await startZooKeeper();
  });
  after(async () => {
    await zk?.stop();
    await stopAllProcesses();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  describe('image records (ZooKeeper)', () => {
    let sys: FaultSystem | undefined;
    afterEach(async () => {
      await sys?.stop();
      sys = undefined;
    });

    it('builds and uploads the other diskimages past a corrupt build and a corrupt pause; the CLI lists and removes both', { timeout: 420_000 }, async () => {
      sys = await FaultSystem.start({
        zookeeper: { port: zk.port, sessionTimeoutS: 20 },
        diskimages: [fakeDiskimage('base', { formats: ['raw'] }), fakeDiskimage('victim', { formats: ['raw'] }), fakeDiskimage('held', { formats: ['raw'] })],
      });
      const s = sys;
      const store = s.store as ZooKeeperStore;
      const hosts = `127.0.0.1:${zk.port}`;
      // Before the server starts: a garbage build of victim (as the issue found one) and held's pause made garbage.
      const corruptBuild = 'victim-0000000090';
      await zkPlanter(hosts, store.layout)({ kind: 'build', diskimage: 'victim', seq: '0000000090' });
      await store.setPause('held', null, true, 'operator');
      await zkSpoiler(hosts, store.layout)({ kind: 'pause', diskimage: 'held', provider: null }, 'garbage');
      const t0 = Date.now();
      await s.startBuilder();
      const server = s.startServer();
      const readyAndUploaded = (names: string[]) => (st: { builds: Array<{ id: string; diskimage: string; state: string }>; uploads: Array<{ buildId: string; state: string }> }) =>
        names.every((d) => st.builds.some((b) => b.diskimage === d && b.state === 'ready' && st.uploads.some((u) => u.buildId === b.id && u.state === 'ready')));
      await s.waitForState('base and victim ready and uploaded past the corrupt records', readyAndUploaded(['base', 'victim']), 180_000);
      const buildRecoverMs = Date.now() - t0;
      assert.ok(server.alive(), `nodepool-server exited:\n${await s.logTails()}`);
      assert.equal((await store.listBuilds({ diskimage: 'held' })).length, 0, 'the corrupt pause still pauses held');
      assert.ok(!(await store.listBuilds({ diskimage: 'victim' })).some((b) => b.id === corruptBuild), 'the corrupt build is not listed');
      const before = await s.readyIds();

      const dib = await cli(s.serverConfigPath, 'dib-image-list');
      assert.equal(dib.code, 0, dib.stderr);
      assert.match(dib.stdout, new RegExp(`\\| ${corruptBuild} +\\| victim .*\\| corrupt +\\|`));
      assert.match(dib.stdout, /corrupt pause held: /);
      assert.equal((await cli(s.serverConfigPath, 'image-list')).code, 0);

      const del = await cli(s.serverConfigPath, 'dib-image-delete', corruptBuild);
      assert.equal(del.code, 0, del.stderr);
      const t1 = Date.now();
      const unpause = await cli(s.serverConfigPath, 'image-unpause', 'held');
      assert.equal(unpause.code, 0, unpause.stderr);
      assert.match(unpause.stdout, /Builds of held unpaused/);
      await s.waitForState('held built and uploaded once unpaused', readyAndUploaded(['held']), 180_000);
      const pauseRecoverMs = Date.now() - t1;
      const leftCorrupt = (await store.listCorrupt()).length;
      const audit = await s.audit(before);
      const logFile = path.join(s.dir, 'server.log');
      const logged = await corruptLogLines(logFile, corruptBuild);
      assert.ok(server.alive(), `nodepool-server exited:\n${await s.logTails()}`);
      recordFault({
        scenario: 'corrupt build record (ZooKeeper)', runs: 1, recovered: 1, lost: audit.lost, leaked: audit.leaked + leftCorrupt, recoverMs: buildRecoverMs,
        notes: `base and victim built and uploaded beside it; listed as corrupt; dib-image-delete removed it; logged ${logged} time(s)`,
      });
      recordFault({
        scenario: 'corrupt pause record (ZooKeeper)', runs: 1, recovered: 1, lost: audit.lost, leaked: audit.leaked + leftCorrupt, recoverMs: pauseRecoverMs,
        notes: 'the other diskimages built; the corrupt pause kept held paused until image-unpause, then held built and uploaded (time: unpause → uploaded)',
      });
      assert.equal(logged, 1, 'the server logs a corrupt record once, not at every pass');
      assert.equal(leftCorrupt, 0);
      assert.deepEqual(audit.details, []);

      // A ready build whose record goes corrupt: its ready upload, among the newest, is kept (a
      // regression guard; the plan's retention already keeps it, no change was needed for it).
      const [baseBuild] = (await store.listBuilds({ diskimage: 'base', states: ['ready'] }));
      assert.ok(baseBuild);
      const [baseUpload] = await store.listUploads({ buildId: baseBuild.id, states: ['ready'] });
      assert.ok(baseUpload);
      const spoiledAt = Date.now();
      await zkSpoiler(hosts, store.layout)({ kind: 'build', id: baseBuild.id }, 'garbage');
      await waitFor(async () => ((await store.getStatus(LIFECYCLE_STATUS_KEY))?.updated ?? 0) > spoiledAt + 5000,
        { timeoutMs: 60_000, what: 'lifecycle passes for 5 s after the spoil', intervalMs: 250 });
      assert.equal((await store.getUpload(baseUpload.id))?.state, 'ready', 'the upload of the corrupt build is kept');
      assert.ok(server.alive(), `nodepool-server exited:\n${await s.logTails()}`);
    });
  });

  for (const backend of ['ZooKeeper', 'SQLite'] as const) {
    describe(`node and request records (${backend})`, () => {
      let hosts: SshdHandle[] = [];
      let sys: LauncherSystem | undefined;
      afterEach(async () => {
        await sys?.stop();
        sys = undefined;
        for (const h of hosts) await h.stop();
        hosts = [];
      });

      it('serves requests past a corrupt node and a corrupt request; the CLI lists and deletes both', { timeout: 240_000 }, async () => {
        hosts = await Promise.all([startSshd(), startSshd()]);
        sys = await LauncherSystem.create({
          labels: [{ name: 'small' }],
          providers: [{
            name: 'hosts', driver: 'static',
            pools: [{ name: 'main', nodes: hosts.map((h) => ({ name: h.host, 'connection-port': h.port, labels: ['small'], 'host-key': h.hostKey('ed25519'), timeout: 10 })) }],
          }],
          extra: backend === 'ZooKeeper' ? { 'zookeeper-servers': [{ host: '127.0.0.1', port: zk.port, chroot: `/corrupt-launch-${Date.now()}` }] } : {},
        });
        const s = sys;
        const server = s.startServerProcess();
        await s.waitForNodes('2 ready static nodes', (ns) => ns.filter((n) => n.state === 'ready').length === 2, 60_000);
        const plant: Plant = backend === 'ZooKeeper'
          ? zkPlanter(`127.0.0.1:${zk.port}`, (s.store as ZooKeeperStore).layout)
          : sqlitePlanter((s.store as SqliteStore).file);
        const badNode = '0000009001';
        const badRequest = '100-0000009002';
        const t0 = Date.now();
        await plant({ kind: 'node', id: badNode });
        await plant({ kind: 'request', id: badRequest });

        // Two rounds: a request fulfilled, the node released and the host back in stock (deleter and cleanup ran).
        const client = await s.client();
        let served = 0;
        let recoverMs = 0;
        for (let round = 0; round < 2; round++) {
          const [node] = await client.requestNodes(['small'], { timeoutMs: 60_000 });
          assert.ok(node);
          if (round === 0) recoverMs = Date.now() - t0;
          served += 1;
          await client.release(node.id);
          await s.waitForNodes('both hosts ready again', (ns) => ns.filter((n) => n.state === 'ready').length === 2, 60_000);
        }
        assert.ok(server.alive(), 'nodepool-server exited');

        const list = await cli(s.configPath, 'list');
        assert.equal(list.code, 0, list.stderr);
        assert.match(list.stdout, new RegExp(`\\| ${badNode} .*\\| corrupt +\\|`));
        const requests = await cli(s.configPath, 'request-list');
        assert.equal(requests.code, 0, requests.stderr);
        assert.match(requests.stdout, new RegExp(`\\| ${badRequest} .*\\| corrupt +\\|`));
        for (const id of [badNode, badRequest]) {
          const del = await cli(s.configPath, 'delete', id);
          assert.equal(del.code, 0, del.stderr);
        }
        await waitFor(async () => (await s.store.listCorrupt()).length === 0, { timeoutMs: 10_000, what: 'no corrupt records left' });
        const ready = (await s.store.listNodes({ states: ['ready'] })).length;
        const logFile = path.join(s.dir, 'server.log');
        const logged = [await corruptLogLines(logFile, badNode), await corruptLogLines(logFile, badRequest)];
        assert.ok(server.alive(), 'nodepool-server exited');
        const lost = 2 - ready;
        recordFault({
          scenario: `corrupt node record (${backend})`, runs: 1, recovered: served === 2 ? 1 : 0, lost, leaked: 0, recoverMs,
          notes: `2 requests served and released beside it; listed as corrupt; nodepool delete removed it; logged ${logged[0]} time(s)`,
        });
        recordFault({
          scenario: `corrupt request record (${backend})`, runs: 1, recovered: served === 2 ? 1 : 0, lost, leaked: 0, recoverMs,
          notes: `the pool worker served the other requests; listed as corrupt; nodepool delete removed it; logged ${logged[1]} time(s)`,
        });
        assert.equal(lost, 0);
        assert.deepEqual(logged, [1, 1], 'the server logs each corrupt record once');
      });
    });
  }
});
