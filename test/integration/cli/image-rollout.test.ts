/**
 * `nodepool image-pin`, `image-unpin`, `image-revoke`, `image-unrevoke` and `image-promote`: the
 * real CLI against a SQLite store the test writes as the server would; each prints its sentence,
 * writes the intent, and exits 0, or prints the refusal on stderr with its exit code.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { BuildRecord, UploadRecord } from '../../../lib/store/models.js';
import { heartbeatEnvPerTest, type CliEnv } from './cli-env.js';

describe('nodepool image-pin, image-unpin, image-revoke, image-unrevoke, image-promote', () => {
  const setup = heartbeatEnvPerTest();

  /** A ready build of ubuntu-jammy with a ready upload to cloud-a. */
  async function readyBuild(env: CliEnv): Promise<{ build: BuildRecord; upload: UploadRecord }> {
    const build = await env.store.createBuild({ diskimage: 'ubuntu-jammy', formats: ['qcow2'] });
    await env.store.updateBuild(build.id, { state: 'ready', files: [{ format: 'qcow2', size: 1, sha256: 'a'.repeat(64) }] });
    const u = await env.store.createUpload({ buildId: build.id, provider: 'cloud-a', imageName: 'ubuntu-jammy', externalName: build.id });
    const upload = (await env.store.updateUpload(u.id, { state: 'ready', externalId: `img-${u.id}`, format: 'qcow2' }))!;
    return { build, upload };
  }

  it('pins a diskimage on one provider and everywhere, and unpins', async () => {
    const env = await setup();
    const { build } = await readyBuild(env);
    const onA = await env.run('image-pin', 'ubuntu-jammy', build.id, '--provider', 'cloud-a', '--reason', 'new kernel panics');
    assert.deepEqual(onA, { stdout: `Launches of ubuntu-jammy on cloud-a pinned to ${build.id} (new kernel panics)\n`, stderr: '', code: 0 });
    const wide = await env.run('image-pin', 'ubuntu-jammy', build.id);
    assert.deepEqual(wide, {
      stdout: `Launches of ubuntu-jammy on every provider pinned to ${build.id}\n`,
      stderr: `warning: cloud-a keeps its own pin to ${build.id}\nwarning: cloud-b has no ready upload of ${build.id}; its launches of ubuntu-jammy boot its newest upload\n`,
      code: 0,
    });
    assert.deepEqual((await env.store.listPins()).map((p) => [p.provider, p.buildId, p.reason]), [[null, build.id, null], ['cloud-a', build.id, 'new kernel panics']]);

    const unpinned = await env.run('image-unpin', 'ubuntu-jammy');
    assert.deepEqual(unpinned, {
      stdout: `Launches of ubuntu-jammy on every provider unpinned (were pinned to ${build.id})\n`,
      stderr: `warning: cloud-a's own pin to ${build.id} stays (nodepool image-unpin ubuntu-jammy --provider cloud-a)\n`, code: 0,
    });
    assert.equal((await env.run('image-unpin', 'ubuntu-jammy', '--provider', 'cloud-a')).code, 0);
    assert.deepEqual(await env.store.listPins(), []);
    assert.deepEqual(await env.run('image-unpin', 'ubuntu-jammy', '--provider', 'cloud-a'),
      { stdout: 'Launches of ubuntu-jammy on cloud-a were not pinned; nothing to unpin\n', stderr: '', code: 0 });
  });

  it('exits 3 for unknown names and 1 for a build that cannot serve, pinning nothing', async () => {
    const env = await setup();
    const { build } = await readyBuild(env);
    const building = await env.store.createBuild({ diskimage: 'ubuntu-jammy', formats: ['qcow2'] });
    const cases: Array<[string[], number, string]> = [
      [['image-pin', 'centos', build.id], 3, `Diskimage centos not found in ${env.configFile}`],
      [['image-pin', 'ubuntu-jammy', build.id, '--provider', 'cloud-z'], 3, `Provider cloud-z not found in ${env.configFile}`],
      [['image-pin', 'ubuntu-jammy', 'ubuntu-jammy-0000009999'], 3, 'Build ubuntu-jammy-0000009999 not found'],
      [['image-pin', 'ubuntu-jammy', building.id], 1, `Build ${building.id} has no ready upload; nothing to pin to`],
      [['image-pin', 'ubuntu-jammy', build.id, '--provider', 'cloud-b'], 1, `Build ${build.id} has no ready upload on cloud-b; nothing to pin to`],
      [['image-unpin', 'centos'], 3, `Diskimage centos not found in ${env.configFile}`],
      [['image-revoke', 'ubuntu-jammy-0000009999'], 3, 'Build ubuntu-jammy-0000009999 not found'],
      [['image-unrevoke', build.id], 1, `Build ${build.id} is not revoked, nor any upload of it; nothing to unrevoke`],
      [['image-promote', 'ubuntu-jammy-0000009999'], 3, 'Build ubuntu-jammy-0000009999 not found'],
      [['image-promote', building.id], 1, `Build ${building.id} has no ready upload; nothing to promote`],
    ];
    for (const [args, code, message] of cases) {
      const r = await env.run(...args);
      assert.deepEqual([r.code, r.stdout, r.stderr], [code, '', `${message}\n`], args.join(' '));
    }
    const usage = await env.run('image-revoke', build.id, '--nodes', 'all');
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /Argument: nodes, Given: "all", Choices: "keep", "delete-ready"/);
    assert.deepEqual([await env.store.listPins(), await env.store.listRevocations()], [[], []]);
  });

  it('refuses an empty or blank reason with exit 2 as the web does, and says a failed build failed', async () => {
    const env = await setup();
    const { build } = await readyBuild(env);
    const blank = 'The reason must not be empty or blank; leave it out to give none\n';
    for (const args of [
      ['image-pin', 'ubuntu-jammy', build.id, '--reason', ''], ['image-pin', 'ubuntu-jammy', build.id, '--reason', '  '],
      ['image-revoke', build.id, '--reason', ''], ['image-revoke', build.id, '--reason', ' '],
      ['image-pause', 'ubuntu-jammy', '--reason', ''],
    ]) {
      assert.deepEqual(await env.run(...args), { stdout: '', stderr: blank, code: 2 }, args.join(' '));
    }
    assert.deepEqual([await env.store.listPins(), await env.store.listRevocations(), await env.store.listPauses()], [[], [], []]);
    const failed = await env.store.createBuild({ diskimage: 'ubuntu-jammy', formats: ['qcow2'] });
    await env.store.updateBuild(failed.id, { state: 'failed', reason: 'dib exited 1' });
    for (const [verb, args] of [['pin', ['image-pin', 'ubuntu-jammy', failed.id]], ['promote', ['image-promote', failed.id]], ['revoke', ['image-revoke', failed.id]], ['unrevoke', ['image-unrevoke', failed.id]]] as const) {
      assert.deepEqual(await env.run(...args), { stdout: '', stderr: `Build ${failed.id} failed (dib exited 1); a failed build has no upload to ${verb}\n`, code: 1 }, verb);
    }
  });

  it('revokes a build deleting its idle ready nodes, refuses to promote it, and unrevokes it', async () => {
    const env = await setup();
    const { build, upload } = await readyBuild(env);
    const idle = await env.store.createNode({ state: 'ready', provider: 'cloud-a', pool: 'main', labels: ['small'], image: upload.id });
    const busy = await env.store.createNode({ state: 'ready', provider: 'cloud-a', pool: 'main', labels: ['small'], image: upload.id, allocatedTo: '100-0000000007' });
    const revoked = await env.run('image-revoke', build.id, '--reason', 'kernel panic', '--nodes', 'delete-ready');
    assert.deepEqual(revoked, {
      stdout: `Build ${build.id} revoked (kernel panic): no launch boots its uploads; 1 ready node(s) marked for deletion, 1 kept because busy (${busy.id})\n`,
      stderr: `warning: node ${busy.id} kept: allocated to request 100-0000000007\n`, code: 0,
    });
    assert.deepEqual([(await env.store.getNode(idle.id))?.state, (await env.store.getNode(busy.id))?.state], ['deleting', 'ready']);
    assert.deepEqual((await env.store.listRevocations()).map((r) => [r.buildId, r.reason]), [[build.id, 'kernel panic']]);

    const promote = await env.run('image-promote', build.id);
    assert.deepEqual(promote, { stdout: '', stderr: `Build ${build.id} is revoked; nodepool image-unrevoke ${build.id} first\n`, code: 1 });
    const unrevoked = await env.run('image-unrevoke', build.id);
    assert.deepEqual(unrevoked, { stdout: `Build ${build.id} unrevoked: its uploads serve launches again\n`, stderr: '', code: 0 });
    assert.deepEqual(await env.store.listRevocations(), []);

    const kept = await env.run('image-revoke', build.id);
    assert.deepEqual(kept, { stdout: `Build ${build.id} revoked: no launch boots its uploads\n`, stderr: '', code: 0 });
    assert.equal((await env.store.getNode(busy.id))?.state, 'ready', '--nodes keep is the default');
  });

  it('promotes a canary, and unrevoke starts an aborted canary anew', async () => {
    const env = await setup();
    const { build, upload } = await readyBuild(env);
    await env.store.updateUpload(upload.id, { rollout: { state: 'revoked', time: Date.now(), reason: 'canary aborted: 3 launch failures' }, launches: 1, launchFailures: 3 });
    const refused = await env.run('image-promote', build.id);
    assert.deepEqual(refused, {
      stdout: '', code: 1,
      stderr: `Every ready upload of build ${build.id} was revoked by a failed canary; nodepool image-unrevoke ${build.id} first\n`,
    });
    const reset = await env.run('image-unrevoke', build.id);
    assert.deepEqual(reset, { stdout: `Build ${build.id} was not revoked by an operator; upload(s) ${upload.id} revoked by a failed canary start a new canary\n`, stderr: '', code: 0 });
    const canary = await env.store.getUpload(upload.id);
    assert.deepEqual([canary?.rollout?.state, canary?.rollout?.reason, canary?.launches ?? 0, canary?.launchFailures ?? 0], ['canary', 'unrevoked', 0, 0]);

    const promoted = await env.run('image-promote', build.id);
    assert.deepEqual(promoted, { stdout: `Build ${build.id} promoted on cloud-a (upload ${upload.id}): it serves every launch\n`, stderr: '', code: 0 });
    const after = await env.store.getUpload(upload.id);
    assert.deepEqual([after?.rollout?.state, after?.rollout?.reason], ['promoted', 'promoted by operator']);
  });
});
