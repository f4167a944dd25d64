/**
 * The image operator actions (lib/actions: requestImageBuild, deleteBuild, deleteUpload,
 * pauseImage, unpauseImage) against a real SQLite store: each typed result, each typed refusal,
 * and that a refusal changed nothing.
 */
import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { requestImageBuild } from '../../../lib/actions/image-build.js';
import { deleteBuild, deleteUpload, OPERATOR_DELETE_REASON } from '../../../lib/actions/image-delete.js';
import { pauseImage, unpauseImage } from '../../../lib/actions/image-pause.js';
import { Releasers } from '../../../lib/lifecycle.js';
import { createCliEnv, type CliEnv } from '../cli/cli-env.js';

describe('image actions on SQLite', () => {
  const releasers = new Releasers();
  afterEach(() => releasers.releaseAll());

  async function setup(): Promise<CliEnv> {
    const env = await createCliEnv();
    releasers.add('env', () => env.close());
    return env;
  }

  /** A ready build of ubuntu-jammy and a ready upload of it to cloud-a. */
  async function readyBuildAndUpload(env: CliEnv) {
    const build = await env.store.createBuild({ diskimage: 'ubuntu-jammy', formats: ['qcow2'] });
    await env.store.updateBuild(build.id, { state: 'ready', files: [{ format: 'qcow2', size: 1, sha256: 'a'.repeat(64) }] });
    const upload = await env.store.createUpload({ buildId: build.id, provider: 'cloud-a', imageName: 'ubuntu-jammy', externalName: 'ubuntu-jammy-1' });
    await env.store.updateUpload(upload.id, { state: 'ready', externalId: 'glance-1', format: 'qcow2' });
    return { build, upload };
  }

  it('requests a build, and refuses an unknown, a paused or a building diskimage without recording a request', async () => {
    const env = await setup();
    const ctx = { store: env.store, config: env.config };
    const unknown = await requestImageBuild(ctx, { diskimage: 'centos' });
    assert.deepEqual(unknown, { ok: false, refusal: 'unknown-diskimage', message: `Diskimage centos not found in ${env.configFile}` });
    const byConfig = await requestImageBuild(ctx, { diskimage: 'debian-bookworm' });
    assert.deepEqual(byConfig, { ok: false, refusal: 'paused', message: `Diskimage debian-bookworm is paused (pause: true in ${env.configFile})` });
    await env.store.setPause('ubuntu-jammy', null, true, 'bad kernel');
    const byOperator = await requestImageBuild(ctx, { diskimage: 'ubuntu-jammy' });
    assert.equal(byOperator.ok ? null : byOperator.refusal, 'paused');
    assert.match(byOperator.message, /paused \(bad kernel\); nodepool image-unpause ubuntu-jammy/);
    await env.store.setPause('ubuntu-jammy', null, false);
    const running = await env.store.createBuild({ diskimage: 'ubuntu-jammy', formats: ['qcow2'] });
    const busy = await requestImageBuild(ctx, { diskimage: 'ubuntu-jammy' });
    assert.equal(busy.ok ? null : busy.refusal, 'in-progress');
    assert.match(busy.message, new RegExp(`build in progress \\(${running.id}\\)`));
    assert.deepEqual(await env.store.listBuildRequests(), [], 'no refusal recorded a request');

    await env.store.updateBuild(running.id, { state: 'failed', reason: 'dib exited 1' });
    const ok = await requestImageBuild(ctx, { diskimage: 'ubuntu-jammy' });
    assert.ok(ok.ok);
    assert.equal(ok.diskimage, 'ubuntu-jammy');
    assert.equal(ok.message, 'Build of ubuntu-jammy requested');
    assert.deepEqual((await env.store.listBuildRequests()).map((r) => [r.diskimage, r.requested]), [['ubuntu-jammy', ok.request.requested]]);
  });

  it('marks a ready build deleting once, and refuses an unknown build or one still building', async () => {
    const env = await setup();
    const { build } = await readyBuildAndUpload(env);
    assert.deepEqual(await deleteBuild(env.store, { buildId: 'ubuntu-jammy-0000009999' }),
      { ok: false, refusal: 'unknown-build', message: 'Build ubuntu-jammy-0000009999 not found' });
    const building = await env.store.createBuild({ diskimage: 'ubuntu-jammy', formats: ['qcow2'] });
    assert.deepEqual(await deleteBuild(env.store, { buildId: building.id }), { ok: false, refusal: 'in-progress', message: 'Cannot delete a build in progress' });
    assert.equal((await env.store.getBuild(building.id))?.state, 'building');

    const marked = await deleteBuild(env.store, { buildId: build.id });
    assert.deepEqual(marked, {
      ok: true, buildId: build.id, outcome: 'marked', message: `Build ${build.id} marked for deletion: its uploads are deleted first, then its files`,
    });
    const after = await env.store.getBuild(build.id);
    assert.deepEqual([after?.state, after?.reason], ['deleting', OPERATOR_DELETE_REASON]);
    const again = await deleteBuild(env.store, { buildId: build.id });
    assert.deepEqual(again.ok && [again.outcome, again.message], ['already-deleting', `Build ${build.id} is already being deleted`]);
  });

  it('marks an upload named by sequence numbers deleting, and refuses a wrong name or an upload in progress', async () => {
    const env = await setup();
    const { build, upload } = await readyBuildAndUpload(env);
    const seq = (id: string): string => String(Number(id.slice(-10)));
    const name = { provider: 'cloud-a', image: 'ubuntu-jammy', buildId: seq(build.id), uploadId: seq(upload.id) };
    assert.deepEqual(await deleteUpload(env.store, { ...name, provider: 'cloud-b' }), { ok: false, refusal: 'unknown-upload', message: 'Image upload not found' });
    const uploading = await env.store.createUpload({ buildId: build.id, provider: 'cloud-b', imageName: 'ubuntu-jammy', externalName: 'ubuntu-jammy-2' });
    const busy = await deleteUpload(env.store, { provider: 'cloud-b', image: 'ubuntu-jammy', buildId: build.id, uploadId: uploading.id });
    assert.deepEqual(busy, { ok: false, refusal: 'in-progress', message: 'Cannot delete because image upload in progress' });

    const marked = await deleteUpload(env.store, name);
    assert.deepEqual(marked, {
      ok: true, uploadId: upload.id, outcome: 'marked',
      message: `Upload ${upload.id} of ${build.id} to cloud-a marked for deletion: the server deletes it from the cloud`,
    });
    assert.equal((await env.store.getUpload(upload.id))?.state, 'deleting');
    assert.equal((await env.store.getUpload(uploading.id))?.state, 'uploading');
  });

  it('pauses and unpauses builds and uploads, saying what the config still pauses, and refuses unknown names', async () => {
    const env = await setup();
    const ctx = { store: env.store, config: env.config };
    assert.deepEqual(await pauseImage(ctx, { diskimage: 'centos' }),
      { ok: false, refusal: 'unknown-diskimage', message: `Diskimage centos not found in ${env.configFile}` });
    assert.deepEqual(await pauseImage(ctx, { diskimage: 'ubuntu-jammy', provider: 'cloud-z' }),
      { ok: false, refusal: 'unknown-provider', message: `Provider cloud-z not found in ${env.configFile}` });
    assert.deepEqual(await pauseImage(ctx, { diskimage: 'debian-bookworm', provider: 'cloud-a' }),
      { ok: false, refusal: 'unknown-provider', message: 'Provider cloud-a does not list diskimage debian-bookworm' });
    assert.deepEqual(await env.store.listPauses(), []);

    const paused = await pauseImage(ctx, { diskimage: 'ubuntu-jammy', reason: 'kernel regression' });
    assert.deepEqual(paused, {
      ok: true, diskimage: 'ubuntu-jammy', provider: null, wasPaused: false, pausedByConfig: false, warnings: [],
      message: 'Builds of ubuntu-jammy paused (kernel regression)',
    });
    assert.deepEqual((await env.store.listPauses()).map((p) => [p.diskimage, p.provider, p.reason]), [['ubuntu-jammy', null, 'kernel regression']]);
    const unpaused = await unpauseImage(ctx, { diskimage: 'ubuntu-jammy' });
    assert.deepEqual(unpaused.ok && [unpaused.wasPaused, unpaused.message], [true, 'Builds of ubuntu-jammy unpaused']);
    assert.deepEqual(await env.store.listPauses(), []);

    // cloud-b's ubuntu-jammy is paused by the config: unpausing removes nothing and says so.
    const byConfig = await unpauseImage(ctx, { diskimage: 'ubuntu-jammy', provider: 'cloud-b' });
    assert.deepEqual(byConfig, {
      ok: true, diskimage: 'ubuntu-jammy', provider: 'cloud-b', wasPaused: false, pausedByConfig: true,
      message: 'Uploads of ubuntu-jammy to cloud-b were not paused by an operator; nothing to unpause',
      warnings: [`${env.configFile} still pauses them (pause: true)`],
    });
  });
});
