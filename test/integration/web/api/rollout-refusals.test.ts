/**
 * The write API refuses what the CLI refuses (issue 31 §8, §10), on the real server and SQLite:
 * deleting a pinned build or the upload its pin boots (409, saying to unpin first), promoting or
 * unrevoking a build being deleted (409), a failed build named as failed (409), and a blank
 * reason (400); each refusal changes nothing.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { seed, startApiEnv, stateOf, type ApiEnv, type Seeded } from './api-env.js';

describe('write API: rollout refusals', () => {
  let env: ApiEnv;
  let s: Seeded;

  beforeEach(async () => {
    env = await startApiEnv();
    s = await seed(env.store);
  });
  afterEach(async () => {
    await env?.close();
  });

  it('refuses to delete a pinned build, and the upload its pin boots, with 409 saying to unpin first', async () => {
    const admin = await env.token('admin');
    await env.store.setPin('deb', 'cloud-a', s.older.id, 'known good');
    const before = await stateOf(env.store);
    const build = await env.call('DELETE', `/api/build/${s.older.id}`, { token: admin });
    assert.equal(build.status, 409, JSON.stringify(build.json));
    assert.deepEqual(build.json, {
      ok: false, refusal: 'wrong-state',
      message: `Build ${s.older.id} is pinned (deb on cloud-a); unpin it first (nodepool image-unpin deb --provider cloud-a), then delete it`,
    });
    const upload = await env.call('DELETE', `/api/upload/${s.readyUpload.id}`, { token: admin });
    assert.equal(upload.status, 409, JSON.stringify(upload.json));
    assert.match(String(upload.json.message), /is pinned \(deb on cloud-a\); unpin it first/);
    assert.equal(await stateOf(env.store), before, 'nothing was marked');
    // The build's failed upload to cloud-b serves no pin: it may go.
    assert.equal((await env.call('DELETE', `/api/upload/${s.failedUpload.id}`, { token: admin })).status, 200);
    const op = await env.token('operator');
    assert.equal((await env.call('POST', '/api/image/deb/unpin', { token: op, body: { provider: 'cloud-a' } })).status, 200);
    assert.equal((await env.call('DELETE', `/api/build/${s.older.id}`, { token: admin })).status, 200);
    assert.equal((await env.store.getBuild(s.older.id))?.state, 'deleting');
  });

  it('refuses to promote or unrevoke a build being deleted, names a failed build failed, and refuses a blank reason', async () => {
    const op = await env.token('operator');
    await env.store.setRevocation('deb', s.newer.id, true, 'bad');
    await env.store.updateBuild(s.newer.id, { state: 'deleting', reason: 'deleted by operator' });
    const failed = await env.store.createBuild({ diskimage: 'deb', formats: ['qcow2'] });
    await env.store.updateBuild(failed.id, { state: 'failed', reason: 'dib exited 1' });
    const before = await stateOf(env.store);
    const cases: Array<[string, Record<string, unknown> | undefined, number, string, string]> = [
      [`/api/build/${s.newer.id}/promote`, undefined, 409, 'wrong-state', `Build ${s.newer.id} is being deleted; it cannot be promoted`],
      [`/api/build/${s.newer.id}/unrevoke`, undefined, 409, 'wrong-state', `Build ${s.newer.id} is being deleted; it cannot be unrevoked`],
      [`/api/build/${failed.id}/promote`, undefined, 409, 'wrong-state', `Build ${failed.id} failed (dib exited 1); a failed build has no upload to promote`],
      ['/api/image/deb/pin', { build: failed.id }, 409, 'wrong-state', `Build ${failed.id} failed (dib exited 1); a failed build has no upload to pin`],
      ['/api/image/deb/pin', { build: s.older.id, reason: '   ' }, 400, 'invalid-argument', 'The reason must not be empty or blank; leave it out to give none'],
      [`/api/build/${s.older.id}/revoke`, { reason: ' \t ' }, 400, 'invalid-argument', 'The reason must not be empty or blank; leave it out to give none'],
      ['/api/image/deb/pause', { reason: '  ' }, 400, 'invalid-argument', 'The reason must not be empty or blank; leave it out to give none'],
    ];
    for (const [p, body, status, refusal, message] of cases) {
      const res = await env.call('POST', p, { token: op, body });
      assert.deepEqual([res.status, res.json], [status, { ok: false, refusal, message }], p);
    }
    assert.equal(await stateOf(env.store), before, 'refusals changed nothing');
  });
});
