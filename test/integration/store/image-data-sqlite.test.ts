/**
 * The image data contract on SQLite, and what only SQLite shows: an import that fails halfway
 * through its writes leaves nothing behind, and the time both take
 * for 200 builds and 4,000 uploads. A ZooKeeper run adds `imageDataContract('zookeeper', …)`
 * with its own opener in its own file.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { StoreError } from '../../../lib/errors.js';
import { hasImageData, type ImageData } from '../../../lib/store/image-data.js';
import { SqliteStore } from '../../../lib/store/sqlite/sqlite-store.js';
import { imageDataContract } from '../../contract/image-data.contract.js';
import { storeError } from '../../contract/store-helpers.js';

const tempDir = (): Promise<string> => mkdtemp(path.join(os.tmpdir(), 'nodepool-image-data-'));

imageDataContract('sqlite', async (clock) => {
  const dir = await tempDir();
  const store = await SqliteStore.open(path.join(dir, 'nodepool.db'), { clock });
  return {
    store,
    async cleanup() {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
});

/** `builds` builds over four diskimages, each with `uploadsPerBuild` uploads over several providers, all ready. */
async function fill(store: SqliteStore, builds: number, uploadsPerBuild: number): Promise<void> {
  for (let i = 0; i < builds; i++) {
    const b = await store.createBuild({ diskimage: `image-${i % 4}`, formats: ['qcow2', 'raw'] });
    await store.updateBuild(b.id, { state: 'ready', builderHostname: 'builder-1', files: [{ format: 'qcow2', size: 1 << 30, sha256: 'c'.repeat(64) }] });
    for (let j = 0; j < uploadsPerBuild; j++) {
      const u = await store.createUpload({ buildId: b.id, provider: `cloud-${j}`, imageName: `image-${i % 4}`, externalName: `${b.id}-${j}` });
      await store.updateUpload(u.id, { state: 'ready', externalId: `ext-${u.id}`, format: 'qcow2' });
    }
  }
}

void describe('SqliteStore image data', () => {
  let dir: string;
  const opened: SqliteStore[] = [];
  const open = async (name: string): Promise<SqliteStore> => {
    const s = await SqliteStore.open(path.join(dir, name));
    opened.push(s);
    return s;
  };

  beforeEach(async () => { dir = await tempDir(); });
  afterEach(async () => {
    for (const s of opened.splice(0)) await s.close();
    await rm(dir, { recursive: true, force: true });
  });

  void it('has the image data capability', async () => {
    assert.equal(hasImageData(await open('a.db')), true);
  });

  void it('rolls back an import that fails halfway through its writes', async () => {
    const source = await open('source.db');
    await fill(source, 4, 3);
    await source.setPause('image-0', null, true);
    const data = await source.exportImageData();
    const targetFile = path.join(dir, 'target.db');
    const target = await open('target.db');
    // A trigger (through a second connection, as another process would) makes the 10th upload fail.
    const db = new Database(targetFile);
    db.exec(`CREATE TRIGGER fail_upload BEFORE INSERT ON uploads WHEN NEW.id = '0000000010'
             BEGIN SELECT RAISE(ABORT, 'injected failure'); END`);
    db.close();
    const err = await storeError(target.importImageData(data));
    assert.match(err.message, /importing image data in .*target\.db: injected failure/);
    assert.deepEqual(await target.listBuilds(), []);
    assert.deepEqual(await target.listUploads(), []);
    assert.deepEqual(await target.listPauses(), []);
    assert.equal((await target.createBuild({ diskimage: 'image-0', formats: ['qcow2'] })).id, 'image-0-0000000001');
  });

  void it('rejects data that is not image data before touching the store', async () => {
    const target = await open('a.db');
    const err = await storeError(target.importImageData({ format: 'something-else' } as unknown as ImageData));
    assert.ok(err instanceof StoreError);
    assert.match(err.message, /format: expected "nodepool-ts-image-data", got "something-else"/);
  });

  void it('exports and imports 200 builds with 4,000 uploads in well under a few seconds', async (t) => {
    const source = await open('source.db');
    await fill(source, 200, 20);
    let started = performance.now();
    const data = await source.exportImageData();
    const exportMs = performance.now() - started;
    const text = JSON.stringify(data, null, 2);
    assert.equal(data.builds.length, 200);
    assert.equal(data.uploads.length, 4000);
    const target = await open('target.db');
    started = performance.now();
    const counts = await target.importImageData(JSON.parse(text) as ImageData);
    const importMs = performance.now() - started;
    assert.equal(counts.uploads, 4000);
    t.diagnostic(`200 builds, 4000 uploads: export ${exportMs.toFixed(0)} ms, import (parse + validate + write) ${importMs.toFixed(0)} ms, `
      + `file ${(text.length / 1024 / 1024).toFixed(2)} MiB`);
    assert.ok(exportMs < 5000 && importMs < 5000, `export ${exportMs} ms, import ${importMs} ms`);
  });
});
