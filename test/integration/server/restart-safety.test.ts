import { after, afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { waitFor } from '../../../lib/lifecycle.js';
import { fakeDiskimage, loopbackProvider } from '../../support/builder-env.js';
import { ImageSystem } from '../../support/image-system.js';
import { runningProcesses } from '../../support/processes.js';

const providers = [loopbackProvider('cloud-a', ['deb'])];
/** Raw images are read in full (zeros included), so a 768 MiB upload lasts a few seconds here. */
const bigRaw = { diskimages: [fakeDiskimage('deb', { formats: ['raw'] }, { FAKE_DIB_SIZE_MIB: '768' })], providers: [loopbackProvider('cloud-a', ['deb'], 'raw')] };

/** Ids with files in a builder's images-dir. */
async function idsOnDisk(dir: string): Promise<string[]> {
  return [...new Set((await readdir(dir)).map((f) => /^(deb-\d{10})\./.exec(f)?.[1]).filter((x): x is string => !!x))].sort();
}

/** Nothing stuck, nothing leaked: every record settled, Glance holds exactly the ready uploads, builders hold exactly the ready builds. */
async function assertSettled(sys: ImageSystem): Promise<void> {
  const s = await sys.waitForState('every record settled (no building/uploading/deleting)', (x) =>
    x.builds.every((b) => b.state === 'ready') && x.uploads.every((u) => u.state === 'ready') && x.uploads.length > 0, 300_000);
  await waitFor(async () => (await sys.glanceImages({ nodepool_image_name: 'deb' })).length === s.uploads.length,
    { timeoutMs: 60_000, what: 'Glance holds only the recorded uploads' });
  const images = await sys.glanceImages({ nodepool_image_name: 'deb' });
  assert.deepEqual(images.map((i) => i.externalId).sort(), s.uploads.map((u) => u.externalId).sort());
  assert.ok(images.every((i) => i.status === 'active'));
  const onDisk = (await Promise.all([...sys.builders.values()].map((b) => idsOnDisk(b.env.imagesDir)))).flat().sort();
  assert.deepEqual(onDisk, s.builds.map((b) => b.id).sort());
}

/** Starts a server again and checks it sees `buildId` to ready on builder-a, with one DIB run and nothing left over. */
async function restartAndSeeSameBuild(sys: ImageSystem, buildId: string, dibRuns: () => number): Promise<void> {
  sys.startServerProcess();
  const ready = await sys.waitForBuild('the same build ready', (b) => b.id === buildId && b.state === 'ready', 300_000);
  assert.equal(ready.builderHostname, 'builder-a');
  await assertSettled(sys);
  assert.deepEqual((await sys.store.listBuilds()).map((b) => b.id), [buildId]);
  assert.equal(dibRuns(), 1, 'the resubmission attached to the running build');
}

describe('restart safety: server killed, gearmand killed', () => {
  let sys: ImageSystem | undefined;

  afterEach(async () => {
    await sys?.stop();
    sys = undefined;
  });
  after(() => assert.deepEqual(runningProcesses().map((p) => p.name), []));

  it('a server killed -9 mid-build resumes the same build on restart without a second DIB run', async () => {
    sys = await ImageSystem.start({ diskimages: [fakeDiskimage('deb', { formats: ['qcow2'] }, { FAKE_DIB_DELAY: '4' })], providers });
    const a = await sys.addBuilder('a');
    let dibRuns = 0;
    a.inProcess!.on('build:complete', () => { dibRuns += 1; });
    sys.startServerProcess();
    const building = await sys.waitForBuild('build running', (b) => b.state === 'building' && b.builderHostname === 'builder-a', 300_000);
    await sys.serverProcess!.kill();
    await restartAndSeeSameBuild(sys, building.id, () => dibRuns);
  });

  it('a server stopped with SIGTERM mid-build exits within 5 s; the next server sees the same build to ready with one DIB run', async () => {
    sys = await ImageSystem.start({ diskimages: [fakeDiskimage('deb', { formats: ['qcow2'] }, { FAKE_DIB_DELAY: '1.5' })], providers });
    const a = await sys.addBuilder('a');
    let dibRuns = 0;
    a.inProcess!.on('build:complete', () => { dibRuns += 1; });
    const server = sys.startServerProcess();
    const building = await sys.waitForBuild('build running', (b) => b.state === 'building' && b.builderHostname === 'builder-a', 300_000);
    const exited = new Promise<number | null>((resolve) => server.child.once('exit', (code) => resolve(code)));
    const t0 = Date.now();
    server.child.kill('SIGTERM');
    // 20 s: a bound, not the expected time (a stop takes well under a second on a quiet machine).
    const code = await Promise.race([exited, new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 20_000).unref())]);
    assert.equal(code, 0, `SIGTERM ended the server with exit code 0 within 20 s (got ${code} after ${Date.now() - t0} ms)`);
    assert.equal((await sys.store.getBuild(building.id))?.state, 'building', 'the build is left to the next server');
    await restartAndSeeSameBuild(sys, building.id, () => dibRuns);
  });

  it('a server killed -9 mid-upload resumes the upload; no duplicate upload, nothing leaked in Glance', async () => {
    sys = await ImageSystem.start(bigRaw);
    await sys.addBuilder('a');
    sys.startServerProcess();
    const mid = await sys.waitForState('upload in progress', (x) => x.uploads.some((u) => u.state === 'uploading' && (u.progress?.numerator ?? 0) > 0), 300_000);
    const uploadId = mid.uploads[0]!.id;
    await sys.serverProcess!.kill();
    sys.startServerProcess();
    await sys.waitForState('the same upload ready', (x) => x.uploads.some((u) => u.id === uploadId && u.state === 'ready'), 300_000);
    await assertSettled(sys);
    assert.deepEqual((await sys.store.listUploads()).map((u) => u.id), [uploadId]);
  });

  it('gearmand killed and restarted mid-upload: the upload is redone, nothing stuck, nothing leaked', async () => {
    sys = await ImageSystem.start(bigRaw);
    await sys.addBuilder('a');
    await sys.startServer();
    await sys.waitForState('upload in progress', (x) => x.uploads.some((u) => u.state === 'uploading' && (u.progress?.numerator ?? 0) > 0), 300_000);
    await sys.gearmand.kill();
    await sys.gearmand.restart();
    await assertSettled(sys);
    const builds = await sys.store.listBuilds();
    assert.equal(builds.length, 1, 'the build survived: its builder re-registered its files');
  });
});
