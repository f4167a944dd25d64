import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { adminWorkers } from '../../../lib/gearman/admin.js';
import { fn } from '../../../lib/gearman/functions.js';
import { waitFor } from '../../../lib/lifecycle.js';
import { startGearmand, type GearmandHandle } from '../../support/gearmand.js';
import { runningProcesses, type TrackedProcess } from '../../support/processes.js';
import { builderProcess, createBuilderEnv, fakeDiskimage, type BuilderEnv } from '../../support/builder-env.js';

describe('nodepool-builder reloads its config without a restart', () => {
  let gearmand: GearmandHandle;
  let env: BuilderEnv;
  let proc: TrackedProcess;

  async function buildFunctions(): Promise<string[]> {
    return (await adminWorkers(gearmand.address)).flatMap((w) => w.functions).filter((f) => fn.parse(f)?.kind === 'build').sort();
  }

  before(async () => {
    gearmand = await startGearmand();
    env = await createBuilderEnv({ gearmanPort: gearmand.port, diskimages: [fakeDiskimage('deb')] });
    proc = builderProcess(env);
    await waitFor(async () => (await buildFunctions()).length === 1, { timeoutMs: 20_000, what: 'builder registered' });
  });

  after(async () => {
    await proc?.stop();
    await gearmand?.stop();
    await env?.remove();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  it('registers a diskimage added to the file (file change)', async () => {
    await env.rewrite({ diskimages: [fakeDiskimage('deb'), fakeDiskimage('centos')] });
    await waitFor(async () => (await buildFunctions()).length === 2, { timeoutMs: 10_000, what: 'image-build:centos registered' });
    assert.deepEqual(await buildFunctions(), [fn.imageBuild('centos'), fn.imageBuild('deb')]);
  });

  it('drops a paused diskimage on SIGHUP', async () => {
    await env.rewrite({ diskimages: [fakeDiskimage('deb', { pause: true }), fakeDiskimage('centos')] });
    process.kill(proc.pid, 'SIGHUP');
    await waitFor(async () => (await buildFunctions()).length === 1, { timeoutMs: 10_000, what: 'image-build:deb unregistered' });
    assert.deepEqual(await buildFunctions(), [fn.imageBuild('centos')]);
  });

  it('keeps the running config when the new file is invalid, and says why', async () => {
    await writeFile(env.configPath, 'diskimages: [{name: deb, rebuild-age: soon}]\n');
    process.kill(proc.pid, 'SIGHUP');
    const log = path.join(env.dir, 'builder.log');
    await waitFor(async () => (await readFile(log, 'utf8')).includes('config reload failed'), { timeoutMs: 10_000, what: 'reload failure logged' });
    assert.match(await readFile(log, 'utf8'), /diskimages\[0\]\.rebuild-age: expected integer >= 1, got "soon"/);
    assert.ok(proc.alive());
    assert.deepEqual(await buildFunctions(), [fn.imageBuild('centos')]);
  });
});
