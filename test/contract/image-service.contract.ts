/**
 * The image-service contract: what lib/drivers/contract/image-service.ts promises, checked against every
 * driver that takes uploaded images (openstack: Glance on the loopback Keystone + Glance; qemu:
 * its image-dir), each run from its own test file. The fixture builds the service the way a
 * process does (lib/drivers/core/driver-hosts.ts: the driver's host access, then its image service),
 * never with a driver's own constructor.
 *
 * Promised: an upload is streamed (chunks to `onData` in order from offset 0, never the file
 * whole in one piece) with progress up to the file's size, and the bytes sent hash as the file
 * does (as does the cloud's own hash, when it gives one); the image is listed with its name and
 * properties and found by them; delete removes it and a second delete, or one of an image that
 * never existed, is no error; an aborted upload rejects with AbortedError, and one whose
 * `onData` throws fails with that error, leaving nothing behind either way; an aborted list
 * rejects.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdtemp, open, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import type { ImageService, UploadRequest } from '../../lib/drivers/contract/image-service.js';
import { AbortedError } from '../../lib/errors.js';

/** What a driver's image-service fixture provides. */
export interface ImageServiceFixture {
  /** Starts what the service talks to and builds it through the driver registry. */
  setUp(): Promise<ImageService>;
  /** Stops everything setUp started. */
  tearDown(): Promise<void>;
  /**
   * Every file of the service's own storage, for a storage only this suite writes to (a qemu
   * image-dir): nothing may be added by a failed or aborted upload. Absent for a shared cloud.
   */
  storageFiles?(): Promise<string[]>;
  /** An id the service could give that names no image (a random one in its own form). */
  missingId(): string;
}

const run = promisify(execFile);

/** A qcow2 of `mib` MiB of random data (qemu-img converts it, so it is a real image of that size). */
async function randomQcow2(dir: string, mib: number): Promise<string> {
  const raw = path.join(dir, 'random.raw');
  const fh = await open(raw, 'w');
  try {
    for (let i = 0; i < mib; i++) await fh.write(randomBytes(1024 * 1024));
  } finally {
    await fh.close();
  }
  const file = path.join(dir, 'random.qcow2');
  await run('qemu-img', ['convert', '-q', '-f', 'raw', '-O', 'qcow2', raw, file]);
  await rm(raw);
  return file;
}

async function digestOf(file: string, algo: string): Promise<string> {
  const h = createHash(algo);
  for await (const chunk of createReadStream(file)) h.update(chunk as Buffer);
  return h.digest('hex');
}

/** Whether `err` is `want` or has it somewhere down its `cause` chain (a driver may wrap it). */
function causedBy(err: unknown, want: Error): boolean {
  for (let e: unknown = err; e instanceof Error; e = e.cause) if (e === want) return true;
  return false;
}

/** Registers the image-service contract suite for one driver. */
export function imageServiceContract(name: string, fixture: ImageServiceFixture): void {
  void describe(`image-service contract: ${name}`, () => {
    let service: ImageService;
    let dir: string;
    let file: string;
    let size: number;
    const made = new Set<string>();
    /** Properties only this run's images carry (the cloud may be shared with other test files). */
    const tag = (): Record<string, string> => ({ nodepool_build_id: randomUUID(), nodepool_upload_id: randomUUID(), nodepool_provider_name: 'contract' });
    const request = (props: Record<string, string>, extra: Partial<UploadRequest> = {}): UploadRequest =>
      ({ name: `contract-${randomUUID().slice(0, 8)}`, format: 'qcow2', filePath: file, properties: props, ...extra });

    before(async () => {
      dir = await mkdtemp(path.join(os.tmpdir(), 'image-service-contract-'));
      file = await randomQcow2(dir, 8);
      size = (await stat(file)).size;
      service = await fixture.setUp();
    });
    after(async () => {
      for (const id of made) await service?.delete(id);
      await fixture.tearDown();
      await rm(dir, { recursive: true, force: true });
    });

    /** Asserts the upload left nothing: no image carries its tag, and the storage holds what it held before. */
    async function assertNothingLeft(props: Record<string, string>, filesBefore: string[] | undefined): Promise<void> {
      assert.deepEqual(await service.list({ properties: props }), [], 'no image carries the upload\'s properties');
      if (filesBefore) assert.deepEqual(await fixture.storageFiles?.(), filesBefore, 'the storage holds no new file');
    }

    it('uploads streamed, with progress to the file size, bytes and cloud hash matching the file', async () => {
      const props = tag();
      const progress: Array<[number, number]> = [];
      const chunks: Array<[number, number]> = [];
      const sent = createHash('sha256');
      const req = request(props, {
        onProgress: (s, t) => progress.push([s, t]),
        onData: (chunk, offset) => { chunks.push([offset, chunk.length]); sent.update(chunk); },
      });
      const up = await service.upload(req);
      made.add(up.externalId);
      assert.ok(up.externalId);
      assert.equal(up.externalName, req.name);
      assert.ok(progress.length > 0, 'progress reported');
      assert.deepEqual(progress.at(-1), [size, size]);
      for (let i = 1; i < progress.length; i++) assert.ok((progress[i]?.[0] ?? 0) >= (progress[i - 1]?.[0] ?? 0), 'progress never goes back');
      // Streamed: chunks in order from offset 0, none the whole file; a driver that sends again starts at 0.
      const lastPass = chunks.slice(chunks.map(([o]) => o).lastIndexOf(0));
      assert.ok(lastPass.length > 1, `the file is sent in pieces (${lastPass.length})`);
      let expected = 0;
      for (const [offset, length] of lastPass) {
        assert.equal(offset, expected, 'chunks in order, none missing');
        expected += length;
      }
      assert.equal(expected, size);
      if (chunks.length === lastPass.length) assert.equal(sent.digest('hex'), await digestOf(file, 'sha256'), 'the bytes sent are the file');
      if (up.cloudHash) assert.equal(up.cloudHash.value, await digestOf(file, up.cloudHash.algo), `${up.cloudHash.by ?? name}'s ${up.cloudHash.algo}`);
      for (const algo of service.cloudHashAlgos?.() ?? []) assert.ok(createHash(algo), `${algo} is a hash Node computes`);
    });

    it('lists an image with its name and properties, and finds it by them', async () => {
      const props = tag();
      const req = request(props);
      const up = await service.upload(req);
      made.add(up.externalId);
      const all = await service.list();
      const listed = all.find((i) => i.externalId === up.externalId);
      assert.ok(listed, 'listed without a filter');
      assert.equal(listed.name, req.name);
      for (const [k, v] of Object.entries(props)) assert.equal(listed.properties[k], v, `property ${k}`);
      assert.deepEqual((await service.list({ properties: props })).map((i) => i.externalId), [up.externalId]);
      assert.deepEqual(await service.list({ properties: { ...props, nodepool_upload_id: randomUUID() } }), [], 'a property that differs excludes it');
    });

    it('deletes an image; deleting it again, or an image that never existed, is no error', async () => {
      const props = tag();
      const up = await service.upload(request(props));
      made.add(up.externalId);
      await service.delete(up.externalId);
      assert.deepEqual(await service.list({ properties: props }), [], 'gone from the list');
      assert.ok(!(await service.list()).some((i) => i.externalId === up.externalId));
      await service.delete(up.externalId);
      made.delete(up.externalId);
      await service.delete(fixture.missingId());
    });

    it('aborts an upload: AbortedError, nothing left behind', async () => {
      const props = tag();
      const files = await fixture.storageFiles?.();
      const abort = new AbortController();
      const upload = service.upload(request(props, { signal: abort.signal, onProgress: (s) => { if (s > 0) abort.abort(new Error('contract abort')); } }));
      await assert.rejects(upload, AbortedError);
      await assertNothingLeft(props, files);
    });

    it('fails an upload whose onData throws with that error, nothing left behind', async () => {
      const props = tag();
      const files = await fixture.storageFiles?.();
      const changed = new Error('the file changed on disk');
      const upload = service.upload(request(props, { onData: (_c, offset) => { if (offset > 0) throw changed; } }));
      await assert.rejects(upload, (err: unknown) => causedBy(err, changed));
      await assertNothingLeft(props, files);
    });

    it('rejects a list whose signal is aborted', async () => {
      const abort = new AbortController();
      abort.abort(new Error('caller timeout'));
      await assert.rejects(service.list({}, abort.signal));
    });
  });
}
