import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Releasers } from '../../../lib/lifecycle.js';
import type { BuildState } from '../../../lib/store/models.js';
import { runningProcesses } from '../../support/processes.js';
import { createCliEnv, type CliEnv } from './cli-env.js';

describe('nodepool image-delete and dib-image-delete', () => {
  const releasers = new Releasers();
  afterEach(async () => {
    await releasers.releaseAll();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  async function setup(): Promise<CliEnv> {
    const env = await createCliEnv();
    releasers.add('cli env', () => env.close());
    await env.heartbeat();
    return env;
  }

  async function buildIn(env: CliEnv, state: BuildState): Promise<string> {
    const b = await env.store.createBuild({ diskimage: 'ubuntu-jammy', formats: ['qcow2'] });
    if (state !== 'building') await env.store.updateBuild(b.id, { state, reason: state === 'ready' ? null : `was ${state}` });
    return b.id;
  }

  it('marks a ready build deleting with the operator as reason', async () => {
    const env = await setup();
    const id = await buildIn(env, 'ready');
    const r = await env.run('image-delete', id);
    assert.deepEqual(r, { stdout: `Build ${id} marked for deletion: its uploads are deleted first, then its files\n`, stderr: '', code: 0 });
    const b = await env.store.getBuild(id);
    assert.equal(b?.state, 'deleting');
    assert.equal(b?.reason, 'deleted by operator');
  });

  it('deletes failed and lost builds too, through dib-image-delete as well', async () => {
    const env = await setup();
    const failed = await buildIn(env, 'failed');
    const lost = await buildIn(env, 'lost');
    assert.equal((await env.run('dib-image-delete', failed)).code, 0);
    const r = await env.run('dib-image-delete', lost);
    assert.equal(r.code, 0);
    assert.equal(r.stdout, `Build ${lost} marked for deletion: its uploads are deleted first, then its files\n`);
    assert.equal((await env.store.getBuild(failed))?.state, 'deleting');
    assert.equal((await env.store.getBuild(lost))?.state, 'deleting');
  });

  it('refuses a build in progress with exit 1 and leaves it building', async () => {
    const env = await setup();
    const id = await buildIn(env, 'building');
    for (const cmd of ['image-delete', 'dib-image-delete']) {
      const r = await env.run(cmd, id);
      assert.deepEqual([r.code, r.stderr], [1, 'Cannot delete a build in progress\n'], cmd);
    }
    assert.equal((await env.store.getBuild(id))?.state, 'building');
  });

  it('refuses to delete a pinned build or the upload its pin boots with exit 1, saying to unpin first; deletes them once unpinned', async () => {
    const env = await setup();
    const { buildId, uploadId } = await uploadIn(env, 'ready');
    await env.store.setPin('ubuntu-jammy', null, buildId, 'hold');
    await env.store.setPin('ubuntu-jammy', 'cloud-a', buildId);
    const pinned = `is pinned (ubuntu-jammy on every provider, ubuntu-jammy on cloud-a); unpin it first (nodepool image-unpin ubuntu-jammy; nodepool image-unpin ubuntu-jammy --provider cloud-a), then delete it\n`;
    for (const cmd of ['image-delete', 'dib-image-delete']) {
      assert.deepEqual(await env.run(cmd, buildId), { stdout: '', stderr: `Build ${buildId} ${pinned}`, code: 1 }, cmd);
    }
    assert.deepEqual(await env.run(...uploadArgs(buildId, uploadId)), { stdout: '', stderr: `Upload ${uploadId} of ${buildId} to cloud-a ${pinned}`, code: 1 });
    assert.deepEqual([(await env.store.getBuild(buildId))?.state, (await env.store.getUpload(uploadId))?.state], ['ready', 'ready'], 'nothing marked');
    assert.equal((await env.store.listPins()).length, 2, 'the pins stay');
    await env.store.setPin('ubuntu-jammy', null, null);
    await env.store.setPin('ubuntu-jammy', 'cloud-a', null);
    assert.equal((await env.run(...uploadArgs(buildId, uploadId))).code, 0);
    assert.equal((await env.run('image-delete', buildId)).code, 0);
    assert.deepEqual([(await env.store.getBuild(buildId))?.state, (await env.store.getUpload(uploadId))?.state], ['deleting', 'deleting']);
  });

  it('exits 0 saying a build is already being deleted', async () => {
    const env = await setup();
    const id = await buildIn(env, 'deleting');
    const r = await env.run('image-delete', id);
    assert.deepEqual(r, { stdout: `Build ${id} is already being deleted\n`, stderr: '', code: 0 });
    assert.equal((await env.store.getBuild(id))?.reason, 'was deleting', 'the first reason stays');
  });

  it('exits 3 for a build that does not exist', async () => {
    const env = await setup();
    for (const cmd of ['image-delete', 'dib-image-delete']) {
      const r = await env.run(cmd, 'ubuntu-jammy-0000000009');
      assert.deepEqual([r.code, r.stderr], [3, 'Build ubuntu-jammy-0000000009 not found\n'], cmd);
    }
  });

  /** A ready build with one upload to cloud-a in `state`. */
  async function uploadIn(env: CliEnv, state: 'uploading' | 'ready' | 'failed' | 'deleting'): Promise<{ buildId: string; uploadId: string }> {
    const buildId = await buildIn(env, 'ready');
    const u = await env.store.createUpload({ buildId, provider: 'cloud-a', imageName: 'ubuntu-jammy', externalName: 'ubuntu-jammy-1' });
    if (state !== 'uploading') await env.store.updateUpload(u.id, { state });
    return { buildId, uploadId: u.id };
  }

  const uploadArgs = (buildId: string, uploadId: string, provider = 'cloud-a'): string[] =>
    ['image-delete', '--provider', provider, '--image', 'ubuntu-jammy', '--build-id', buildId, '--upload-id', uploadId];

  it('marks one upload deleting when all four options match it', async () => {
    const env = await setup();
    const { buildId, uploadId } = await uploadIn(env, 'ready');
    const r = await env.run(...uploadArgs(buildId, uploadId));
    assert.deepEqual(r, { stdout: `Upload ${uploadId} of ${buildId} to cloud-a marked for deletion: the server deletes it from the cloud\n`, stderr: '', code: 0 });
    const u = await env.store.getUpload(uploadId);
    assert.deepEqual([u?.state, u?.reason], ['deleting', 'deleted by operator']);
    assert.equal((await env.store.getBuild(buildId))?.state, 'ready', 'the build stays');
  });

  it('accepts the bare build and upload numbers as Nodepool 3.x printed them', async () => {
    const env = await setup();
    const { uploadId } = await uploadIn(env, 'failed');
    const r = await env.run(...uploadArgs('1', String(Number(uploadId))));
    assert.equal(r.code, 0, r.stderr);
    assert.equal((await env.store.getUpload(uploadId))?.state, 'deleting');
  });

  it('refuses an upload in progress with exit 1', async () => {
    const env = await setup();
    const { buildId, uploadId } = await uploadIn(env, 'uploading');
    const r = await env.run(...uploadArgs(buildId, uploadId));
    assert.deepEqual([r.code, r.stderr], [1, 'Cannot delete because image upload in progress\n']);
    assert.equal((await env.store.getUpload(uploadId))?.state, 'uploading');
  });

  it('exits 0 for an upload already being deleted', async () => {
    const env = await setup();
    const { buildId, uploadId } = await uploadIn(env, 'deleting');
    const r = await env.run(...uploadArgs(buildId, uploadId));
    assert.deepEqual([r.code, r.stdout], [0, `Upload ${uploadId} of ${buildId} to cloud-a is already being deleted\n`]);
  });

  it('exits 3 when no upload matches all four options', async () => {
    const env = await setup();
    const { buildId, uploadId } = await uploadIn(env, 'ready');
    for (const args of [uploadArgs(buildId, uploadId, 'cloud-b'), uploadArgs(buildId, '0000000099'), uploadArgs('ubuntu-jammy-0000000042', uploadId)]) {
      const r = await env.run(...args);
      assert.deepEqual([r.code, r.stderr], [3, 'Image upload not found\n'], args.join(' '));
    }
    assert.equal((await env.store.getUpload(uploadId))?.state, 'ready');
  });

  it('exits 2 for a partial upload selection, for mixing it with a build id, and for neither', async () => {
    const env = await setup();
    const partial = await env.run('image-delete', '--provider', 'cloud-a', '--image', 'ubuntu-jammy');
    assert.deepEqual([partial.code, partial.stderr],
      [2, 'Deleting an upload needs all of --provider, --image, --build-id, --upload-id (missing --build-id, --upload-id)\n']);
    const mixed = await env.run('image-delete', 'ubuntu-jammy-0000000001', '--upload-id', '0000000001');
    assert.deepEqual([mixed.code, mixed.stderr], [2, 'Give either a build id or --provider, --image, --build-id, --upload-id, not both\n']);
    const neither = await env.run('image-delete');
    assert.equal(neither.code, 2);
    const noId = await env.run('dib-image-delete');
    assert.equal(noId.code, 2);
    assert.match(noId.stderr, /Not enough non-option arguments/);
  });
});
