import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { createReadStream, existsSync } from 'node:fs';
import { mkdtemp, open, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { loadCloud } from '../../../lib/drivers/openstack/clouds-yaml.js';
import { GlanceClient } from '../../../lib/drivers/openstack/glance.js';
import { OpenStackImageService } from '../../../lib/drivers/openstack/glance-image-service.js';
import { AbortedError, CloudError } from '../../../lib/errors.js';
import { waitFor } from '../../../lib/lifecycle.js';
import { useLoopbackCloud, type LoopbackCloud } from '../../support/openstack.js';
import { runningProcesses } from '../../support/processes.js';

async function md5(file: string): Promise<string> {
  const h = createHash('md5');
  for await (const chunk of createReadStream(file)) h.update(chunk as Buffer);
  return h.digest('hex');
}

/** `mib` MiB of random data plus `extra` bytes, written in 1 MiB pieces. */
async function randomFile(file: string, mib: number, extra = 0): Promise<string> {
  const fh = await open(file, 'w');
  try {
    for (let i = 0; i < mib; i++) await fh.write(randomBytes(1024 * 1024));
    if (extra) await fh.write(randomBytes(extra));
  } finally {
    await fh.close();
  }
  return file;
}

describe('Glance v2 uploads against the loopback cloud', () => {
  let cloud: LoopbackCloud;
  let svc: OpenStackImageService;
  let tmp: string;
  const mine = new Set<string>();
  /** Properties that tag this test's images: shared clouds serve several test files at once. */
  const tag = (): { nodepool_build_id: string; nodepool_upload_id: string } => ({ nodepool_build_id: randomUUID(), nodepool_upload_id: randomUUID() });

  before(async () => {
    cloud = await useLoopbackCloud();
    svc = await OpenStackImageService.create(await loadCloud(cloud.cloudName, { path: cloud.cloudsYamlPath }), undefined,
      { glance: { pollIntervalMs: 100 } });
    tmp = await mkdtemp(path.join(os.tmpdir(), 'nodepool-glance-test-'));
  });

  after(async () => {
    for (const id of mine) await svc?.delete(id);
    await cloud?.stop();
    await rm(tmp, { recursive: true, force: true });
    assert.deepEqual(runningProcesses().map((p) => p.name), [], 'no tracked process left running');
  });

  /** Asserts that nothing tagged `props` is in Glance and no store file of `id` is on disk. */
  async function assertNothingLeft(props: Record<string, string>, id?: string): Promise<void> {
    assert.deepEqual(await svc.list({ properties: props }), []);
    if (id) await waitFor(() => !existsSync(path.join(cloud.imagesDir, id)), { timeoutMs: 10_000, what: `store file of ${id} removed` });
  }

  it('uploads a qcow2 image: active, md5 checksum and properties as sent, found by property, then deleted', async () => {
    const file = path.join(tmp, 'tiny.qcow2');
    await promisify(execFile)('qemu-img', ['create', '-q', '-f', 'qcow2', file, '64M']);
    const props = { ...tag(), purpose: 'ci' };
    const progress: number[] = [];
    const up = await svc.upload({ name: `it-qcow2-${randomUUID()}`, format: 'qcow2', filePath: file, properties: props, onProgress: (s) => progress.push(s) });
    mine.add(up.externalId);
    const { size } = await stat(file);
    assert.equal(progress.at(-1), size);
    const img = await svc.glance.getImage(up.externalId);
    assert.equal(img?.status, 'active');
    assert.equal(img?.name, up.externalName);
    assert.equal(img?.diskFormat, 'qcow2');
    assert.equal(img?.containerFormat, 'bare');
    assert.equal(img?.visibility, 'private');
    assert.equal(img?.size, size);
    assert.equal(img?.checksum, await md5(file));
    assert.deepEqual(img?.properties, props);
    assert.ok(existsSync(path.join(cloud.imagesDir, up.externalId)), 'data in the file store');

    const listed = await svc.list({ properties: { nodepool_build_id: props.nodepool_build_id } });
    assert.deepEqual(listed, [{ externalId: up.externalId, name: up.externalName, status: 'active', properties: props }]);

    await svc.delete(up.externalId);
    mine.delete(up.externalId);
    assert.equal(await svc.glance.getImage(up.externalId), undefined);
    await assertNothingLeft(props, up.externalId);
    await svc.delete(up.externalId); // already gone: fine
  });

  it('uploads a raw file that is not a multiple of the chunk size, byte for byte', async () => {
    const file = await randomFile(path.join(tmp, 'odd.raw'), 5, 12_345);
    const props = tag();
    const up = await svc.glance.uploadImage({ name: 'it-raw', diskFormat: 'raw', properties: props, filePath: file });
    mine.add(up.id);
    assert.equal(up.status, 'active');
    assert.equal(up.size, 5 * 1024 * 1024 + 12_345);
    assert.equal(up.checksum, await md5(file));
    assert.equal(await md5(path.join(cloud.imagesDir, up.id)), up.checksum, 'the store holds exactly our bytes');
    await svc.delete(up.id);
    mine.delete(up.id);
    await assertNothingLeft(props, up.id);
  });

  it('uploads a vhd as disk format vhd', async () => {
    const file = await randomFile(path.join(tmp, 'x.vhd'), 1);
    const up = await svc.upload({ name: 'it-vhd', format: 'vhd', filePath: file, properties: tag() });
    mine.add(up.externalId);
    assert.equal((await svc.glance.getImage(up.externalId))?.diskFormat, 'vhd');
  });

  it('leaves no image behind when the upload is aborted midway', async () => {
    const file = await randomFile(path.join(tmp, 'abort.raw'), 64);
    const props = tag();
    const ac = new AbortController();
    let sentAtAbort = 0;
    await assert.rejects(
      svc.upload({
        name: 'it-abort', format: 'raw', filePath: file, properties: props, signal: ac.signal,
        onProgress: (sent) => {
          if (!sentAtAbort) {
            sentAtAbort = sent;
            ac.abort(new Error('builder stopping'));
          }
        },
      }),
      (err: unknown) => {
        assert.ok(err instanceof AbortedError, String(err));
        assert.equal(err.message, 'upload of image it-abort aborted');
        assert.equal((err.cause as Error).message, 'builder stopping');
        return true;
      },
    );
    assert.ok(sentAtAbort > 0 && sentAtAbort < 64 * 1024 * 1024, `aborted midway (${sentAtAbort} bytes sent)`);
    await assertNothingLeft(props);
    await waitFor(async () => (await svc.glance.listImages({ name: 'it-abort' })).every((i) => i.properties.nodepool_build_id !== props.nodepool_build_id),
      { timeoutMs: 5000, what: 'no it-abort image' });
  });

  it('does not create anything when the signal is already aborted', async () => {
    const file = await randomFile(path.join(tmp, 'pre.raw'), 1);
    const props = tag();
    await assert.rejects(svc.upload({ name: 'it-pre', format: 'raw', filePath: file, properties: props, signal: AbortSignal.abort() }), AbortedError);
    await assertNothingLeft(props);
  });

  it('rejects a bad disk format with a CloudError and leaves no image', async () => {
    const file = await randomFile(path.join(tmp, 'bad.raw'), 1);
    const props = tag();
    await assert.rejects(svc.upload({ name: 'it-bad', format: 'bogus', filePath: file, properties: props }), (err: unknown) => {
      assert.ok(err instanceof CloudError, String(err));
      assert.equal(err.status, 400);
      assert.match(err.message, /^Glance POST \/v2\/images failed with 400; cloud said: Provided object does not match schema 'image': 'bogus' is not one of \[/);
      assert.ok(!err.message.includes('\n'), 'one line');
      return true;
    });
    await assertNothingLeft(props);
  });

  it('refuses a property name Glance reserves, before creating anything', async () => {
    const file = await randomFile(path.join(tmp, 'reserved.raw'), 1);
    const props = { ...tag(), disk_format: 'raw' };
    await assert.rejects(svc.upload({ name: 'it-reserved', format: 'raw', filePath: file, properties: props }),
      (err: unknown) => err instanceof CloudError && err.message === "image property 'disk_format' is reserved by Glance");
    await assertNothingLeft({ nodepool_build_id: props.nodepool_build_id });
  });

  it('fails with a CloudError and cleans up when the image is deleted during the upload', async () => {
    const file = await randomFile(path.join(tmp, 'race.raw'), 128);
    const props = tag();
    let deleting: Promise<void> | undefined;
    await assert.rejects(
      svc.upload({
        name: 'it-deleted', format: 'raw', filePath: file, properties: props,
        onProgress: () => {
          deleting ??= svc.list({ properties: props }).then(async ([img]) => img && svc.delete(img.externalId));
        },
      }),
      (err: unknown) => {
        assert.ok(err instanceof CloudError, String(err));
        assert.ok(!(err instanceof AbortedError));
        return true;
      },
    );
    await deleting;
    await assertNothingLeft(props);
  });

  it('lists across pages by following next links', async () => {
    const glance = new GlanceClient(svc.session, { listPageSize: 2 });
    const props = tag();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await svc.session.request(`${glance.baseUrl}/v2/images`, {
        method: 'POST', json: { name: `it-page-${i}`, disk_format: 'raw', container_format: 'bare', ...props },
      });
      const id = (JSON.parse(res.body) as { id: string }).id;
      ids.push(id);
      mine.add(id);
    }
    const listed = await glance.listImages({ properties: props });
    assert.deepEqual(listed.map((i) => i.id).sort(), [...ids].sort());
    assert.ok(listed.every((i) => i.status === 'queued'));
    assert.deepEqual((await glance.listImages({ properties: props, name: 'it-page-3' })).map((i) => i.id), [ids[3]]);
    for (const id of ids) {
      await glance.deleteImage(id);
      mine.delete(id);
    }
    await assertNothingLeft(props);
  });

  it('fails with a CloudError when the file cannot be read, before creating anything', async () => {
    await assert.rejects(svc.upload({ name: 'it-missing', format: 'raw', filePath: path.join(tmp, 'missing.raw'), properties: tag() }),
      /ENOENT/);
  });
});
