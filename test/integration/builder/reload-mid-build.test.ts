import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { adminWorkers } from '../../../lib/gearman/admin.js';
import { fn } from '../../../lib/gearman/functions.js';
import type { GearmanClient } from '../../../lib/gearman/client.js';
import type { JobResult } from '../../../lib/gearman/types.js';
import { waitFor } from '../../../lib/lifecycle.js';
import type { DibBuilder } from '../../../workers/builder/dib-builder.js';
import { startGearmand, type GearmandHandle } from '../../support/gearmand.js';
import { runningProcesses } from '../../support/processes.js';
import {
  createBuilderEnv, fakeDiskimage, inProcessBuilder, testClient, type BuilderEnv, type RawDiskimage,
} from '../../support/builder-env.js';

/** A submitted job whose outcome lands in `end` (read without awaiting, for bounded waits). */
interface Pending { end?: { type: JobResult['type']; message: string }; done: Promise<void> }

function submit(client: GearmanClient, fnName: string, data: string, unique: string): Pending {
  const p: Pending = { done: Promise.resolve() };
  p.done = client.submit(fnName, data, { unique, createdTimeoutMs: 10_000 }).result.then((r) => {
    p.end = { type: r.type, message: (r.type === 'fail' ? Buffer.concat(r.warnings) : r.data).toString('utf8') };
  });
  return p;
}

// A reload that removed a diskimage or paused it used to unregister image-build:<name> while
// the builder held a job of it: gearmand (--job-retries=1, as the docs require) failed the build
// at once, DIB ran to its end, and its files were deleted later as strays. The function now
// stays registered until the running build has reported, and the build's files are kept.
describe('builder: a diskimage removed or paused by a reload while it builds', () => {
  let gearmand: GearmandHandle;
  let env: BuilderEnv;
  let builder: DibBuilder | undefined;
  let client: GearmanClient;
  let pauseFile: string;
  let deb: (extra?: Record<string, unknown>) => RawDiskimage;
  const other = fakeDiskimage('other', { formats: ['qcow2'] });

  async function buildFunctions(): Promise<string[]> {
    return (await adminWorkers(gearmand.address)).flatMap((w) => w.functions).filter((f) => fn.parse(f)?.kind === 'build').sort();
  }

  before(async () => {
    gearmand = await startGearmand({ jobRetries: 1 });
    env = await createBuilderEnv({ gearmanPort: gearmand.port });
    pauseFile = path.join(env.dir, 'pause');
    deb = (extra = {}) => fakeDiskimage('deb', { formats: ['qcow2'], ...extra }, { FAKE_DIB_PAUSE_FILE: pauseFile });
    client = await testClient(gearmand.port);
  });

  afterEach(async () => {
    await rm(pauseFile, { force: true });
    await builder?.stop({ abortAfterMs: 1000 });
    builder = undefined;
  });

  after(async () => {
    await client?.stop();
    await gearmand?.stop();
    await env?.remove();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  const cases = [
    { change: 'removed from the config', id: 'deb-0000000001', next: (): RawDiskimage[] => [other] },
    { change: 'paused (pause: true)', id: 'deb-0000000002', next: (): RawDiskimage[] => [deb({ pause: true }), other] },
  ];
  for (const c of cases) {
    it(`finishes a build of a diskimage ${c.change} meanwhile: WORK_COMPLETE, files kept, image-build dropped after`, async () => {
      await env.rewrite({ diskimages: [deb(), other] });
      builder = inProcessBuilder(env);
      await builder.start();
      await waitFor(async () => (await buildFunctions()).length === 2, { timeoutMs: 10_000, what: 'image-build:deb and :other registered' });
      await writeFile(pauseFile, '');
      await rm(`${pauseFile}.started`, { force: true });
      const build = submit(client, fn.imageBuild('deb'), JSON.stringify({ 'image-id': c.id }), c.id);
      let duringBuild: string[] = [];
      try {
        await waitFor(() => existsSync(`${pauseFile}.started`), { timeoutMs: 20_000, what: `fake-dib of ${c.id} paused` });
        builder.reconfigure(await env.rewrite({ diskimages: c.next() }));
        duringBuild = await buildFunctions();
      } finally {
        await rm(pauseFile, { force: true });
      }
      const end = await waitFor(() => build.end, { timeoutMs: 30_000, what: `build ${c.id} to end` });
      assert.equal(end.type, 'complete', `the build ended ${end.type}: ${end.message}`);
      assert.equal((JSON.parse(end.message) as { 'image-id': string })['image-id'], c.id);
      // Still registered while the build ran after the reload.
      assert.deepEqual(duringBuild, [fn.imageBuild('deb'), fn.imageBuild('other')]);
      await waitFor(async () => (await buildFunctions()).join() === fn.imageBuild('other'), { timeoutMs: 5000, what: 'image-build:deb unregistered once the build ended' });
      assert.ok(builder.localImages().includes(c.id));
      const files = (await readdir(env.imagesDir)).filter((n) => n.startsWith(`${c.id}.`)).sort();
      assert.deepEqual(files, [`${c.id}.d`, `${c.id}.json`, `${c.id}.qcow2`, `${c.id}.qcow2.md5`, `${c.id}.qcow2.sha256`]);
      const fns = (await adminWorkers(gearmand.address)).flatMap((w) => w.functions);
      assert.ok(fns.includes(fn.imageUpload(c.id)) && fns.includes(fn.imageDelete(c.id)), JSON.stringify(fns));

      // A restart on the same images-dir keeps the build as a complete image.
      await builder.stop({ abortAfterMs: 1000 });
      builder = inProcessBuilder(env);
      await builder.start();
      assert.ok(builder.localImages().includes(c.id), `${c.id} held after a restart: ${builder.localImages().join()}`);
      assert.deepEqual((await readdir(env.imagesDir)).filter((n) => n.startsWith(`${c.id}.`)).sort(), files);
    });
  }
});
