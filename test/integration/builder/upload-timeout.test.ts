import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { fn } from '../../../lib/gearman/functions.js';
import type { GearmanClient } from '../../../lib/gearman/client.js';
import type { DibBuilder } from '../../../workers/builder/dib-builder.js';
import { createBuilderEnv, fakeDiskimage, inProcessBuilder, runJob, testClient, type BuilderEnv } from '../../support/builder-env.js';
import { startGearmand, type GearmandHandle } from '../../support/gearmand.js';
import { runningProcesses } from '../../support/processes.js';
import { ScriptedCloud } from '../../support/scripted-cloud.js';

describe('builder: a Glance that stalls or fails an upload', () => {
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
      .answer('DELETE', /^\/v2\/images\/img-\d+$/, { status: 204 });
    cloudsFile = path.join(process.env.TMPDIR ?? '/tmp', `nodepool-scripted-clouds-${process.pid}.yaml`);
    await cloud.writeCloudsYaml(cloudsFile);
    env = await createBuilderEnv({
      gearmanPort: gearmand.port, cloudsFile, diskimages: [fakeDiskimage('deb')],
      providers: [{ name: 'stalled', driver: 'openstack', cloud: 'scripted', 'image-upload-timeout': 2, diskimages: [{ name: 'deb' }] }],
    });
    builder = inProcessBuilder(env, { uploadRetryDelayMs: 100 });
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

  it('tries an upload again after a 503 and a dropped connection, telling the server each time, and completes', async () => {
    const ids = ['img-2', 'img-3', 'img-4'];
    cloud.answer('POST', /^\/v2\/images$/, ids.map((id) => ({ status: 201, body: { id, name: 'deb-1', status: 'queued' } })))
      .answer('PUT', /^\/v2\/images\/img-2\/file$/, { status: 503, body: '<html>Service Unavailable</html>' })
      .answer('PUT', /^\/v2\/images\/img-3\/file$/, { reset: true })
      .answer('PUT', /^\/v2\/images\/img-4\/file$/, { status: 204 })
      .answer('GET', /^\/v2\/images\/img-4$/, () => ({ body: { id: 'img-4', name: 'deb-1', status: 'active', size: statSync(path.join(env.imagesDir, 'deb-0000000001.qcow2')).size } }));
    const notes: string[] = [];
    const job = client.submit(fn.imageUpload('deb-0000000001'), JSON.stringify({ 'image-name': 'deb', provider: 'stalled', 'upload-id': '0000000002' }), {
      onData: (d) => notes.push(d.toString('utf8')),
    });
    const r = await job.result;
    assert.equal(r.type, 'complete', r.type === 'complete' ? '' : Buffer.concat(r.warnings).toString());
    assert.equal(JSON.parse(r.data.toString())['external-id'], 'img-4');
    assert.deepEqual(notes.map((n) => JSON.parse(n) as Record<string, unknown>).map((n) => [n['upload-attempt'], n.attempts]), [[2, 3], [3, 3]]);
    assert.match(JSON.parse(notes[0]!)['last-error'] as string, /Glance PUT \/v2\/images\/img-2\/file failed with 503; cloud said: .*Service Unavailable/);
    assert.deepEqual(['img-2', 'img-3'].map((id) => cloud.seen('DELETE', new RegExp(`^/v2/images/${id}$`)).length), [1, 1], 'each failed attempt\'s image deleted');
  });

  it('does not try again after a rejection (4xx): one attempt, WORK_FAIL with the cloud\'s words', async () => {
    const posts = cloud.seen('POST', /^\/v2\/images$/).length;
    cloud.answer('POST', /^\/v2\/images$/, { status: 201, body: { id: 'img-5', name: 'deb-1', status: 'queued' } })
      .answer('PUT', /^\/v2\/images\/img-5\/file$/, { status: 413, body: { message: 'image too large for quota' } });
    const end = await runJob(client, fn.imageUpload('deb-0000000001'), { 'image-name': 'deb', provider: 'stalled', 'upload-id': '0000000003' }, { timeoutMs: 30_000 });
    assert.equal(end.type, 'fail');
    assert.match(end.message, /413; cloud said: .*image too large for quota/);
    assert.equal(cloud.seen('POST', /^\/v2\/images$/).length, posts + 1);
  });
});
