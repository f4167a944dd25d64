/**
 * A builder keeps one installation's jobs off another's files: two stores on one gearmand both
 * number builds from `<diskimage>-0000000001`, so an upload, delete or build job of installation
 * B can reach the builder holding A's files of the same id. Real gearmand, real fake-dib builds,
 * the loopback Glance.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fn } from '../../../lib/gearman/functions.js';
import type { GearmanClient } from '../../../lib/gearman/client.js';
import type { DibBuilder } from '../../../workers/builder/dib-builder.js';
import { startGearmand, type GearmandHandle } from '../../support/gearmand.js';
import { startLoopbackCloud, type LoopbackCloud } from '../../support/openstack.js';
import { runningProcesses } from '../../support/processes.js';
import {
  createBuilderEnv, fakeDiskimage, glanceAdmin, inProcessBuilder, loopbackProvider, runJob, testClient, type BuilderEnv,
} from '../../support/builder-env.js';

const A = randomUUID();
const B = randomUUID();

describe('builder: jobs of another installation', () => {
  let gearmand: GearmandHandle;
  let cloud: LoopbackCloud;
  let env: BuilderEnv;
  let builder: DibBuilder;
  let client: GearmanClient;

  before(async () => {
    [gearmand, cloud] = await Promise.all([startGearmand(), startLoopbackCloud()]);
    env = await createBuilderEnv({
      gearmanPort: gearmand.port, cloud,
      diskimages: [fakeDiskimage('deb', { formats: ['qcow2'] }, { FAKE_DIB_DELAY: '0.1' })], providers: [loopbackProvider('cloud-a', ['deb'])],
    });
    builder = inProcessBuilder(env);
    await builder.start();
    client = await testClient(gearmand.port);
  });

  after(async () => {
    await client?.stop();
    await builder?.stop({ abortAfterMs: 1000 });
    await gearmand?.stop();
    await cloud?.stop();
    await env?.remove();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  it('records the installation in the sidecar and refuses another installation\'s build, upload and delete of the id', async () => {
    const id = 'deb-0000000001';
    const built = await runJob(client, fn.imageBuild('deb'), { 'image-id': id, installation: A }, { unique: `${id}-a` });
    assert.equal(built.type, 'complete', built.message);
    const sidecar = JSON.parse(await readFile(path.join(env.imagesDir, `${id}.json`), 'utf8')) as Record<string, unknown>;
    assert.equal(sidecar.installation, A);

    const otherBuild = await runJob(client, fn.imageBuild('deb'), { 'image-id': id, installation: B }, { unique: `${id}-b` });
    assert.equal(otherBuild.type, 'fail');
    assert.match(otherBuild.message, new RegExp(`holds ${id} for installation ${A}, this job comes from installation ${B}`));

    const otherUpload = await runJob(client, fn.imageUpload(id), { 'image-name': 'deb', provider: 'cloud-a', 'upload-id': '0000000001', installation: B });
    assert.equal(otherUpload.type, 'fail');
    assert.match(otherUpload.message, /upload of deb-0000000001 refused/);
    const glance = await glanceAdmin(cloud);
    try {
      assert.deepEqual((await glance.list({ properties: { nodepool_build_id: id } })).length, 0, 'nothing uploaded for the other installation');
    } finally {
      glance.close();
    }

    const otherDelete = await runJob(client, fn.imageDelete(id), { installation: B });
    assert.equal(otherDelete.type, 'fail');
    assert.match(otherDelete.message, /delete of deb-0000000001 refused/);
    assert.ok((await readdir(env.imagesDir)).includes(`${id}.qcow2`), 'the files stay');
    assert.deepEqual(builder.localImages(), [id]);

    // The own installation (and a payload without one: Nodepool 0.3.x) is served as before.
    const ownUpload = await runJob(client, fn.imageUpload(id), { 'image-name': 'deb', provider: 'cloud-a', 'upload-id': '0000000002', installation: A, meta: { nodepool_installation_id: A } });
    assert.equal(ownUpload.type, 'complete', ownUpload.message);
    const ownDelete = await runJob(client, fn.imageDelete(id), '', { raw: true });
    assert.equal(ownDelete.type, 'complete', ownDelete.message);
    assert.deepEqual(builder.localImages(), []);
  });

  it('refuses a malformed installation id in a payload', async () => {
    const end = await runJob(client, fn.imageBuild('deb'), { 'image-id': 'deb-0000000005', installation: 'not-a-uuid' });
    assert.equal(end.type, 'fail');
    assert.match(end.message, /"installation" must be an installation id/);
  });
});
