import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { createReadStream, existsSync } from 'node:fs';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { adminWorkers } from '../../../lib/gearman/admin.js';
import { fn } from '../../../lib/gearman/functions.js';
import type { GearmanClient } from '../../../lib/gearman/client.js';
import type { OpenStackImageService } from '../../../lib/drivers/openstack/glance-image-service.js';
import { waitFor } from '../../../lib/lifecycle.js';
import { startGearmand, type GearmandHandle } from '../../support/gearmand.js';
import { useLoopbackCloud, type LoopbackCloud } from '../../support/openstack.js';
import { runningProcesses, type TrackedProcess } from '../../support/processes.js';
import {
  builderProcess, createBuilderEnv, fakeDiskimage, glanceAdmin, inProcessBuilder, loopbackProvider, runJob, testClient,
  type BuilderEnv, type RawDiskimage,
} from '../../support/builder-env.js';

const EXT4_BUILD = path.resolve('test/fixtures/bin/ext4-build');

/** A `builder: command` diskimage running the ext4 fixture; `env` are its env-vars (EXT4_BUILD_* knobs). */
function ext4Diskimage(name: string, extra: Record<string, unknown> = {}, env: Record<string, string> = {}): RawDiskimage {
  return { name, builder: 'command', command: [EXT4_BUILD, '--label', 'nodepool', '--size-mib', '16'], release: 'trixie', 'env-vars': env, ...extra };
}

async function md5(file: string): Promise<string> {
  const h = createHash('md5');
  await pipeline(createReadStream(file), h);
  return h.digest('hex');
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A file's contents inside an ext4 image, read with debugfs (no mount needed). */
function ext4Cat(image: string, file: string): string {
  return execFileSync('debugfs', ['-R', `cat ${file}`, image], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
}

describe('builder: builder: command diskimages through nodepool-builder, gearmand and Glance', () => {
  let gearmand: GearmandHandle;
  let cloud: LoopbackCloud;
  let env: BuilderEnv;
  let daemon: TrackedProcess;
  let client: GearmanClient;
  let glance: OpenStackImageService;
  let clientId: string;
  const id = 'ext4-0000000001';
  const pause = path.join(os.tmpdir(), `ext4-build-hang-${randomUUID()}`);

  before(async () => {
    [gearmand, cloud] = await Promise.all([startGearmand(), useLoopbackCloud()]);
    env = await createBuilderEnv({
      gearmanPort: gearmand.port,
      cloud,
      diskimages: [
        ext4Diskimage('ext4', { formats: ['qcow2'] }, { IMAGE_MOTD: 'built by a command' }),
        fakeDiskimage('debian-test', { formats: ['qcow2'] }),
        ext4Diskimage('ext4-fails', {}, { EXT4_BUILD_EXIT: '3' }),
        ext4Diskimage('ext4-short', { formats: ['qcow2', 'raw'] }, { EXT4_BUILD_SKIP: 'raw' }),
        ext4Diskimage('ext4-missing', { command: ['/nonexistent/packer-build'] }),
        ext4Diskimage('ext4-hangs', { 'build-timeout': 2 }, { EXT4_BUILD_PAUSE_FILE: pause }),
      ],
      providers: [loopbackProvider('cloud-qcow2', ['ext4', 'debian-test']), loopbackProvider('cloud-raw', ['ext4'], 'raw')],
    });
    daemon = builderProcess(env);
    client = await testClient(gearmand.port);
    glance = await glanceAdmin(cloud);
    clientId = await waitFor(async () => (await adminWorkers(gearmand.address)).find((w) => w.functions.includes(fn.imageBuild('ext4')))?.clientId,
      { timeoutMs: 30_000, what: 'nodepool-builder registered image-build:ext4' });
  });

  after(async () => {
    await client?.stop();
    await daemon?.stop(15_000);
    await gearmand?.stop();
    await cloud?.stop();
    await env?.remove();
    await Promise.all(['', '.started', '.child'].map((ext) => rm(`${pause}${ext}`, { force: true })));
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  it('registers image-build for command and DIB diskimages under one client id', async () => {
    const mine = (await adminWorkers(gearmand.address)).filter((w) => w.clientId === clientId).flatMap((w) => w.functions);
    for (const name of ['ext4', 'debian-test', 'ext4-fails', 'ext4-short', 'ext4-missing', 'ext4-hangs']) {
      assert.ok(mine.includes(fn.imageBuild(name)), `${name} in ${JSON.stringify(mine)}`);
    }
  });

  it('builds with the command: a verified qcow2 of a real ext4 filesystem, the contract in its env, its output in the build log', async () => {
    const end = await runJob(client, fn.imageBuild('ext4'), { 'image-id': id }, { unique: id });
    assert.equal(end.type, 'complete', end.message);
    assert.deepEqual(end.json?.formats, ['qcow2']);
    assert.equal(end.json?.['image-id'], id);
    const qcow2 = path.join(env.imagesDir, `${id}.qcow2`);
    const info = JSON.parse(execFileSync('qemu-img', ['info', '--output=json', qcow2], { encoding: 'utf8' })) as { format: string; 'virtual-size': number };
    assert.equal(info.format, 'qcow2');
    assert.equal(info['virtual-size'], 16 * 1024 * 1024);
    const files = end.json?.files as Array<{ format: string; sha256: string }>;
    assert.equal((await readFile(`${qcow2}.sha256`, 'utf8')).trim(), `${files[0]?.sha256}  ${id}.qcow2`);
    const log = await readFile(path.join(env.buildLogDir, `${id}.log`), 'utf8');
    assert.match(log, new RegExp(`running: ${EXT4_BUILD} --label nodepool --size-mib 16\\n`));
    assert.match(log, new RegExp(`ext4-build: building ${id} \\(ext4, release 'trixie'\\) as qcow2 into ${env.imagesDir}/${id}\\n`));
    assert.match(log, /ext4-build: timeout 28800 s, label nodepool, 16 MiB/);
    assert.match(log, /ext4-build: this line goes to stderr/);
    assert.match(log, /build complete in \d+ s/);
    assert.deepEqual((await readdir(env.config.buildTmpDir)).filter((n) => n !== 'image-cache'), [], 'the build TMPDIR is removed');
  });

  it('builds a DIB diskimage in the same process', async () => {
    const end = await runJob(client, fn.imageBuild('debian-test'), { 'image-id': 'debian-test-0000000001' });
    assert.equal(end.type, 'complete', end.message);
    assert.equal(end.json?.builder, 'builder-a');
    assert.match(await readFile(path.join(env.buildLogDir, 'debian-test-0000000001.log'), 'utf8'), /running: .*fake-dib -x -t qcow2/);
  });

  it('uploads the command\'s image to Glance, and converts it to raw: an ext4 filesystem with the build\'s files', async () => {
    const up = await runJob(client, fn.imageUpload(id), { 'image-name': 'ext4', provider: 'cloud-qcow2', 'upload-id': '0000000001' });
    assert.equal(up.type, 'complete', up.message);
    const image = await glance.glance.getImage(String(up.json?.['external-id']));
    assert.equal(image?.status, 'active');
    assert.equal(image?.diskFormat, 'qcow2');
    assert.equal(image?.checksum, await md5(path.join(env.imagesDir, `${id}.qcow2`)));
    assert.equal(image?.properties.nodepool_build_id, id);
    await glance.delete(image?.id ?? '');

    const raw = await runJob(client, fn.imageUpload(id), { 'image-name': 'ext4', provider: 'cloud-raw' });
    assert.equal(raw.type, 'complete', raw.message);
    assert.equal(raw.json?.format, 'raw');
    const rawFile = path.join(env.imagesDir, `${id}.raw`);
    const rawImage = await glance.glance.getImage(String(raw.json?.['external-id']));
    assert.equal(rawImage?.status, 'active');
    assert.equal(rawImage?.checksum, await md5(rawFile));
    await glance.delete(rawImage?.id ?? '');
    execFileSync('e2fsck', ['-fn', rawFile], { stdio: 'ignore' }); // throws unless the filesystem is clean
    assert.equal(ext4Cat(rawFile, '/etc/nodepool/image-id'), id);
    assert.equal(ext4Cat(rawFile, '/etc/nodepool/release'), 'trixie');
    assert.equal(ext4Cat(rawFile, '/etc/motd'), 'built by a command', 'the diskimage\'s env-vars reach the command');
  });

  it('deletes the command\'s image: every local file goes, then its functions are de-registered', async () => {
    const end = await runJob(client, fn.imageDelete(id), '""', { raw: true });
    assert.equal(end.type, 'complete', end.message);
    assert.deepEqual((await readdir(env.imagesDir)).filter((n) => n.startsWith(`${id}.`)), []);
    await waitFor(async () => {
      const fns = (await adminWorkers(gearmand.address)).flatMap((w) => w.functions);
      return !fns.includes(fn.imageUpload(id)) && !fns.includes(fn.imageDelete(id));
    }, { timeoutMs: 5000, what: 'upload/delete functions of the command image de-registered' });
  });

  it('fails the build when the command exits non-zero, naming the exit code and the build log, and leaves no files', async () => {
    const failed = 'ext4-fails-0000000001';
    const end = await runJob(client, fn.imageBuild('ext4-fails'), { 'image-id': failed });
    assert.equal(end.type, 'fail');
    assert.match(end.message, /build command \S+ext4-build for ext4-fails-0000000001 exited with 3: .*failure injected \(EXT4_BUILD_EXIT=3\)/);
    assert.ok(end.message.includes(`(build log: ${path.join(env.buildLogDir, `${failed}.log`)})`), end.message);
    assert.deepEqual((await readdir(env.imagesDir)).filter((n) => n.startsWith('ext4-fails-')), []);
  });

  it('fails the build when the command exits 0 without one of the formats', async () => {
    const short = 'ext4-short-0000000001';
    const end = await runJob(client, fn.imageBuild('ext4-short'), { 'image-id': short });
    assert.equal(end.type, 'fail');
    assert.match(await readFile(path.join(env.buildLogDir, `${short}.log`), 'utf8'), /build failed: build finished but ext4-short-0000000001\.raw is missing/);
    assert.deepEqual((await readdir(env.imagesDir)).filter((n) => n.startsWith('ext4-short-')), [], 'the qcow2 it did write is removed');
  });

  it('fails the build when the command cannot be started', async () => {
    const end = await runJob(client, fn.imageBuild('ext4-missing'), { 'image-id': 'ext4-missing-0000000001' });
    assert.equal(end.type, 'fail');
    assert.match(await readFile(path.join(env.buildLogDir, 'ext4-missing-0000000001.log'), 'utf8'), /build failed: cannot run \/nonexistent\/packer-build: spawn \/nonexistent\/packer-build ENOENT/);
  });

  it('kills the command\'s whole process group at build-timeout, its background children too', async () => {
    await writeFile(pause, '');
    const hung = 'ext4-hangs-0000000001';
    const job = runJob(client, fn.imageBuild('ext4-hangs'), { 'image-id': hung });
    await waitFor(() => existsSync(`${pause}.started`), { timeoutMs: 20_000, what: 'ext4-build paused with a child' });
    const child = Number(await readFile(`${pause}.child`, 'utf8'));
    assert.ok(alive(child), 'the background child runs while the build hangs');
    const end = await job;
    assert.equal(end.type, 'fail');
    assert.match(await readFile(path.join(env.buildLogDir, `${hung}.log`), 'utf8'), /build failed: build exceeded build-timeout of 2 s and was killed/);
    await waitFor(() => !alive(child), { timeoutMs: 15_000, what: `background child ${child} of the killed build gone` });
    await rm(pause);
    assert.deepEqual((await readdir(env.config.buildTmpDir)).filter((n) => n !== 'image-cache'), [], 'the build TMPDIR is removed');
  });

  it('a DIB-only builder does not register command diskimages', async () => {
    const dibOnly = await createBuilderEnv({ gearmanPort: gearmand.port, name: 'dib-only', diskimages: [fakeDiskimage('debian-other'), ext4Diskimage('ext4-other')] });
    const builder = inProcessBuilder(dibOnly, { hostname: 'builder-dib' });
    try {
      await builder.start();
      // start() connects in the background and CAN_DO has no answer: wait until gearmand lists it
      const registered = async (): Promise<string[] | null> => {
        const fns = (await adminWorkers(gearmand.address)).filter((w) => w.clientId === builder.clientId).flatMap((w) => w.functions);
        return fns.includes(fn.imageBuild('debian-other')) ? fns : null;
      };
      const mine = await waitFor(registered, { timeoutMs: 10_000, what: 'the DIB-only builder registered with gearmand' });
      assert.ok(!mine.includes(fn.imageBuild('ext4-other')), JSON.stringify(mine));
    } finally {
      await builder.stop({ abortAfterMs: 1000 });
      await dibOnly.remove();
    }
  });
});
