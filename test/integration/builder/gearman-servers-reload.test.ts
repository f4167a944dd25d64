import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import yaml from 'js-yaml';
import { adminWorkers } from '../../../lib/gearman/admin.js';
import { fn } from '../../../lib/gearman/functions.js';
import { waitFor } from '../../../lib/lifecycle.js';
import { startGearmand, type GearmandHandle } from '../../support/gearmand.js';
import { runningProcesses, type TrackedProcess } from '../../support/processes.js';
import { builderProcess, createBuilderEnv, fakeDiskimage, type BuilderEnv } from '../../support/builder-env.js';

describe('nodepool-builder and a reloaded file without gearman-servers', () => {
  let gearmand: GearmandHandle;
  let env: BuilderEnv;
  let proc: TrackedProcess;

  const buildFunctions = async (): Promise<string[]> =>
    (await adminWorkers(gearmand.address)).flatMap((w) => w.functions).filter((f) => fn.parse(f)?.kind === 'build').sort();

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

  it('refuses the reload with the rule config-validate states, and keeps working', async () => {
    const doc = yaml.load(await readFile(env.configPath, 'utf8')) as Record<string, unknown>;
    delete doc['gearman-servers'];
    await writeFile(env.configPath, yaml.dump(doc));
    process.kill(proc.pid, 'SIGHUP');
    const log = path.join(env.dir, 'builder.log');
    await waitFor(async () => (await readFile(log, 'utf8')).includes('config reload failed'), { timeoutMs: 10_000, what: 'reload refusal logged' });
    assert.ok((await readFile(log, 'utf8')).includes('gearman-servers: expected at least one gearman server, got none: nodepool-builder takes all its jobs from Gearman'));
    assert.ok(proc.alive());
    assert.deepEqual(await buildFunctions(), [fn.imageBuild('deb')]);
  });
});
