/**
 * The installation id of a real store (SQLite file, ZooKeeper chroot): kept across reopening,
 * different for another store, agreed by two handles that ask at once, never written by a handle
 * that does not ask (a read-only CLI command), and carried by export-image-data into an import.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { SqliteStore } from '../../../lib/store/sqlite/sqlite-store.js';
import { ZooKeeperStore } from '../../../lib/store/zookeeper/zookeeper-store.js';
import { runningProcesses } from '../../support/processes.js';
import { startZooKeeper, type ZooKeeperHandle } from '../../support/zookeeper.js';

void describe('installation id: SQLite', () => {
  void it('is kept across reopening, differs between stores, and is not written by a handle that never asks', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-installation-'));
    try {
      const fileA = path.join(dir, 'a.db');
      const reader = await SqliteStore.open(fileA);
      await reader.listBuilds();
      await reader.close();
      const raw = new Database(fileA, { readonly: true });
      assert.equal(raw.prepare("SELECT name FROM sqlite_master WHERE name = 'installation'").get(), undefined);
      raw.close();

      const [one, two] = await Promise.all([SqliteStore.open(fileA), SqliteStore.open(fileA)]);
      const [idOne, idTwo] = await Promise.all([one.installationId(), two.installationId()]);
      assert.equal(idOne, idTwo);
      await Promise.all([one.close(), two.close()]);
      const again = await SqliteStore.open(fileA);
      assert.equal(await again.installationId(), idOne);
      await again.close();
      const other = await SqliteStore.open(path.join(dir, 'b.db'));
      assert.notEqual(await other.installationId(), idOne);
      await other.close();

      // export-image-data carries the id; an import into a store no server has used adopts it,
      // one into a store of another installation is refused and writes nothing.
      const source = await SqliteStore.open(fileA);
      await source.createBuild({ diskimage: 'deb', formats: ['qcow2'] });
      const data = await source.exportImageData();
      await source.close();
      assert.equal(data.installation, idOne);
      const fresh = await SqliteStore.open(path.join(dir, 'c.db'));
      assert.equal(await fresh.peekInstallationId(), undefined);
      await fresh.importImageData(data);
      assert.equal(await fresh.installationId(), idOne);
      await fresh.close();
      const used = await SqliteStore.open(path.join(dir, 'b.db'));
      await assert.rejects(used.importImageData(data), /already belongs to installation .* builders holding the imported builds would refuse its jobs/);
      assert.deepEqual(await used.listBuilds(), []);
      await used.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

void describe('installation id: ZooKeeper', () => {
  let zk: ZooKeeperHandle;
  before(async () => { zk = await startZooKeeper(); });
  after(async () => {
    await zk.stop();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  void it('lives in <chroot>/nodepool/installation, agreed by two handles, kept across reopening, one per chroot', async () => {
    const chroot = `/installation-${randomUUID()}`;
    const open = (c = chroot): Promise<ZooKeeperStore> => ZooKeeperStore.open({ servers: [{ host: '127.0.0.1', port: zk.port, chroot: c }] });
    const reader = await open();
    await reader.listBuilds();
    await reader.close();
    const [one, two] = await Promise.all([open(), open()]);
    const [idOne, idTwo] = await Promise.all([one.installationId(), two.installationId()]);
    assert.equal(idOne, idTwo);
    await Promise.all([one.close(), two.close()]);
    const again = await open();
    assert.equal(await again.installationId(), idOne);
    await again.close();
    const other = await open(`/installation-${randomUUID()}`);
    assert.notEqual(await other.installationId(), idOne);
    await other.close();

    const source = await open();
    await source.createBuild({ diskimage: 'deb', formats: ['qcow2'] });
    const data = await source.exportImageData();
    await source.close();
    assert.equal(data.installation, idOne);
    const fresh = await open(`/installation-${randomUUID()}`);
    assert.equal(await fresh.peekInstallationId(), undefined);
    await fresh.importImageData(data);
    assert.equal(await fresh.installationId(), idOne);
    await fresh.close();
  });
});
