import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Releasers } from '../../../lib/lifecycle.js';
import { runningProcesses } from '../../support/processes.js';
import { createCliEnv, type CliEnv } from './cli-env.js';

describe('nodepool image-pause and image-unpause', () => {
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

  it("pauses a diskimage's builds with a reason, which image-build then refuses, until unpaused", async () => {
    const env = await setup();
    const paused = await env.run('image-pause', 'ubuntu-jammy', '--reason', 'kernel regression');
    assert.deepEqual(paused, { stdout: 'Builds of ubuntu-jammy paused (kernel regression)\n', stderr: '', code: 0 });
    const [p, ...more] = await env.store.listPauses();
    assert.deepEqual([p?.diskimage, p?.provider, p?.reason, more.length], ['ubuntu-jammy', null, 'kernel regression', 0]);
    assert.equal((await env.run('image-build', 'ubuntu-jammy')).code, 1);
    const unpaused = await env.run('image-unpause', 'ubuntu-jammy');
    assert.deepEqual(unpaused, { stdout: 'Builds of ubuntu-jammy unpaused\n', stderr: '', code: 0 });
    assert.deepEqual(await env.store.listPauses(), []);
    assert.equal((await env.run('image-build', 'ubuntu-jammy')).code, 0);
  });

  it("pauses and unpauses a diskimage's uploads to one provider only", async () => {
    const env = await setup();
    const r = await env.run('image-pause', 'ubuntu-jammy', '--provider', 'cloud-a');
    assert.deepEqual(r, { stdout: 'Uploads of ubuntu-jammy to cloud-a paused\n', stderr: '', code: 0 });
    const [p] = await env.store.listPauses();
    assert.deepEqual([p?.provider, p?.reason], ['cloud-a', null]);
    assert.equal((await env.run('image-build', 'ubuntu-jammy')).code, 0, 'builds are not paused');
    const u = await env.run('image-unpause', 'ubuntu-jammy', '--provider', 'cloud-a');
    assert.deepEqual(u, { stdout: 'Uploads of ubuntu-jammy to cloud-a unpaused\n', stderr: '', code: 0 });
    assert.deepEqual(await env.store.listPauses(), []);
  });

  it('warns on unpause when nodepool.yaml still pauses the same thing', async () => {
    const env = await setup();
    const builds = await env.run('image-unpause', 'debian-bookworm');
    // No operator pause to remove: it says so (issue 20 §10), and that the config still pauses them.
    assert.deepEqual(builds, {
      stdout: 'Builds of debian-bookworm were not paused by an operator; nothing to unpause\n',
      stderr: `warning: ${env.configFile} still pauses them (pause: true)\n`, code: 0,
    });
    const uploads = await env.run('image-unpause', 'ubuntu-jammy', '--provider', 'cloud-b');
    assert.equal(uploads.stderr, `warning: ${env.configFile} still pauses them (pause: true)\n`);
  });

  it('exits 3 for an unknown diskimage, an unknown provider, or a provider that does not list the diskimage', async () => {
    const env = await setup();
    const cases: Array<[string[], string]> = [
      [['image-pause', 'centos-9'], `Diskimage centos-9 not found in ${env.configFile}`],
      [['image-pause', 'ubuntu-jammy', '--provider', 'cloud-z'], `Provider cloud-z not found in ${env.configFile}`],
      [['image-unpause', 'debian-bookworm', '--provider', 'cloud-a'], 'Provider cloud-a does not list diskimage debian-bookworm'],
    ];
    for (const [args, message] of cases) {
      const r = await env.run(...args);
      assert.deepEqual([r.code, r.stderr], [3, `${message}\n`], args.join(' '));
    }
    assert.deepEqual(await env.store.listPauses(), []);
  });
});
