/**
 * The CLI with corrupt records in the store (issue 20 §3), on SQLite and on a real ZooKeeper:
 * the lists show them as `corrupt` and exit 0, export-image-data says what it skipped, and the
 * ordinary delete commands remove them. Also: a listing command creates nothing in a ZooKeeper
 * tree, and image-unpause of what no operator paused says so.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { STATUS_VIEWS, type StatusViewFn } from '../../../server/web/status-views.js';
import { ReadCounter, ZkClient } from '../../../lib/store/zookeeper/zk-client.js';
import type { ZooKeeperStore } from '../../../lib/store/zookeeper/zookeeper-store.js';
import type { SqliteStore } from '../../../lib/store/sqlite/sqlite-store.js';
import { sqliteSpoiler, zkSpoiler, type Spoil } from '../../contract/spoil.js';
import { runningProcesses } from '../../support/processes.js';
import { startZooKeeper, type ZooKeeperHandle } from '../../support/zookeeper.js';
import { CLI_TEST_CONFIG, createCliEnv, startCli, type CliEnv } from './cli-env.js';

/** The cells of a table's body rows. */
function tableRows(text: string): string[][] {
  return text.split('\n').filter((l) => l.startsWith('|')).slice(1).map((l) => l.split('|').slice(1, -1).map((c) => c.trim()));
}

describe('nodepool CLI with corrupt records', () => {
  let zk: ZooKeeperHandle;
  const envs: CliEnv[] = [];
  let chroots = 0;

  before(async () => {
    zk = await startZooKeeper();
  });

  after(async () => {
    for (const env of envs) await env.close();
    await zk?.stop();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  /** A CLI env on SQLite or on this file's ZooKeeper, with its spoiler. */
  const open = async (backend: 'sqlite' | 'zookeeper'): Promise<{ env: CliEnv; spoil: Spoil; chroot: string }> => {
    const chroot = `/cli-corrupt-${++chroots}`;
    const env = await createCliEnv((stateDir) => CLI_TEST_CONFIG(stateDir)
      + (backend === 'zookeeper' ? `\nzookeeper-servers: [{host: 127.0.0.1, port: ${zk.port}, chroot: ${chroot}}]\n` : ''));
    envs.push(env);
    const spoil = backend === 'zookeeper'
      ? zkSpoiler(`127.0.0.1:${zk.port}`, (env.store as ZooKeeperStore).layout)
      : sqliteSpoiler((env.store as SqliteStore).file);
    return { env, spoil, chroot };
  };

  for (const backend of ['sqlite', 'zookeeper'] as const) {
    it(`${backend}: lists corrupt builds, uploads, nodes and requests as corrupt (exit 0) and removes them with the delete commands`, async () => {
      const { env, spoil } = await open(backend);
      const { store } = env;
      const badBuild = await store.createBuild({ diskimage: 'ubuntu-jammy', formats: ['qcow2'] });
      const good = await store.createBuild({ diskimage: 'ubuntu-jammy', formats: ['qcow2'] });
      await store.updateBuild(good.id, { state: 'ready', files: [{ format: 'qcow2', size: 1, sha256: 'a'.repeat(64) }] });
      const badUpload = await store.createUpload({ buildId: good.id, provider: 'cloud-a', imageName: 'ubuntu-jammy', externalName: null });
      const goodUpload = await store.createUpload({ buildId: good.id, provider: 'cloud-b', imageName: 'ubuntu-jammy', externalName: null });
      const badNode = await store.createNode({ state: 'ready', provider: 'cloud-a', pool: 'main', labels: ['small'] });
      const goodNode = await store.createNode({ state: 'ready', provider: 'cloud-a', pool: 'main', labels: ['small'] });
      const badRequest = await store.createRequest({ labels: ['small'], requestor: 'zuul' });
      const goodRequest = await store.createRequest({ labels: ['small'], requestor: 'zuul' });
      await spoil({ kind: 'build', id: badBuild.id }, 'garbage');
      await spoil({ kind: 'upload', id: badUpload.id, buildId: good.id, provider: 'cloud-a' }, 'unknown-state');
      await spoil({ kind: 'node', id: badNode.id }, 'no-time');
      await spoil({ kind: 'request', id: badRequest.id }, 'garbage');

      const dib = await env.run('dib-image-list');
      assert.equal(dib.code, 0, dib.stderr);
      assert.deepEqual(tableRows(dib.stdout).map((r) => [r[0], r[4]]), [[good.id, 'ready'], [badBuild.id, 'corrupt']]);
      assert.match(dib.stdout, new RegExp(`corrupt build ${badBuild.id}: [a-z ]*not valid JSON; remove it: nodepool dib-image-delete ${badBuild.id}`));
      const dibJson = JSON.parse((await env.run('dib-image-list', '--json')).stdout) as { builds: Array<{ id: string; state: string }> };
      assert.deepEqual(dibJson.builds.map((b) => [b.id, b.state]), [[good.id, 'ready'], [badBuild.id, 'corrupt']]);

      const images = await env.run('image-list');
      assert.equal(images.code, 0, images.stderr);
      assert.deepEqual(tableRows(images.stdout).map((r) => [r[1], r[6]]), [[goodUpload.id, 'uploading'], [badUpload.id, 'corrupt']]);
      assert.match(images.stdout, /unknown state "exploded"/);

      const list = await env.run('list');
      assert.equal(list.code, 0, list.stderr);
      assert.deepEqual(tableRows(list.stdout).map((r) => [r[0], r[6]]), [[goodNode.id, 'ready'], [badNode.id, 'corrupt']]);
      const listJson = JSON.parse((await env.run('list', '--json')).stdout) as Array<{ id: string; state: string; reason: string }>;
      assert.deepEqual(listJson.map((n) => [n.id, n.state]), [[goodNode.id, 'ready'], [badNode.id, 'corrupt']]);

      const requests = await env.run('request-list');
      assert.equal(requests.code, 0, requests.stderr);
      assert.deepEqual(tableRows(requests.stdout).map((r) => [r[0], r[2]]), [[goodRequest.id, 'requested'], [badRequest.id, 'corrupt']]);

      const file = path.join(env.dir, 'export.json');
      const exported = await env.run('export-image-data', file);
      assert.equal(exported.code, 0, exported.stderr);
      assert.match(exported.stderr, new RegExp(`skipped corrupt build ${badBuild.id} \\(and its uploads\\)`));
      assert.match(exported.stderr, new RegExp(`skipped corrupt upload ${badUpload.id}`));
      const data = JSON.parse(await readFile(file, 'utf8')) as { builds: Array<{ id: string }>; uploads: Array<{ id: string }> };
      assert.deepEqual(data.builds.map((b) => b.id), [good.id]);
      assert.deepEqual(data.uploads.map((u) => u.id), [goodUpload.id]);

      const delBuild = await env.run('dib-image-delete', badBuild.id);
      assert.equal(delBuild.code, 0, delBuild.stderr);
      assert.match(delBuild.stdout, /Corrupt build record .* removed/);
      const delUpload = await env.run('image-delete', '--provider', 'cloud-a', '--image', 'ubuntu-jammy', '--build-id', good.id, '--upload-id', badUpload.id);
      assert.equal(delUpload.code, 0, delUpload.stderr);
      const delNode = await env.run('delete', badNode.id);
      assert.equal(delNode.code, 0, delNode.stderr);
      assert.match(delNode.stdout, /Corrupt node record .* removed/);
      const delRequest = await env.run('delete', badRequest.id);
      assert.equal(delRequest.code, 0, delRequest.stderr);
      assert.deepEqual(await store.listCorrupt(), []);
      assert.deepEqual((await store.listBuilds()).map((b) => b.id), [good.id]);
      assert.deepEqual((await store.listNodes()).map((n) => n.id), [goodNode.id]);
      assert.deepEqual((await store.listRequests()).map((r) => r.id), [goodRequest.id]);
      assert.deepEqual((await store.listUploads()).map((u) => u.id), [goodUpload.id]);
    });
  }

  it('the web lists (the same views /api/dib-image-list, /api/image-list, /api/node-list, /api/request-list serve) show corrupt records too', async () => {
    const { env, spoil } = await open('sqlite');
    const { store } = env;
    const b = await store.createBuild({ diskimage: 'ubuntu-jammy', formats: ['qcow2'] });
    const n = await store.createNode({ state: 'ready', provider: 'cloud-a', pool: 'main', labels: ['small'] });
    const r = await store.createRequest({ labels: ['small'], requestor: 'zuul' });
    await spoil({ kind: 'build', id: b.id }, 'garbage');
    await spoil({ kind: 'node', id: n.id }, 'unknown-state');
    await spoil({ kind: 'request', id: r.id }, 'garbage');
    const src = { store, config: () => env.config, clock: Date.now };
    const view = async (p: string): ReturnType<StatusViewFn> => (STATUS_VIEWS.get(p) as StatusViewFn)(src, new URLSearchParams());
    for (const [p, id] of [['/dib-image-list', b.id], ['/node-list', n.id], ['/request-list', r.id]] as const) {
      const v = await view(p);
      const state = v.columns.indexOf('State');
      assert.deepEqual(v.rows.filter((row) => row.includes(id)).map((row) => row[state]), ['corrupt'], p);
      assert.ok(v.lines.some((l) => l.startsWith('corrupt ') && l.includes(id)), `${p}: a line says why`);
      assert.match(JSON.stringify(v.json), new RegExp(`"id":"${id}","state":"corrupt"|"state":"corrupt".*"id":"${id}"|"id":"${id}"[^}]*"state":"corrupt"`), p);
    }
  });

  it('image-unpause of a diskimage no operator paused says so instead of claiming an unpause', async () => {
    const { env } = await open('sqlite');
    const none = await env.run('image-unpause', 'ubuntu-jammy');
    assert.equal(none.code, 0, none.stderr);
    assert.match(none.stdout, /Builds of ubuntu-jammy were not paused by an operator; nothing to unpause/);
    assert.equal((await env.run('image-pause', 'ubuntu-jammy')).code, 0);
    const done = await env.run('image-unpause', 'ubuntu-jammy');
    assert.match(done.stdout, /^Builds of ubuntu-jammy unpaused$/m);
  });

  it('zookeeper: list, dib-image-list, image-list and request-list create nothing in an empty tree', async () => {
    const chroot = `/cli-readonly-${++chroots}`;
    const client = await ZkClient.connect({ hosts: `127.0.0.1:${zk.port}`, sessionTimeoutMs: 10_000, reads: new ReadCounter() });
    try {
      await client.mkdirp(chroot);
      const dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-cli-ro-'));
      const configFile = path.join(dir, 'nodepool.yaml');
      await writeFile(configFile, `${CLI_TEST_CONFIG(path.join(dir, 'state'))}\nzookeeper-servers: [{host: 127.0.0.1, port: ${zk.port}, chroot: ${chroot}}]\n`);
      try {
        for (const cmd of ['list', 'dib-image-list', 'image-list', 'request-list']) {
          const r = await startCli(configFile, [cmd]).result;
          assert.equal(r.code, 0, `${cmd}: ${r.stderr}`);
        }
        assert.deepEqual(await client.getChildren(chroot), [], 'the listing commands left the tree as they found it');
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    } finally {
      await client.close();
    }
  });
});
