import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { adminWorkers } from '../../../lib/gearman/admin.js';
import { fn } from '../../../lib/gearman/functions.js';
import type { GearmanClient } from '../../../lib/gearman/client.js';
import { waitFor } from '../../../lib/lifecycle.js';
import { Releasers } from '../../../lib/lifecycle.js';
import { startGearmand } from '../../support/gearmand.js';
import { runningProcesses } from '../../support/processes.js';
import {
  builderProcess, createBuilderEnv, fakeDiskimage, inProcessBuilder, runJob, testClient, type BuilderEnv,
} from '../../support/builder-env.js';

/** Mounts and loop devices under a directory: what a killed DIB would leave behind. */
function leftoversUnder(dir: string): { mounts: string[]; loops: string[] } {
  const mounts = execFileSync('cat', ['/proc/mounts'], { encoding: 'utf8' }).split('\n')
    .map((l) => l.split(' ')[1] ?? '').filter((m) => m.startsWith(dir + '/'));
  const loops = execFileSync('losetup', ['-nO', 'NAME,BACK-FILE'], { encoding: 'utf8' }).split('\n')
    .filter((l) => l.includes(dir + '/'));
  return { mounts, loops };
}

function processesMentioning(text: string): string[] {
  try {
    return execFileSync('pgrep', ['-af', text], { encoding: 'utf8' }).trim().split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

async function uploadFunctionsOf(port: number, clientId?: string): Promise<string[]> {
  return (await adminWorkers({ host: '127.0.0.1', port }))
    .filter((w) => clientId === undefined || w.clientId === clientId)
    .flatMap((w) => w.functions).filter((f) => fn.parse(f)?.kind === 'upload').sort();
}

describe('builder lifecycle: restart, crash, shutdown and timeout', () => {
  const releasers = new Releasers();
  afterEach(async () => {
    await releasers.releaseAll();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  /** A fake-DIB pause file that exists until the test removes it; both files go at the end. */
  async function pauseFile(tag: string): Promise<string> {
    const pause = path.join(process.env.TMPDIR ?? '/tmp', `nodepool-pause-${process.pid}-${tag}`);
    await writeFile(pause, '');
    releasers.add('pause file', async () => {
      await rm(pause, { force: true });
      await rm(`${pause}.started`, { force: true });
    });
    return pause;
  }

  async function setup(diskimageEnv: Record<string, string> = {}, extra: Record<string, unknown> = {}): Promise<{ env: BuilderEnv; port: number; client: GearmanClient }> {
    const gearmand = await startGearmand();
    releasers.add('gearmand', () => gearmand.stop());
    const env = await createBuilderEnv({ gearmanPort: gearmand.port, diskimages: [fakeDiskimage('deb', extra, diskimageEnv)] });
    releasers.add('builder env', () => env.remove());
    const client = await testClient(gearmand.port);
    releasers.add('client', () => client.stop());
    return { env, port: gearmand.port, client };
  }

  it('re-registers complete images after a restart, removes incomplete leftovers, ignores stray entries', async () => {
    const { env, port, client } = await setup();
    const first = builderProcess(env);
    releasers.add('builder 1', () => first.stop());
    await waitFor(async () => (await adminWorkers({ host: '127.0.0.1', port })).some((w) => w.functions.includes(fn.imageBuild('deb'))),
      { timeoutMs: 20_000, what: 'builder registered' });
    const built = await runJob(client, fn.imageBuild('deb'), { 'image-id': 'deb-0000000001' });
    assert.equal(built.type, 'complete', built.message);
    await first.stop();
    assert.equal((await first.exited).code, 0, 'an idle builder exits 0 on SIGTERM');
    assert.deepEqual(await uploadFunctionsOf(port), []);

    // What a crash or an operator could leave: an interrupted build, a partial conversion, strays.
    const dir = env.imagesDir;
    await writeFile(path.join(dir, 'deb-0000000002.qcow2'), 'half an image');
    await mkdir(path.join(dir, 'deb-0000000002.d'));
    await writeFile(path.join(dir, 'deb-0000000001.raw.converting'), 'partial');
    await mkdir(path.join(dir, 'lost+found'));
    await writeFile(path.join(dir, 'README'), 'not an image');

    const second = builderProcess(env);
    releasers.add('builder 2', () => second.stop());
    await waitFor(async () => (await uploadFunctionsOf(port)).length > 0, { timeoutMs: 20_000, what: 'restarted builder registered its image' });
    assert.deepEqual(await uploadFunctionsOf(port), [fn.imageUpload('deb-0000000001')]);
    const entries = (await readdir(dir)).sort();
    assert.deepEqual(entries, [
      '.tmp', 'README', 'builder_id.txt', 'deb-0000000001.d', 'deb-0000000001.json', 'deb-0000000001.qcow2',
      'deb-0000000001.qcow2.md5', 'deb-0000000001.qcow2.sha256', 'lost+found',
    ]);
    const log = await readFile(path.join(env.dir, 'builder.log'), 'utf8');
    assert.match(log, /removed incomplete build leftovers/);
    const again = await runJob(client, fn.imageBuild('deb'), { 'image-id': 'deb-0000000001' });
    assert.equal(again.type, 'complete', 'a resubmitted build of an id held here answers with the existing build');
    assert.deepEqual(again.json?.files, built.json?.files);
  });

  it('after a builder is killed with SIGKILL mid-build, a restart removes the build\'s files, mounts and loop devices', async () => {
    const pause = await pauseFile('kill');
    const { env, port, client } = await setup({ FAKE_DIB_PAUSE_FILE: pause, FAKE_DIB_MOUNT: '1', FAKE_DIB_LOOP: '1' });
    const first = builderProcess(env);
    releasers.add('builder 1', () => first.stop());
    await waitFor(async () => (await adminWorkers({ host: '127.0.0.1', port })).some((w) => w.functions.includes(fn.imageBuild('deb'))),
      { timeoutMs: 20_000, what: 'builder registered' });
    const job = client.submit(fn.imageBuild('deb'), JSON.stringify({ 'image-id': 'deb-0000000003' }));
    void job.result.catch(() => undefined);
    await waitFor(() => existsSync(`${pause}.started`), { timeoutMs: 20_000, what: 'fake DIB paused mid-build' });
    await first.kill();
    // The orphaned DIB (its own process group) dies of SIGPIPE at its next output line once
    // unpaused, as real DIB does when its reader is gone, leaving its mounts behind.
    await rm(pause);
    await waitFor(() => processesMentioning(pause).length === 0, { timeoutMs: 20_000, what: 'orphaned fake DIB gone' });
    const left = leftoversUnder(env.dir);
    assert.equal(left.mounts.length, 1, 'the crash left a mount');
    assert.equal(left.loops.length, 1, 'the crash left a loop device');
    await client.stop();
    const second = builderProcess(env);
    releasers.add('builder 2', () => second.stop());
    await waitFor(async () => readFile(path.join(env.dir, 'builder.log'), 'utf8').then((l) => l.split('builder started').length === 3),
      { timeoutMs: 20_000, what: 'second builder started' });
    assert.match(await readFile(path.join(env.dir, 'builder.log'), 'utf8'), /cleaning up after an interrupted build/);
    assert.deepEqual(leftoversUnder(env.dir), { mounts: [], loops: [] });
    assert.deepEqual((await readdir(env.imagesDir)).filter((n) => n.startsWith('deb-')), []);
    assert.deepEqual(await readdir(env.config.buildTmpDir), ['image-cache'], 'only the image cache is kept');
    assert.deepEqual(await uploadFunctionsOf(port), []);
  });

  it('on SIGTERM mid-build: waits, then kills the DIB process group and leaves no files, mounts or loop devices', async () => {
    const pause = await pauseFile('term');
    const { env, port, client } = await setup({ FAKE_DIB_PAUSE_FILE: pause, FAKE_DIB_MOUNT: '1', FAKE_DIB_LOOP: '1' });
    const proc = builderProcess(env, { shutdownTimeoutS: 1 });
    releasers.add('builder', () => proc.stop());
    await waitFor(async () => (await adminWorkers({ host: '127.0.0.1', port })).some((w) => w.functions.includes(fn.imageBuild('deb'))),
      { timeoutMs: 20_000, what: 'builder registered' });
    const end = runJob(client, fn.imageBuild('deb'), { 'image-id': 'deb-0000000004' });
    await waitFor(() => existsSync(`${pause}.started`), { timeoutMs: 20_000, what: 'fake DIB paused mid-build' });
    const during = leftoversUnder(env.dir);
    assert.equal(during.mounts.length, 1, 'the fake DIB mounted a tmpfs');
    assert.equal(during.loops.length, 1, 'the fake DIB attached a loop device');
    await proc.stop(30_000);
    assert.equal((await proc.exited).code, 1, 'exit code 1: work was aborted');
    const result = await end;
    assert.equal(result.type, 'fail');
    assert.match(result.message, /build aborted: builder shutting down/);
    assert.deepEqual(leftoversUnder(env.dir), { mounts: [], loops: [] });
    assert.deepEqual(processesMentioning(pause), []);
    assert.deepEqual((await readdir(env.imagesDir)).filter((n) => n.startsWith('deb-')), []);
    assert.deepEqual(await readdir(env.config.buildTmpDir).then((l) => l.filter((n) => n !== 'image-cache')), []);
  });

  it('kills a build that exceeds build-timeout: WORK_FAIL, nothing left behind', async () => {
    const pause = await pauseFile('timeout');
    const { env, client } = await setup({ FAKE_DIB_PAUSE_FILE: pause, FAKE_DIB_MOUNT: '1', FAKE_DIB_LOOP: '1' }, { 'build-timeout': 2 });
    const builder = inProcessBuilder(env);
    releasers.add('builder', () => builder.stop({ abortAfterMs: 1000 }));
    await builder.start();
    const started = Date.now();
    const end = await runJob(client, fn.imageBuild('deb'), { 'image-id': 'deb-0000000005' });
    assert.equal(end.type, 'fail');
    assert.match(end.message, /build exceeded build-timeout of 2 s and was killed/);
    assert.ok(Date.now() - started < 15_000, 'killed promptly');
    assert.deepEqual(leftoversUnder(env.dir), { mounts: [], loops: [] });
    assert.deepEqual(processesMentioning(pause), []);
    assert.deepEqual((await readdir(env.imagesDir)).filter((n) => n.startsWith('deb-')), []);
    assert.equal(builder.aborted(), false, 'a timeout does not abort the builder');
  });
});
