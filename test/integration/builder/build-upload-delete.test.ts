import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createReadStream, existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import { pipeline } from 'node:stream/promises';
import { adminWorkers } from '../../../lib/gearman/admin.js';
import { fn } from '../../../lib/gearman/functions.js';
import type { GearmanClient } from '../../../lib/gearman/client.js';
import type { OpenStackImageService } from '../../../lib/drivers/openstack/glance-image-service.js';
import { waitFor } from '../../../lib/lifecycle.js';
import type { DibBuilder } from '../../../workers/builder/dib-builder.js';
import { startGearmand, type GearmandHandle } from '../../support/gearmand.js';
import { useLoopbackCloud, type LoopbackCloud } from '../../support/openstack.js';
import { runningProcesses } from '../../support/processes.js';
import {
  createBuilderEnv, fakeDiskimage, glanceAdmin, inProcessBuilder, loopbackProvider, runJob, testClient, type BuilderEnv,
} from '../../support/builder-env.js';

async function digest(algo: string, file: string): Promise<string> {
  const h = createHash(algo);
  await pipeline(createReadStream(file), h);
  return h.digest('hex');
}

describe('builder: build, upload and delete against gearmand and Glance', () => {
  let gearmand: GearmandHandle;
  let cloud: LoopbackCloud;
  let env: BuilderEnv;
  let builder: DibBuilder;
  let client: GearmanClient;
  let glance: OpenStackImageService;
  const id = 'debian-test-0000000001';

  before(async () => {
    [gearmand, cloud] = await Promise.all([startGearmand(), useLoopbackCloud()]);
    env = await createBuilderEnv({
      gearmanPort: gearmand.port,
      cloud,
      diskimages: [fakeDiskimage('debian-test', { formats: ['qcow2'] }, { FAKE_DIB_DELAY: '0.05', FAKE_DIB_REQUIRE_ENV: 'DIB_RELEASE=bookworm DIB_IMAGE_NAME=debian-test' })],
      providers: [loopbackProvider('cloud-qcow2', ['debian-test']), loopbackProvider('cloud-raw', ['debian-test'], 'raw'), loopbackProvider('cloud-vhd', ['debian-test'], 'vhd')],
    });
    builder = inProcessBuilder(env);
    await builder.start();
    client = await testClient(gearmand.port);
    glance = await glanceAdmin(cloud);
  });

  after(async () => {
    await client?.stop();
    await builder?.stop({ abortAfterMs: 1000 });
    await gearmand?.stop();
    await cloud?.stop();
    await env?.remove();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  it('registers image-build for its diskimage under its client id', async () => {
    // start() connects in the background and CAN_DO has no answer: wait until gearmand lists it
    await waitFor(async () => (await adminWorkers(gearmand.address))
      .some((w) => w.clientId === builder.clientId && w.functions.includes(fn.imageBuild('debian-test'))),
    { timeoutMs: 10_000, what: 'image-build:debian-test registered under the builder\'s client id' });
    assert.match(builder.clientId, /^builder-a:[0-9a-f-]{36}$/);
  });

  it('builds: files, checksums and the sidecar, WORK_STATUS per DIB phase, and the contract payload', async () => {
    const end = await runJob(client, fn.imageBuild('debian-test'), { 'image-id': id }, { unique: id });
    assert.equal(end.type, 'complete', end.message);
    const files = end.json?.files as Array<{ format: string; size: number; sha256: string }>;
    assert.deepEqual(end.json?.formats, ['qcow2']);
    assert.equal(end.json?.['image-id'], id);
    assert.equal(end.json?.builder, 'builder-a');
    assert.equal(end.json?.['builder-id'], builder.clientId.split(':')[1]);
    assert.equal(files.length, 1);
    const qcow2 = `${env.imagesDir}/${id}.qcow2`;
    assert.equal(files[0]?.sha256, await digest('sha256', qcow2));
    assert.equal((await readFile(`${qcow2}.sha256`, 'utf8')).trim(), `${files[0]?.sha256}  ${id}.qcow2`);
    const sidecar = JSON.parse(await readFile(`${env.imagesDir}/${id}.json`, 'utf8')) as Record<string, unknown>;
    assert.deepEqual(sidecar.files, files);
    assert.ok(existsSync(`${env.imagesDir}/${id}.d/dib-manifests`), 'DIB manifests dir kept with the image');
    assert.ok(end.statuses.length >= 8, `WORK_STATUS per phase, got ${JSON.stringify(end.statuses)}`);
    assert.deepEqual(end.statuses.map(([, d]) => d).filter((d, i, a) => a.indexOf(d) === i), [11]);
    const log = await readFile(`${env.buildLogDir}/${id}.log`, 'utf8');
    assert.match(log, /running: .*fake-dib -x -t qcow2 --checksum --no-tmpfs --image-cache \S+ -o \S+\/debian-test-0000000001 fake-element/);
    assert.match(log, /Build completed successfully/);
    assert.deepEqual((await readdir(env.config.buildTmpDir)).filter((n) => n !== 'image-cache'), [], 'the build TMPDIR is removed');
  });

  it('advertises image-upload and image-delete for the build in gearmand workers', async () => {
    const workers = await adminWorkers(gearmand.address);
    const fns = workers.filter((w) => w.clientId === builder.clientId).flatMap((w) => w.functions);
    assert.ok(fns.includes(fn.imageUpload(id)) && fns.includes(fn.imageDelete(id)), JSON.stringify(fns));
  });

  it('uploads the built format to Glance: active, same checksum, our properties, progress reported', async () => {
    const end = await runJob(client, fn.imageUpload(id), { 'image-name': 'debian-test', provider: 'cloud-qcow2', 'upload-id': '0000000001' });
    assert.equal(end.type, 'complete', end.message);
    assert.equal(end.json?.format, 'qcow2');
    assert.match(String(end.json?.['external-name']), /^debian-test-\d{10}$/);
    const image = await glance.glance.getImage(String(end.json?.['external-id']));
    assert.equal(image?.status, 'active');
    assert.equal(image?.diskFormat, 'qcow2');
    assert.equal(image?.checksum, await digest('md5', `${env.imagesDir}/${id}.qcow2`));
    assert.equal(image?.properties.nodepool_build_id, id);
    assert.equal(image?.properties.nodepool_upload_id, '0000000001');
    assert.equal(image?.properties.purpose, 'test');
    const last = end.statuses.at(-1);
    assert.ok(last && last[0] === last[1] && last[1] > 0, `final WORK_STATUS is total/total: ${JSON.stringify(end.statuses)}`);
    await glance.delete(image?.id ?? '');
  });

  it('converts with qemu-img for providers that need raw and vhd, and keeps the converted file', async () => {
    for (const [provider, format, qemuName] of [['cloud-raw', 'raw', 'raw'], ['cloud-vhd', 'vhd', 'vpc']] as const) {
      const end = await runJob(client, fn.imageUpload(id), { 'image-name': 'debian-test', provider });
      assert.equal(end.type, 'complete', end.message);
      assert.equal(end.json?.format, format);
      const file = `${env.imagesDir}/${id}.${format}`;
      const info = JSON.parse(execFileSync('qemu-img', ['info', '-f', qemuName, '--output=json', file], { encoding: 'utf8' })) as { format: string };
      assert.equal(info.format, qemuName);
      const image = await glance.glance.getImage(String(end.json?.['external-id']));
      assert.equal(image?.status, 'active');
      assert.equal(image?.diskFormat, format);
      assert.equal(image?.checksum, await digest('md5', file));
      await glance.delete(image?.id ?? '');
    }
    const cmp = execFileSync('qemu-img', ['compare', '-f', 'qcow2', '-F', 'raw', `${env.imagesDir}/${id}.qcow2`, `${env.imagesDir}/${id}.raw`], { encoding: 'utf8' });
    assert.match(cmp, /Images are identical/);
  });

  it('fails an upload the cloud rejects with WORK_FAIL and leaves nothing in Glance', async () => {
    const before = (await glance.list({ properties: { nodepool_build_id: id } })).length;
    const end = await runJob(client, fn.imageUpload(id), { 'image-name': 'debian-test', provider: 'cloud-qcow2', meta: { os_hash_value: 'forbidden' } });
    assert.equal(end.type, 'fail');
    assert.match(end.message, /403|400|forbidden|reserved/i);
    assert.equal((await glance.list({ properties: { nodepool_build_id: id } })).length, before);
  });

  it('deletes: every local file goes, then both functions are de-registered', async () => {
    const end = await runJob(client, fn.imageDelete(id), '""', { raw: true });
    assert.equal(end.type, 'complete', end.message);
    assert.deepEqual(end.json, {});
    assert.deepEqual((await readdir(env.imagesDir)).filter((n) => n.startsWith(id)), []);
    await waitFor(async () => {
      const fns = (await adminWorkers(gearmand.address)).flatMap((w) => w.functions);
      return !fns.includes(fn.imageUpload(id)) && !fns.includes(fn.imageDelete(id));
    }, { timeoutMs: 5000, what: 'upload/delete functions de-registered' });
    assert.deepEqual(builder.localImages(), []);
  });
});
