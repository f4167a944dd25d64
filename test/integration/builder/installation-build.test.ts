/**
 * A builder bound to an installation refuses another installation's build jobs (issue 31 §10):
 * two installations on one gearmand both submit `image-build:<diskimage>`, the same function,
 * so gearmand may hand one's build to the other's builder. `nodepool-builder --installation X`
 * (a process, on a real gearmand, with the fake disk-image-create) answers WORK_FAIL with the
 * reason to a build naming installation Y, and builds a job naming X or none (a Nodepool 0.3.x
 * server's payload, unchanged on the wire).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { GearmanClient } from '../../../lib/gearman/client.js';
import { fn } from '../../../lib/gearman/functions.js';
import { createBuilderEnv, fakeDiskimage, runJob, testClient, type BuilderEnv } from '../../support/builder-env.js';
import { startGearmand, type GearmandHandle } from '../../support/gearmand.js';
import { runningProcesses, startProcess, type TrackedProcess } from '../../support/processes.js';
import { nodeScript } from '../../support/node-command.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

describe('nodepool-builder --installation', () => {
  const mine = randomUUID();
  const theirs = randomUUID();
  let gearmand: GearmandHandle;
  let env: BuilderEnv;
  let client: GearmanClient;
  let builder: TrackedProcess;

  before(async () => {
    gearmand = await startGearmand();
    env = await createBuilderEnv({ gearmanPort: gearmand.port, name: 'installation', diskimages: [fakeDiskimage('deb', { formats: ['qcow2'] }, { FAKE_DIB_SIZE_MIB: '1' })] });
    client = await testClient(gearmand.port);
    builder = startProcess('nodepool-builder', process.execPath, [
      ...nodeScript('bin/nodepool-builder.ts'), '-c', env.configPath, '--hostname', 'builder-mine', '--installation', mine, '--log-level', 'debug',
    ], { cwd: ROOT, logFile: path.join(env.dir, 'builder.log'), env: { ...process.env, NODEPOOL_CONFIG: '' } });
  });

  after(async () => {
    await builder?.stop();
    await client?.stop();
    await gearmand?.stop();
    await env?.remove();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  it('refuses with WORK_FAIL, naming both installations, a build job from another installation, and builds nothing for it', async () => {
    const end = await runJob(client, fn.imageBuild('deb'), { 'image-id': 'deb-0000000001', installation: theirs });
    assert.equal(end.type, 'fail', `see ${env.dir}/builder.log`);
    assert.match(end.message, new RegExp(`^build of deb-0000000001 refused: builder-mine:\\S+ serves installation ${mine} .*this job comes from installation ${theirs}`));
    assert.equal(existsSync(path.join(env.imagesDir, 'deb-0000000001.qcow2')), false, 'no image built for the other installation');
    assert.equal(existsSync(path.join(env.buildLogDir, 'deb-0000000001.log')), false, 'no build started for it');
  });

  it('builds a job of its own installation, and one naming none (Nodepool 0.3.x)', async () => {
    const own = await runJob(client, fn.imageBuild('deb'), { 'image-id': 'deb-0000000002', installation: mine });
    assert.equal(own.type, 'complete', own.message);
    const legacy = await runJob(client, fn.imageBuild('deb'), { 'image-id': 'deb-0000000003' });
    assert.equal(legacy.type, 'complete', legacy.message);
    assert.ok(existsSync(path.join(env.imagesDir, 'deb-0000000003.qcow2')));
  });
});
