/**
 * `nodepool image-status` through the real bin/nodepool.ts: Nodepool 11's table of paused and
 * requested diskimages, and its JSON.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { runningProcesses } from '../../support/processes.js';
import { createCliEnv, type CliEnv } from '../cli/cli-env.js';

describe('nodepool image-status', () => {
  let env: CliEnv | undefined;
  after(async () => {
    await env?.close();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  it('shows which diskimages are paused (by config or operator) and which have a build request', async () => {
    env = await createCliEnv();
    await env.store.requestBuild('ubuntu-jammy');
    await env.store.setPause('ubuntu-jammy', null, true, 'kernel regression');
    const r = await env.run('image-status');
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.split('\n').filter((l) => l.startsWith('|'));
    const paused = 'yes (operator: kernel regression)';
    const w = paused.length;
    assert.equal(lines[0], `| Image           | ${'Paused'.padEnd(w)} | Build Request | Build Request Age |`);
    assert.equal(lines[1], `| debian-bookworm | ${'yes (config)'.padEnd(w)} | no            |                   |`);
    assert.match(lines[2] ?? '', new RegExp(`^\\| ubuntu-jammy    \\| ${paused.replace(/[()]/g, '\\$&')} \\| yes           \\| 00:00:00:0\\d       \\|$`));
    const json = await env.run('image-status', '--json');
    assert.equal(json.code, 0, json.stderr);
    const statuses = JSON.parse(json.stdout) as Array<{ image: string; paused: boolean; pausedBy: string | null; buildRequest: boolean }>;
    assert.deepEqual(statuses.map((s) => [s.image, s.paused, s.pausedBy, s.buildRequest]), [
      ['debian-bookworm', true, 'config', false],
      ['ubuntu-jammy', true, 'operator', true],
    ]);
  });
});
