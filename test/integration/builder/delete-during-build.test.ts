import { after, before, describe, it } from 'node:test';
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
  createBuilderEnv, fakeDiskimage, inProcessBuilder, testClient, type BuilderEnv,
} from '../../support/builder-env.js';

/** A submitted job whose outcome lands in `end` (read without awaiting, for bounded waits). */
interface Pending {
  end?: { type: JobResult['type']; message: string };
  done: Promise<void>;
}

function submit(client: GearmanClient, fnName: string, data: string, unique: string): Pending {
  const p: Pending = { done: Promise.resolve() };
  p.done = client.submit(fnName, data, { unique, createdTimeoutMs: 10_000 }).result.then((r) => {
    const text = (r.type === 'fail' ? Buffer.concat(r.warnings) : r.data).toString('utf8');
    p.end = { type: r.type, message: text };
  });
  return p;
}

function isDone(p: Pending): boolean {
  return p.end !== undefined;
}

async function registeredFns(gearmand: GearmandHandle): Promise<string[]> {
  return (await adminWorkers(gearmand.address)).flatMap((w) => w.functions);
}

// An image-delete:<id> sent while <id> builds used to wait in gearmand (nobody registered the
// function yet) and destroy the build the moment it completed, while the build reported success.
// The builder now serves image-delete:<id> during the build and refuses it: the sender (the
// server's next pass, or an operator) decides again once the build has ended.
describe('builder: image-delete of an id that is still building', () => {
  let gearmand: GearmandHandle;
  let env: BuilderEnv;
  let builder: DibBuilder;
  let client: GearmanClient;
  let pauseFile: string;

  before(async () => {
    gearmand = await startGearmand();
    env = await createBuilderEnv({ gearmanPort: gearmand.port });
    pauseFile = path.join(env.dir, 'pause');
    await env.rewrite({
      diskimages: [
        fakeDiskimage('deb', { formats: ['qcow2'] }, { FAKE_DIB_PAUSE_FILE: pauseFile }),
        fakeDiskimage('bad', { formats: ['qcow2'] }, { FAKE_DIB_EXIT: '1', FAKE_DIB_DELAY: '0.4' }),
      ],
    });
    builder = inProcessBuilder(env);
    await builder.start();
    client = await testClient(gearmand.port);
  });

  after(async () => {
    await rm(pauseFile, { force: true });
    await client?.stop();
    await builder?.stop({ abortAfterMs: 1000 });
    await gearmand?.stop();
    await env?.remove();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  for (const when of ['during the build', 'before the build starts'] as const) {
    it(`answers an image-delete sent ${when} with WORK_FAIL "build in progress"; the build completes and its files stay`, async () => {
      const id = when === 'during the build' ? 'deb-0000000001' : 'deb-0000000002';
      await writeFile(pauseFile, '');
      await rm(`${pauseFile}.started`, { force: true });
      let del: Pending | undefined;
      // Queued in gearmand first: nobody serves image-delete:<id> before its build starts.
      if (when === 'before the build starts') del = submit(client, fn.imageDelete(id), '', id);
      const build = submit(client, fn.imageBuild('deb'), JSON.stringify({ 'image-id': id }), id);
      try {
        await waitFor(() => existsSync(`${pauseFile}.started`), { timeoutMs: 20_000, what: `fake-dib of ${id} paused` });
        del ??= submit(client, fn.imageDelete(id), '', id);
        const refused = await waitFor(() => del?.end, { timeoutMs: 10_000, what: `an answer to image-delete:${id} while ${id} is building` });
        assert.ok(!isDone(build), 'the build is still running');
        assert.equal(refused.type, 'fail', `image-delete ended ${refused.type}: ${refused.message}`);
        assert.equal(refused.message, `image ${id} not deleted: build in progress on ${builder.clientId}`);
      } finally {
        // Whatever happened, let this build end before the next test pauses fake-dib again.
        await rm(pauseFile, { force: true });
        await waitFor(() => build.end, { timeoutMs: 30_000, what: `build ${id} to end` });
      }
      assert.equal(build.end?.type, 'complete', build.end?.message);
      assert.ok(builder.localImages().includes(id));
      const files = (await readdir(env.imagesDir)).filter((n) => n.startsWith(`${id}.`)).sort();
      assert.deepEqual(files, [`${id}.d`, `${id}.json`, `${id}.qcow2`, `${id}.qcow2.md5`, `${id}.qcow2.sha256`]);
      const fns = await registeredFns(gearmand);
      assert.ok(fns.includes(fn.imageUpload(id)) && fns.includes(fn.imageDelete(id)), JSON.stringify(fns));
    });
  }

  it('deletes the build when asked after it completed, and drops both functions', async () => {
    const id = 'deb-0000000001';
    const del = submit(client, fn.imageDelete(id), '', id);
    const end = await waitFor(() => del.end, { timeoutMs: 10_000, what: `an answer to image-delete:${id}` });
    assert.equal(end.type, 'complete', end.message);
    assert.deepEqual((await readdir(env.imagesDir)).filter((n) => n.startsWith(`${id}.`)), []);
    await waitFor(async () => {
      const fns = await registeredFns(gearmand);
      return !fns.includes(fn.imageUpload(id)) && !fns.includes(fn.imageDelete(id));
    }, { timeoutMs: 5000, what: `image-upload/delete:${id} de-registered` });
    assert.ok(!builder.localImages().includes(id));
  });

  it('serves image-delete:<id> only while a failing build runs, and drops it after the failure', async () => {
    const id = 'bad-0000000001';
    const build = submit(client, fn.imageBuild('bad'), JSON.stringify({ 'image-id': id }), id);
    await waitFor(async () => build.end === undefined && (await registeredFns(gearmand)).includes(fn.imageDelete(id)),
      { timeoutMs: 10_000, what: `image-delete:${id} registered during its build` });
    const failed = await waitFor(() => build.end, { timeoutMs: 30_000, what: `build ${id} to fail` });
    assert.equal(failed.type, 'fail', failed.message);
    await waitFor(async () => !(await registeredFns(gearmand)).includes(fn.imageDelete(id)),
      { timeoutMs: 5000, what: `image-delete:${id} de-registered after the failed build` });
    assert.deepEqual((await readdir(env.imagesDir)).filter((n) => n.startsWith(`${id}.`)), []);
  });
});
