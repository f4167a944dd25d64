/**
 * `nodepool export-image-data FILE`: the command function against a real SQLite store in a
 * temp state dir (the test plays the server by writing records).
 */
import assert from 'node:assert/strict';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, it } from 'node:test';
import { exportImageData, requireImageData } from '../../../cli/commands/export-image-data.js';
import { EXIT } from '../../../cli/commands/shared.js';
import { CommandFailure } from '../../../lib/errors.js';
import type { Config } from '../../../lib/config/schema.js';
import { Releasers } from '../../../lib/lifecycle.js';
import { parseImageData } from '../../../lib/store/image-data-check.js';
import type { Store } from '../../../lib/store/store.js';
import { createCliEnv, type CliEnv } from './cli-env.js';

/** Two builds of ubuntu-jammy (one with an upload), a pause and a build request. */
async function sampleImageRecords(store: Store): Promise<void> {
  const b1 = await store.createBuild({ diskimage: 'ubuntu-jammy', formats: ['qcow2'] });
  await store.updateBuild(b1.id, { state: 'ready', files: [{ format: 'qcow2', size: 10, sha256: 'f'.repeat(64) }] });
  await store.createBuild({ diskimage: 'ubuntu-jammy', formats: ['qcow2'] });
  const up = await store.createUpload({ buildId: b1.id, provider: 'cloud-a', imageName: 'ubuntu-jammy', externalName: null });
  await store.updateUpload(up.id, { state: 'ready', externalId: 'img-1' });
  await store.setPause('ubuntu-jammy', 'cloud-b', true, 'maintenance');
  await store.requestBuild('debian-bookworm');
}

describe('nodepool export-image-data', () => {
  const releasers = new Releasers();
  afterEach(() => releasers.releaseAll());

  async function setup(): Promise<CliEnv> {
    const env = await createCliEnv();
    releasers.add('cli env', () => env.close());
    return env;
  }

  it('writes the image records to FILE with mode 0600 and leaves no temporary file', async () => {
    const env = await setup();
    await sampleImageRecords(env.store);
    const file = path.join(env.dir, 'backup.json');
    const r = await exportImageData({ configFile: env.configFile, file });
    assert.equal(r.exitCode, EXIT.ok, r.stderr);
    assert.equal(r.stdout, `Exported 2 build(s), 1 upload(s), 1 pause(s), 1 build request(s), 2 sequence counter(s) to ${file}\n`);
    assert.equal(r.stderr, '');
    assert.equal((await stat(file)).mode & 0o777, 0o600);
    const data = parseImageData(JSON.parse(await readFile(file, 'utf8')));
    assert.deepEqual(data.builds, await env.store.listBuilds());
    assert.deepEqual(data.uploads, await env.store.listUploads());
    assert.deepEqual(data.sequences, { build: { 'ubuntu-jammy': 2 }, upload: 1 });
    assert.deepEqual((await readdir(env.dir)).filter((n) => n.endsWith('.tmp')), []);
  });

  it('refuses to replace an existing FILE unless --force', async () => {
    const env = await setup();
    await sampleImageRecords(env.store);
    const file = path.join(env.dir, 'backup.json');
    await writeFile(file, 'precious', { mode: 0o644 });
    const refused = await exportImageData({ configFile: env.configFile, file });
    assert.equal(refused.exitCode, EXIT.failed);
    assert.equal(refused.stderr, `${file} already exists; pass --force to replace it\n`);
    assert.equal(await readFile(file, 'utf8'), 'precious');
    const forced = await exportImageData({ configFile: env.configFile, file, force: true });
    assert.equal(forced.exitCode, EXIT.ok, forced.stderr);
    assert.equal(parseImageData(JSON.parse(await readFile(file, 'utf8'))).builds.length, 2);
    assert.equal((await stat(file)).mode & 0o777, 0o600);
  });

  it('fails with one sentence when FILE cannot be written', async () => {
    const env = await setup();
    const file = path.join(env.dir, 'no-such-dir', 'backup.json');
    const r = await exportImageData({ configFile: env.configFile, file });
    assert.equal(r.exitCode, EXIT.failed);
    assert.match(r.stderr, /^Cannot write .*no-such-dir\/backup\.json: ENOENT/);
  });

  it('warns that a running server keeps writing after the export', async () => {
    const env = await setup();
    await env.heartbeat();
    const r = await exportImageData({ configFile: env.configFile, file: path.join(env.dir, 'backup.json') });
    assert.equal(r.exitCode, EXIT.ok, r.stderr);
    assert.match(r.stderr, /^warning: a nodepool-server is running; what it records from now on is not in this file/);
  });

  it('exits 2 for a config error', async () => {
    const env = await setup();
    const r = await exportImageData({ configFile: path.join(env.dir, 'missing.yaml'), file: path.join(env.dir, 'backup.json') });
    assert.equal(r.exitCode, EXIT.usage);
  });

  it('says so when the store cannot export or import image data', () => {
    const storeWithout = { close: () => Promise.resolve() } as unknown as Store;
    const zk = { zookeeperServers: [{ host: 'zk1', port: 2181, chroot: null }] } as unknown as Config;
    assert.throws(() => requireImageData(storeWithout, zk, 'export-image-data'), (err) => {
      assert.ok(err instanceof CommandFailure);
      assert.equal(err.exitCode, EXIT.failed);
      assert.equal(err.message, 'The ZooKeeper state store cannot export or import image data (yet); export-image-data needs a store that can');
      return true;
    });
  });
});
