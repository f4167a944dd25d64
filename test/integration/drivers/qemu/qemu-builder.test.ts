/**
 * The builder uploads to a qemu provider through the driver's image capability, as it does to
 * Glance: a fake-dib build (real qcow2 from qemu-img) lands in the provider's image-dir with its
 * properties and is deleted again; a file changed on disk since its build is refused while it
 * streams in (the builder hashes the chunks the driver hands to `onData`). Real gearmand,
 * in-process builder; no VM boots.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { GearmanClient } from '../../../../lib/gearman/client.js';
import { fn } from '../../../../lib/gearman/functions.js';
import { QemuImageService } from '../../../../lib/drivers/qemu/image-store.js';
import type { DibBuilder } from '../../../../workers/builder/dib-builder.js';
import { createBuilderEnv, fakeDiskimage, inProcessBuilder, runJob, testClient, testLogger, type BuilderEnv } from '../../../support/builder-env.js';
import { startGearmand, type GearmandHandle } from '../../../support/gearmand.js';
import { runningProcesses } from '../../../support/processes.js';

void describe('qemu driver: uploads from the builder', () => {
  let gearmand: GearmandHandle;
  let env: BuilderEnv;
  let builder: DibBuilder;
  let client: GearmanClient;
  let imageDir: string;

  before(async () => {
    gearmand = await startGearmand();
    env = await createBuilderEnv({
      gearmanPort: gearmand.port,
      diskimages: [fakeDiskimage('deb', { formats: ['qcow2'] })],
      providers: [],
    });
    imageDir = path.join(env.dir, 'vm-images');
    await env.rewrite({ providers: [{ name: 'vms', driver: 'qemu', 'image-dir': imageDir, diskimages: [{ name: 'deb', meta: { purpose: 'test' } }] }] });
    builder = inProcessBuilder(env, { uploadRetryDelayMs: 10 });
    await builder.start();
    client = await testClient(gearmand.port);
  });

  after(async () => {
    await client?.stop();
    await builder?.stop({ abortAfterMs: 5000 });
    await gearmand?.stop();
    await env?.remove();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  it('stores a build in image-dir with the upload properties', async () => {
    const id = 'deb-0000000001';
    const built = await runJob(client, fn.imageBuild('deb'), { 'image-id': id });
    assert.equal(built.type, 'complete', built.message);
    const up = await runJob(client, fn.imageUpload(id), { 'image-name': 'deb', provider: 'vms', 'upload-id': '0000000001', 'external-name': 'deb-1700000000' });
    assert.equal(up.type, 'complete', up.message);
    const externalId = String(up.json?.['external-id']);
    assert.equal(up.json?.['external-name'], 'deb-1700000000');
    const svc = new QemuImageService({ imageDir, log: testLogger() });
    const listed = await svc.list({ properties: { nodepool_provider_name: 'vms' } });
    assert.equal(listed.length, 1);
    assert.equal(listed[0]?.externalId, externalId);
    assert.equal(listed[0]?.properties.nodepool_upload_id, '0000000001');
    assert.equal(listed[0]?.properties.purpose, 'test');
    assert.ok(existsSync(svc.imagePath(externalId)));
    await svc.delete(externalId);
    assert.deepEqual(await readdir(imageDir), []);
  });

  it('fails the upload of a file changed on disk since its build, in the same pass, and keeps nothing', async () => {
    const id = 'deb-0000000002';
    const built = await runJob(client, fn.imageBuild('deb'), { 'image-id': id });
    assert.equal(built.type, 'complete', built.message);
    const file = path.join(env.imagesDir, `${id}.qcow2`);
    const bytes = await readFile(file);
    const at = bytes.length - 4096; // guest data, not qcow2 metadata: only the hash can tell
    bytes[at] = (bytes[at] ?? 0) ^ 0xff;
    await writeFile(file, bytes);
    const up = await runJob(client, fn.imageUpload(id), { 'image-name': 'deb', provider: 'vms' });
    assert.equal(up.type, 'fail');
    assert.match(up.message, /sha256/i);
    assert.deepEqual(await readdir(imageDir), []);
  });
});
