import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import yaml from 'js-yaml';
import { fn } from '../../../lib/gearman/functions.js';
import type { GearmanClient } from '../../../lib/gearman/client.js';
import type { DibBuilder } from '../../../workers/builder/dib-builder.js';
import { createBuilderEnv, fakeDiskimage, inProcessBuilder, runJob, testClient, type BuilderEnv } from '../../support/builder-env.js';
import { startGearmand, type GearmandHandle } from '../../support/gearmand.js';
import { runningProcesses } from '../../support/processes.js';
import { ScriptedCloud, SCRIPTED_REGION } from '../../support/scripted-cloud.js';

describe('builder: a Glance that stalls an upload', () => {
  let gearmand: GearmandHandle;
  let cloud: ScriptedCloud;
  let env: BuilderEnv;
  let builder: DibBuilder;
  let client: GearmanClient;
  let cloudsFile = '';

  before(async () => {
    [gearmand, cloud] = await Promise.all([startGearmand(), ScriptedCloud.start()]);
    cloud.answer('POST', /^\/v2\/images$/, { status: 201, body: { id: 'img-1', name: 'deb-1', status: 'queued' } })
      .answer('PUT', /^\/v2\/images\/img-1\/file$/, { hang: true })
      .answer('DELETE', /^\/v2\/images\/img-1$/, { status: 204 });
    cloudsFile = path.join(process.env.TMPDIR ?? '/tmp', `nodepool-scripted-clouds-${process.pid}.yaml`);
    const creds = cloud.creds();
    await writeFile(cloudsFile, yaml.dump({
      clouds: {
        scripted: {
          auth: { auth_url: creds.authUrl, username: creds.username, password: creds.password, project_name: creds.projectName, user_domain_name: 'Default', project_domain_name: 'Default' },
          region_name: SCRIPTED_REGION, identity_api_version: 3,
        },
      },
    }));
    env = await createBuilderEnv({
      gearmanPort: gearmand.port, cloudsFile, diskimages: [fakeDiskimage('deb')],
      providers: [{ name: 'stalled', driver: 'openstack', cloud: 'scripted', 'image-upload-timeout': 2, diskimages: [{ name: 'deb' }] }],
    });
    builder = inProcessBuilder(env);
    await builder.start();
    client = await testClient(gearmand.port);
  });

  after(async () => {
    await client?.stop();
    await builder?.stop({ abortAfterMs: 1000 });
    await cloud?.stop();
    await gearmand?.stop();
    await env?.remove();
    await rm(cloudsFile, { force: true });
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  it('aborts it after image-upload-timeout with WORK_FAIL, deletes the partial image, and keeps the build', async () => {
    const built = await runJob(client, fn.imageBuild('deb'), { 'image-id': 'deb-0000000001' });
    assert.equal(built.type, 'complete', built.message);
    const t0 = Date.now();
    const end = await runJob(client, fn.imageUpload('deb-0000000001'), { 'image-name': 'deb', provider: 'stalled', 'upload-id': '0000000001' }, { timeoutMs: 30_000 });
    const took = Date.now() - t0;
    assert.equal(end.type, 'fail', end.message);
    assert.equal(end.message, 'upload to stalled did not finish within 2 s (image-upload-timeout); the partial image was deleted');
    assert.ok(took < 15_000, `the job ended ${took} ms after it started`);
    assert.equal(cloud.seen('DELETE', /^\/v2\/images\/img-1$/).length, 1, 'the partial image was deleted in Glance');
    assert.deepEqual(builder.localImages(), ['deb-0000000001']);
  });
});
