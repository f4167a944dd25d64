import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { appendFile, mkdtemp, open, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ImageService } from '../../../lib/drivers/contract/image-service.js';
import type { ImageServiceFactory } from '../../../lib/drivers/core/driver-hosts.js';
import type { OpenStackImageService } from '../../../lib/drivers/openstack/glance-image-service.js';
import { CloudError } from '../../../lib/errors.js';
import { fn } from '../../../lib/gearman/functions.js';
import type { GearmanClient } from '../../../lib/gearman/client.js';
import { createRootLogger, type Logger } from '../../../lib/log.js';
import { DibBuilder } from '../../../workers/builder/dib-builder.js';
import { compareCloudHash, UploadDigest } from '../../../workers/builder/upload-digest.js';
import { startGearmand, type GearmandHandle } from '../../support/gearmand.js';
import { GlanceFaultProxy } from '../../support/glance-fault-proxy.js';
import { testImageServices } from '../../support/image-services.js';
import { useLoopbackCloud, type LoopbackCloud } from '../../support/openstack.js';
import { runningProcesses } from '../../support/processes.js';
import {
  createBuilderEnv, fakeDiskimage, glanceAdmin, loopbackProvider, runJob, testClient, type BuilderEnv,
} from '../../support/builder-env.js';

async function digest(algo: string, file: string): Promise<string> {
  const h = createHash(algo);
  await pipeline(createReadStream(file), h);
  return h.digest('hex');
}

/** A JSON logger whose lines are kept for assertions. */
function recordingLogger(): { log: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new PassThrough();
  let rest = '';
  stream.on('data', (d: Buffer) => {
    const parts = (rest + d.toString('utf8')).split('\n');
    rest = parts.pop() ?? '';
    for (const p of parts) if (p.trim()) lines.push(JSON.parse(p) as Record<string, unknown>);
  });
  return { log: createRootLogger({ level: 'info', format: 'json', stream }), lines };
}

/**
 * The image services of the test, as other drivers may be: `untapped-*` providers never call
 * the tap (a driver that reads the file itself), `wrapping-*` ones turn every upload error into
 * a CloudError (which the builder would otherwise retry).
 */
function otherDrivers(inner: ImageServiceFactory): ImageServiceFactory {
  return async (provider) => {
    const svc = await inner(provider);
    if (provider.name.startsWith('untapped-')) {
      const plain: ImageService = {
        upload: ({ onData: _ignored, ...req }) => svc.upload(req),
        delete: (id) => svc.delete(id),
        list: (filter, signal) => svc.list(filter, signal),
      };
      return plain;
    }
    if (provider.name.startsWith('wrapping-')) {
      const wrapping: ImageService = {
        upload: (req) => svc.upload(req).catch((err: unknown) => {
          throw new CloudError(`upload of image ${req.name} failed: ${(err as Error).message}`, { cause: err });
        }),
        delete: (id) => svc.delete(id),
        list: (filter, signal) => svc.list(filter, signal),
      };
      return wrapping;
    }
    return svc;
  };
}

describe('builder: verified bytes (sha256 of the bytes sent, the cloud\'s hash) against Glance behind a proxy', () => {
  let gearmand: GearmandHandle;
  let cloud: LoopbackCloud;
  let proxy: GlanceFaultProxy;
  let proxyDir: string | undefined;
  let env: BuilderEnv;
  let builder: DibBuilder;
  let client: GearmanClient;
  let glance: OpenStackImageService;
  const logged = recordingLogger();
  const ids = ['vb-0000000001', 'vb-0000000002', 'vb-0000000003', 'vb-0000000004'];
  const file = (id: string): string => `${env.imagesDir}/${id}.qcow2`;

  before(async () => {
    [gearmand, cloud] = await Promise.all([startGearmand(), useLoopbackCloud()]);
    proxyDir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-verified-bytes-'));
    proxy = await GlanceFaultProxy.start(cloud, proxyDir);
    env = await createBuilderEnv({
      gearmanPort: gearmand.port,
      cloudsFile: proxy.cloudsYamlPath,
      diskimages: [fakeDiskimage('vb', { formats: ['qcow2'] })],
      providers: ['cloud-qcow2', 'untapped-qcow2', 'wrapping-qcow2'].map((name) => loopbackProvider(name, ['vb'])),
    });
    builder = new DibBuilder({
      config: env.config,
      log: logged.log,
      hostname: 'builder-a',
      uploadWorkers: 2,
      env: { PATH: process.env.PATH, HOME: process.env.HOME },
      reconnect: { initialMs: 50, maxMs: 500 },
      killGraceMs: 2000,
      uploadRetryDelayMs: 100,
      imageServices: otherDrivers(testImageServices(() => env.config.cloudsFile, logged.log)),
    });
    await builder.start();
    client = await testClient(gearmand.port);
    glance = await glanceAdmin(cloud);
    for (const id of ids) {
      const built = await runJob(client, fn.imageBuild('vb'), { 'image-id': id }, { unique: id });
      assert.equal(built.type, 'complete', built.message);
    }
  });

  after(async () => {
    for (const id of ids) for (const image of await glance?.list({ properties: { nodepool_build_id: id } }) ?? []) await glance.delete(image.externalId);
    glance?.close();
    await client?.stop();
    await builder?.stop({ abortAfterMs: 1000 });
    await proxy?.stop();
    await gearmand?.stop();
    await cloud?.stop();
    await env?.remove();
    if (proxyDir) await rm(proxyDir, { recursive: true, force: true });
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  const upload = (id: string, provider = 'cloud-qcow2'): ReturnType<typeof runJob> =>
    runJob(client, fn.imageUpload(id), { 'image-name': 'vb', provider });
  const completeLine = (externalId: unknown): Record<string, unknown> | undefined =>
    logged.lines.find((l) => l.message === 'upload complete' && l.externalId === externalId);

  it('verifies the normal upload: the recorded sha256 and Glance\'s sha512 of the bytes sent, both in the log line', async () => {
    const end = await upload(ids[0] as string);
    assert.equal(end.type, 'complete', end.message);
    const line = completeLine(end.json?.['external-id']);
    const sidecar = JSON.parse(await readFile(`${env.imagesDir}/${ids[0]}.json`, 'utf8')) as { files: Array<{ sha256: string }> };
    assert.equal(line?.sha256, sidecar.files[0]?.sha256);
    assert.equal(line?.sha256, await digest('sha256', file(ids[0] as string)));
    assert.equal(line?.cloudHash, `sha512:${await digest('sha512', file(ids[0] as string))}`);
    assert.equal(line?.hashVerified, true);
    assert.equal(proxy.uploads.at(-1)?.outcome, 'forwarded');
  });

  it('fails the upload when Glance\'s hash differs from the bytes sent (one byte altered in flight) and deletes the image', async () => {
    const seen = proxy.uploads.length;
    proxy.fault = { kind: 'flip', atByte: 70_000, times: 1 };
    const end = await upload(ids[0] as string);
    assert.equal(end.type, 'fail', end.message);
    const sha512 = await digest('sha512', file(ids[0] as string));
    const m = /^Glance's sha512 of image (\S+) is ([0-9a-f]{128}), the bytes sent hash to ([0-9a-f]{128}); the image was deleted$/.exec(end.message);
    assert.ok(m, end.message);
    assert.notEqual(m[2], sha512);
    assert.equal(m[3], sha512);
    // One attempt (a mismatch is not retried within the job), altered by the proxy, and gone from Glance.
    assert.deepEqual(proxy.uploads.slice(seen).map((u) => [u.imageId, u.outcome]), [[m[1], 'altered']]);
    assert.equal(await glance.glance.getImage(m[1] as string), undefined);
    assert.ok((await glance.list({ properties: { nodepool_build_id: ids[0] as string } })).every((i) => i.externalId !== m[1]));
  });

  /** Inverts the lowest bit of the byte at 4096 of `id`'s file (same size); returns its sha256 from before. */
  async function changeOneByte(id: string): Promise<string> {
    const recorded = await digest('sha256', file(id));
    const fh = await open(file(id), 'r+');
    try {
      const b = Buffer.alloc(1);
      await fh.read(b, 0, 1, 4096);
      b[0] = (b[0] as number) ^ 0x01;
      await fh.write(b, 0, 1, 4096);
    } finally {
      await fh.close();
    }
    return recorded;
  }

  it('refuses a file changed on disk since it was built (same size) and removes the image it had created', async () => {
    const id = ids[1] as string;
    const recorded = await changeOneByte(id);
    const seen = proxy.uploads.length;
    const end = await upload(id);
    assert.equal(end.type, 'fail', end.message);
    assert.match(end.message, new RegExp(`^${file(id)} changed on disk since it was built: the bytes read for the upload hash to sha256 ${await digest('sha256', file(id))}, the build recorded ${recorded}; upload refused$`));
    const tried = proxy.uploads.slice(seen);
    assert.equal(tried.length, 1, 'one upload, not retried');
    // Refused at the last byte, before it was sent: Glance never had the whole file, and the image is gone.
    assert.ok((tried[0]?.bytes ?? 0) < (await readFile(file(id))).length, `proxy saw ${tried[0]?.bytes} bytes`);
    assert.equal(await glance.glance.getImage(tried[0]?.imageId as string), undefined);
    assert.deepEqual(await glance.list({ properties: { nodepool_build_id: id } }), []);
  });

  it('refuses a changed file once, whatever error a driver wraps the refusal in', async () => {
    const id = ids[3] as string;
    const recorded = await changeOneByte(id);
    const seen = proxy.uploads.length;
    const end = await upload(id, 'wrapping-qcow2');
    assert.equal(end.type, 'fail', end.message);
    assert.equal(end.message, `${file(id)} changed on disk since it was built: the bytes read for the upload hash to sha256 ${await digest('sha256', file(id))}, the build recorded ${recorded}; upload refused`);
    assert.equal(proxy.uploads.length - seen, 1, 'not retried as the CloudError the driver made of it');
    assert.deepEqual(await glance.list({ properties: { nodepool_build_id: id } }), []);
  });

  it('refuses a file whose size changed before the upload starts, creating nothing in the cloud', async () => {
    const id = ids[2] as string;
    const size = (await readFile(file(id))).length;
    await appendFile(file(id), Buffer.alloc(512));
    const seen = proxy.uploads.length;
    const end = await upload(id);
    assert.equal(end.type, 'fail', end.message);
    assert.equal(end.message, `${file(id)} changed on disk since it was built: it has ${size + 512} bytes, the build recorded ${size}; upload refused`);
    assert.equal(proxy.uploads.length, seen);
    assert.deepEqual(await glance.list({ properties: { nodepool_build_id: id } }), []);
  });

  it('verifies a driver that does not pass its bytes to the builder (the file is hashed after the upload), saying so once', async () => {
    const id = ids[0] as string;
    for (let round = 0; round < 2; round++) {
      const end = await upload(id, 'untapped-qcow2');
      assert.equal(end.type, 'complete', end.message);
      assert.equal(completeLine(end.json?.['external-id'])?.hashVerified, true);
    }
    const said = logged.lines.filter((l) => String(l.message).startsWith('the driver does not pass the bytes it sends'));
    assert.deepEqual(said.map((l) => l.provider), ['untapped-qcow2']);
  });
});

describe('UploadDigest and compareCloudHash', () => {
  const data = Buffer.from('verified bytes '.repeat(1000));
  const sha = (algo: string, b: Buffer): string => createHash(algo).update(b).digest('hex');
  const recorded = { file: '/images/x.raw', size: data.length, sha256: sha('sha256', data) };

  it('hashes chunks in order, starts again at offset 0 (a resent body), and checks the sha256 at the last byte', () => {
    const d = new UploadDigest(recorded, ['SHA512', 'sha3_256', 'no-such-hash']);
    assert.deepEqual(d.algos, ['sha256', 'sha512', 'sha3-256']);
    d.tap(data.subarray(0, 100), 0);
    d.tap(data.subarray(0, 4000), 0);
    d.tap(data.subarray(4000), 4000);
    d.check();
    assert.equal(d.value('sha512'), sha('sha512', data));
    assert.equal(d.value('sha3_256'), sha('sha3-256', data));
    assert.equal(d.value('md5'), undefined);
    assert.deepEqual(compareCloudHash({ algo: 'SHA512', value: sha('sha512', data).toUpperCase() }, d), { kind: 'match', algo: 'sha512', value: sha('sha512', data) });
    assert.equal(compareCloudHash({ algo: 'md5', value: sha('md5', data) }, d).kind, 'not-computed');
    assert.deepEqual(compareCloudHash(undefined, d), { kind: 'none' });
    assert.equal(compareCloudHash({ algo: 'sha512', value: '00' }, d).kind, 'mismatch');
  });

  it('throws at the last byte of a changed file, for a file that grew, and for chunks out of order', () => {
    const changed = Buffer.from(data);
    changed[10] = 0;
    assert.throws(() => new UploadDigest(recorded).tap(changed, 0), { name: 'ImageFileChangedError', message: /changed on disk since it was built/ });
    assert.throws(() => new UploadDigest(recorded).tap(Buffer.concat([data, Buffer.alloc(1)]), 0), { name: 'ImageFileChangedError', message: /grew past/ });
    const d = new UploadDigest(recorded);
    d.tap(data.subarray(0, 10), 0);
    assert.throws(() => d.tap(data.subarray(20, 30), 20), /out of order/);
    assert.throws(() => new UploadDigest(recorded).check(), /0 bytes were read of the/);
  });
});
