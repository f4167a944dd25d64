/**
 * The CLI against the ZooKeeper store, as an operator walks it: the image commands, the node
 * commands, info and erase read and write the same records they do on SQLite, and a site moves
 * its image data from SQLite to ZooKeeper with export-image-data / import-image-data.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { waitFor } from '../../../lib/lifecycle.js';
import { openStore } from '../../../lib/store/open-store.js';
import type { Store } from '../../../lib/store/store.js';
import { runningProcesses } from '../../support/processes.js';
import { startZooKeeper, type ZooKeeperHandle } from '../../support/zookeeper.js';
import { CLI_TEST_CONFIG, createCliEnv, NODES_TEST_CONFIG, type CliEnv } from './cli-env.js';

/** The cells of a table's body rows. */
function tableRows(text: string): string[][] {
  return text.split('\n').filter((l) => l.startsWith('|')).slice(1).map((l) => l.split('|').slice(1, -1).map((c) => c.trim()));
}

describe('nodepool CLI on ZooKeeper', () => {
  let zk: ZooKeeperHandle;
  const envs: CliEnv[] = [];
  let chroots = 0;
  /** A CLI env whose config adds this test's ZooKeeper under a chroot of its own. */
  const onZooKeeper = async (yaml: (stateDir: string) => string): Promise<CliEnv> => {
    const chroot = `/cli-${++chroots}`;
    const env = await createCliEnv((stateDir) => `${yaml(stateDir)}\nzookeeper-servers: [{host: 127.0.0.1, port: ${zk.port}, chroot: ${chroot}}]\n`);
    envs.push(env);
    return env;
  };

  before(async () => {
    zk = await startZooKeeper();
  });

  after(async () => {
    for (const env of envs) await env.close();
    await zk?.stop();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  it('image-build, image-status, dib-image-list, image-list, image-pause/unpause and image-delete', async () => {
    const env = await onZooKeeper(CLI_TEST_CONFIG);
    const { store } = env;
    assert.equal((await env.run('image-build', 'ubuntu-jammy')).code, 0);
    assert.deepEqual((await store.listBuildRequests()).map((r) => r.diskimage), ['ubuntu-jammy']);
    const status = await env.run('image-status');
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /ubuntu-jammy/);

    const build = await store.createBuild({ diskimage: 'ubuntu-jammy', formats: ['qcow2', 'raw'] });
    await store.updateBuild(build.id, { state: 'ready', builderHostname: 'builder-a', files: [{ format: 'qcow2', size: 1024, sha256: 'a'.repeat(64) }] });
    const upload = await store.createUpload({ buildId: build.id, provider: 'cloud-a', imageName: 'ubuntu-jammy', externalName: 'ubuntu-jammy-1' });
    await store.updateUpload(upload.id, { state: 'ready', externalId: 'glance-1', format: 'qcow2' });
    const dib = await env.run('dib-image-list');
    assert.equal(dib.code, 0, dib.stderr);
    assert.deepEqual(tableRows(dib.stdout).map((r) => [r[0], r[1]]).filter((r) => r[0] === build.id), [[build.id, 'ubuntu-jammy']]);
    const images = await env.run('image-list', '--json');
    assert.equal(images.code, 0, images.stderr);
    assert.match(images.stdout, /"externalId": ?"glance-1"/);

    assert.equal((await env.run('image-pause', 'ubuntu-jammy', '--reason', 'bad kernel')).code, 0);
    assert.deepEqual((await store.listPauses()).map((p) => [p.diskimage, p.provider, p.reason]), [['ubuntu-jammy', null, 'bad kernel']]);
    assert.equal((await env.run('image-unpause', 'ubuntu-jammy')).code, 0);
    assert.deepEqual(await store.listPauses(), []);

    const del = await env.run('image-delete', '--provider', 'cloud-a', '--image', 'ubuntu-jammy', '--build-id', build.id, '--upload-id', upload.id);
    assert.equal(del.code, 0, del.stderr);
    assert.equal((await store.getUpload(upload.id))?.state, 'deleting');
  });

  it('list, hold, release, delete, request-list, label-list, info and erase', async () => {
    const env = await onZooKeeper(NODES_TEST_CONFIG);
    const { store } = env;
    const ready = await store.createNode({ state: 'ready', provider: 'cloud-a', pool: 'main', labels: ['small'], externalId: 'srv-1', hostname: 'np1' });
    const other = await store.createNode({ state: 'ready', provider: 'cloud-a', pool: 'main', labels: ['large'], externalId: 'srv-2' });
    const host = await store.createNode({ state: 'ready', provider: 'static-1', pool: 'hosts', labels: ['small'], hostname: 'host1.example.org' });
    await store.createRequest({ labels: ['gpu'], requestor: 'zuul' });

    const list = await env.run('list');
    assert.equal(list.code, 0, list.stderr);
    assert.deepEqual(tableRows(list.stdout).map((r) => r[0]).sort(), [ready.id, other.id, host.id].sort());
    assert.equal((await env.run('hold', ready.id, '--reason', 'debug')).code, 0);
    assert.equal((await store.getNode(ready.id))?.state, 'hold');
    assert.equal((await env.run('release', ready.id)).code, 0);
    assert.equal((await store.getNode(ready.id))?.state, 'used');
    const del = await env.run('delete', other.id);
    assert.equal(del.code, 0, del.stderr);
    assert.equal((await store.getNode(other.id))?.state, 'deleting');

    const requests = await env.run('request-list');
    assert.equal(requests.code, 0, requests.stderr);
    assert.match(requests.stdout, /gpu/);
    const labels = await env.run('label-list');
    assert.equal(labels.code, 0, labels.stderr);
    assert.match(labels.stdout, /small/);

    const info = await env.run('info', 'cloud-a');
    assert.equal(info.code, 0, info.stderr);
    assert.match(info.stdout, new RegExp(ready.id));
    const erase = await env.run('erase', 'cloud-a', '--force');
    assert.equal(erase.code, 0, erase.stderr);
    assert.deepEqual((await store.listNodes()).map((n) => n.id), [host.id]);
  });

  it('moves image data from SQLite to ZooKeeper: export-image-data, then import-image-data; new ids follow the moved ones', async () => {
    const sqlite = await createCliEnv(CLI_TEST_CONFIG);
    envs.push(sqlite);
    const b1 = await sqlite.store.createBuild({ diskimage: 'ubuntu-jammy', formats: ['qcow2'] });
    const b2 = await sqlite.store.createBuild({ diskimage: 'ubuntu-jammy', formats: ['qcow2'] });
    await sqlite.store.updateBuild(b2.id, { state: 'ready' });
    const u = await sqlite.store.createUpload({ buildId: b2.id, provider: 'cloud-a', imageName: 'ubuntu-jammy', externalName: null });
    await sqlite.store.updateUpload(u.id, { state: 'ready', externalId: 'glance-7' });
    await sqlite.store.setPause('debian-bookworm', 'cloud-b', true, 'quota');
    await sqlite.store.deleteBuild(b1.id);
    const file = path.join(sqlite.dir, 'image-data.json');
    const exported = await sqlite.run('export-image-data', file);
    assert.equal(exported.code, 0, exported.stderr);

    const zkEnv = await onZooKeeper(CLI_TEST_CONFIG);
    const imported = await zkEnv.run('import-image-data', file);
    assert.equal(imported.code, 0, imported.stderr);
    const store: Store = zkEnv.store;
    // This handle's cache hears of another process's writes through watches: wait for them.
    const counts = async (st: Store): Promise<string> => JSON.stringify([(await st.listBuilds()).length, (await st.listUploads()).length, (await st.listPauses()).length]);
    const moved = await counts(sqlite.store);
    await waitFor(async () => (await counts(store)) === moved, { timeoutMs: 10_000, what: 'the imported records in the cache' });
    assert.deepEqual(await store.listBuilds(), await sqlite.store.listBuilds());
    assert.deepEqual(await store.listUploads(), await sqlite.store.listUploads());
    assert.deepEqual(await store.listPauses(), await sqlite.store.listPauses());
    assert.equal((await store.createBuild({ diskimage: 'ubuntu-jammy', formats: ['qcow2'] })).id, 'ubuntu-jammy-0000000003');
    const again = await zkEnv.run('import-image-data', file);
    assert.equal(again.code, 1, 'a second import refuses to overwrite');
    assert.match(again.stderr, /ubuntu-jammy-0000000002/);

    // A fresh handle sees the same (not only this process's cache).
    const fresh = await openStore(zkEnv.config);
    try {
      assert.deepEqual((await fresh.listBuilds()).map((b) => b.id), ['ubuntu-jammy-0000000002', 'ubuntu-jammy-0000000003']);
    } finally {
      await fresh.close();
    }
  });
});
