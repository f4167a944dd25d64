import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { adminWorkers } from '../../../lib/gearman/admin.js';
import { fn } from '../../../lib/gearman/functions.js';
import { LIFECYCLE_STATUS_KEY, type LifecycleStatus } from '../../../lib/status/lifecycle-status.js';
import type { BuildRecord } from '../../../lib/store/models.js';
import { FILES_DELETED } from '../../../server/image-lifecycle/local-files.js';
import { fakeDiskimage, inProcessBuilder, loopbackProvider, type RawProvider } from '../../support/builder-env.js';
import { ImageSystem } from '../../support/image-system.js';
import { runningProcesses } from '../../support/processes.js';

/** Bytes (apparent and on disk) of the files of `id` in `dir`, and their names. */
type Usage = { names: string[]; bytes: number; diskBytes: number };

async function usage(dir: string, id: string): Promise<Usage> {
  const names = (await readdir(dir)).filter((n) => n.startsWith(`${id}.`)).sort();
  let bytes = 0;
  let diskBytes = 0;
  for (const n of names) {
    const st = await stat(path.join(dir, n));
    bytes += st.size;
    diskBytes += st.blocks * 512;
  }
  return { names, bytes, diskBytes };
}

const MiB = 1024 * 1024;

// Nodepool 11's diskimage keys with effects on the builder and the upload: delete-after-upload
// and keep-formats free the builder's disk once every provider has the upload; metadata is the
// default of every upload's image properties, under the provider image's meta.
describe('diskimage delete-after-upload, keep-formats and metadata', () => {
  let sys: ImageSystem;
  let imagesDir: string;
  const diskimages = [
    // qcow2 goes once both providers have it; raw is kept (keep-formats). 12 MiB images.
    fakeDiskimage('keep', { formats: ['qcow2', 'raw'], 'delete-after-upload': true, 'keep-formats': ['raw'], metadata: { purpose: 'default', team: 'ci' } }, { FAKE_DIB_SIZE_MIB: '12' }),
    // Its only file goes once both providers have it.
    fakeDiskimage('free', { formats: ['qcow2'], 'delete-after-upload': true }, { FAKE_DIB_SIZE_MIB: '12' }),
  ];
  /** Provider `two` with its uploads paused (provider diskimage `pause`) while `paused`. */
  const providers = (paused: boolean, extra: RawProvider[] = []): RawProvider[] => {
    const two = loopbackProvider('two', ['keep', 'free']);
    return [
      loopbackProvider('one', ['keep', 'free']),
      { ...two, diskimages: (two.diskimages as Array<Record<string, unknown>>).map((d) => ({ ...d, pause: paused })) },
      ...extra,
    ];
  };
  const readyBuild = (s: { builds: BuildRecord[] }, d: string) => s.builds.find((b) => b.diskimage === d && b.state === 'ready');
  let before1: { keep: Usage; free: Usage };
  let keep: BuildRecord;
  let free: BuildRecord;

  before(async () => {
    sys = await ImageSystem.start({ diskimages, providers: providers(true) });
    const b = await sys.addBuilder('a');
    imagesDir = b.env.imagesDir;
    await sys.startServer();
  });

  after(async () => {
    await sys?.stop();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  it('keeps every local file while a provider that uses it has no ready upload (provider two paused)', async () => {
    const s = await sys.waitForState('both builds uploaded to one', (x) => ['keep', 'free'].every((d) =>
      x.uploads.some((u) => u.diskimage === d && u.provider === 'one' && u.state === 'ready')), 90_000);
    keep = readyBuild(s, 'keep')!;
    free = readyBuild(s, 'free')!;
    await sys.passes(3);
    before1 = { keep: await usage(imagesDir, keep.id), free: await usage(imagesDir, free.id) };
    const files = (id: string, formats: string[]) => [`${id}.d`, `${id}.json`, ...formats.flatMap((f) => [`${id}.${f}`, `${id}.${f}.md5`, `${id}.${f}.sha256`])];
    assert.deepEqual(before1.keep.names, files(keep.id, ['qcow2', 'raw']));
    assert.deepEqual(before1.free.names, files(free.id, ['qcow2']));
    const now = await sys.store.getBuild(keep.id);
    assert.deepEqual(now?.files.map((f) => f.format).sort(), ['qcow2', 'raw']);
    assert.equal(now?.reason, null);
  });

  it('uploads with the diskimage metadata under the provider image meta, then nodepool_build_id and nodepool_upload_id', async () => {
    const uploads = await sys.store.listUploads();
    const up = uploads.find((u) => u.buildId === keep.id && u.provider === 'one' && u.state === 'ready')!;
    const [image] = (await sys.glanceImages({ nodepool_build_id: keep.id, nodepool_provider_name: 'one' }));
    assert.ok(image, 'the upload is in Glance');
    assert.equal(image.externalId, up.externalId);
    const props = image.properties ?? {};
    // `purpose` is in both: the provider's meta (loopbackProvider: test) wins over the diskimage's (default).
    assert.equal(props.purpose, 'test');
    assert.equal(props.team, 'ci');
    assert.equal(props.nodepool_build_id, keep.id);
    assert.equal(props.nodepool_upload_id, up.id);
    const [plain] = await sys.glanceImages({ nodepool_build_id: free.id, nodepool_provider_name: 'one' });
    assert.equal(plain?.properties?.team, undefined, 'a diskimage without metadata adds none');
    assert.equal(plain?.properties?.purpose, 'test');
  });

  it('deletes the files (and checksums) every provider has uploaded once the last one has it, keeps keep-formats, and frees the disk', async () => {
    await sys.reconfigure({ providers: providers(false) });
    const s = await sys.waitForState('local files deleted after upload', (x) =>
      ['keep', 'free'].every((d) => readyBuild(x, d)?.reason?.startsWith(FILES_DELETED)), 90_000);
    const k = readyBuild(s, 'keep')!;
    const f = readyBuild(s, 'free')!;
    assert.deepEqual(k.files.map((x) => x.format), ['raw'], 'the record lists what remains');
    assert.deepEqual(f.files, []);
    assert.deepEqual(k.formats.sort(), ['qcow2', 'raw'], 'formats stay what was built');
    const after1 = { keep: await usage(imagesDir, keep.id), free: await usage(imagesDir, free.id) };
    assert.deepEqual(after1.keep.names, [`${keep.id}.d`, `${keep.id}.json`, `${keep.id}.raw`, `${keep.id}.raw.md5`, `${keep.id}.raw.sha256`]);
    assert.deepEqual(after1.free.names, [`${free.id}.d`, `${free.id}.json`]);
    const freed = (before1.keep.bytes - after1.keep.bytes) + (before1.free.bytes - after1.free.bytes);
    const freedDisk = (before1.keep.diskBytes - after1.keep.diskBytes) + (before1.free.diskBytes - after1.free.diskBytes);
    // The two qcow2 files as the builds recorded them (12 MiB virtual, 1 MiB of data each), and their checksums.
    const qcow2 = [keep, free].reduce((n, b) => n + (b.files.find((x) => x.format === 'qcow2')?.size ?? 0), 0);
    assert.ok(qcow2 > MiB, `recorded qcow2 sizes ${qcow2}`);
    assert.ok(freed > qcow2 && freed < qcow2 + 1024, `freed ${freed} bytes, the qcow2 files were ${qcow2}`);
    assert.ok(freedDisk > MiB, `freed ${freedDisk} bytes on disk`);
    console.log(`# disk freed by delete-after-upload: ${freed} bytes apparent (${(freed / MiB).toFixed(1)} MiB), ${freedDisk} bytes of blocks (${(freedDisk / MiB).toFixed(1)} MiB)`);
  });

  it('keeps the builds ready and advertised: not lost, not rebuilt, not deleted as strays, uploads kept', async () => {
    await sys.passes(6);
    const builds = await sys.store.listBuilds();
    assert.deepEqual(builds.map((b) => [b.id, b.state]).sort(), [[free.id, 'ready'], [keep.id, 'ready']].sort());
    const workers = await adminWorkers({ host: '127.0.0.1', port: sys.gearmand.port });
    const fns = workers.flatMap((w) => w.functions);
    for (const id of [keep.id, free.id]) assert.ok(fns.includes(fn.imageUpload(id)), `${id} still advertised`);
    const uploads = (await sys.store.listUploads()).filter((u) => u.state === 'ready');
    assert.equal(uploads.length, 4);
  });

  it('uploads to a new provider from a kept format (converted), and says why it cannot from a build whose files are gone', async () => {
    await sys.reconfigure({ providers: providers(false, [loopbackProvider('three', ['keep', 'free'])]) });
    await sys.waitForState('keep uploaded to three (qcow2 converted from the kept raw)', (x) =>
      x.uploads.some((u) => u.buildId === keep.id && u.provider === 'three' && u.state === 'ready'), 90_000);
    await sys.passes(4);
    assert.deepEqual((await sys.store.listUploads()).filter((u) => u.diskimage === 'free' && u.provider === 'three'), [], 'no upload attempted');
    const status = (await sys.store.getStatus<LifecycleStatus>(LIFECYCLE_STATUS_KEY))?.value;
    const target = status?.targets.find((t) => t.diskimage === 'free' && t.provider === 'three');
    assert.match(target?.waiting ?? '', new RegExp(`^build ${free.id} has no local qcow2 file .*delete-after-upload.*nodepool image-build free`));
    assert.equal(target?.failures, 0);
    const b = await sys.store.getBuild(free.id);
    assert.equal(b?.state, 'ready');
  });

  it('keeps a build whose files are all gone after a builder restart: lost while it is down, found again as it was', async () => {
    const held = sys.builders.get('a')!;
    await held.inProcess!.stop({ abortAfterMs: 1000 });
    await sys.waitForBuild('free lost while its builder is down', (b) => b.id === free.id && b.state === 'lost', 30_000);
    const again = inProcessBuilder(held.env, { hostname: 'builder-a' });
    sys.builders.set('a', { ...held, inProcess: again });
    await again.start();
    assert.ok(again.localImages().includes(free.id), 'the restarted builder still holds the build');
    const found = await sys.waitForBuild('free found again', (b) => b.id === free.id && b.state === 'ready', 30_000);
    assert.match(found.reason ?? '', new RegExp(`^${FILES_DELETED}`), 'the note on its deleted files is kept');
    assert.deepEqual(found.files, []);
    await sys.passes(4);
    assert.deepEqual((await sys.store.listUploads()).filter((u) => u.diskimage === 'free' && u.provider === 'three'), [], 'still no upload attempted');
  });
});
