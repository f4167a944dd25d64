import { after, afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { fn } from '../../../lib/gearman/functions.js';
import { waitFor } from '../../../lib/lifecycle.js';
import { fakeDiskimage, loopbackProvider, runJob, testClient } from '../../support/builder-env.js';
import { ImageSystem } from '../../support/image-system.js';
import { runningProcesses } from '../../support/processes.js';

const providers = [loopbackProvider('cloud-a', ['deb'])];

describe('nodepool-server: builders that fail, vanish or hold strays', () => {
  let sys: ImageSystem | undefined;

  afterEach(async () => {
    await sys?.stop();
    sys = undefined;
  });
  after(() => assert.deepEqual(runningProcesses().map((p) => p.name), []));

  it('deletes image files a builder advertises but no record wants', async () => {
    sys = await ImageSystem.start({ diskimages: [fakeDiskimage('deb', { formats: ['qcow2'] })], providers });
    const a = await sys.addBuilder('a');
    await sys.startServer();
    await sys.waitForBuild('first build ready', (b) => b.state === 'ready');
    const client = await testClient(sys.gearmand.port);
    try {
      const stray = 'deb-0000000099';
      const end = await runJob(client, fn.imageBuild('deb'), { 'image-id': stray }, { unique: stray });
      assert.equal(end.type, 'complete');
      // The files go first, then the builder stops advertising the id (ci29 read the list in between).
      await waitFor(async () => !(await readdir(a.env.imagesDir)).some((f) => f.startsWith(stray)) && !a.inProcess?.localImages().includes(stray),
        { timeoutMs: 20_000, what: `stray ${stray} deleted on the builder and no longer advertised` });
      assert.equal(await sys.store.getBuild(stray), undefined);
      assert.deepEqual((await sys.store.listBuilds()).map((b) => b.id), ['deb-0000000001']);
    } finally {
      await client.stop();
    }
  });

  it('marks the builds of a builder that disappeared lost, builds anew elsewhere, and keeps the lost uploads usable', async () => {
    sys = await ImageSystem.start({ diskimages: [fakeDiskimage('deb', { formats: ['qcow2'] })], providers });
    await sys.addBuilder('a');
    await sys.startServer();
    const first = await sys.waitForState('first build ready and uploaded', (s) => s.uploads.some((u) => u.state === 'ready'));
    const lostId = first.builds[0]!.id;
    await sys.stopBuilder('a');
    await sys.addBuilder('b');
    const s = await sys.waitForState('the old build lost, a new one ready on builder-b and uploaded', (x) =>
      x.builds.some((b) => b.id === lostId && b.state === 'lost')
      && x.builds.some((b) => b.id !== lostId && b.state === 'ready' && b.builderHostname === 'builder-b')
      && x.uploads.filter((u) => u.state === 'ready').length === 2, 60_000);
    const lost = s.builds.find((b) => b.id === lostId)!;
    assert.match(lost.reason ?? '', /builder-a/);
    assert.equal(s.uploads.find((u) => u.buildId === lostId)?.state, 'ready', 'the lost build\'s upload stays usable');
  });

  it('fails a build whose builder is killed and retries it on the other builder', async () => {
    sys = await ImageSystem.start({
      diskimages: [fakeDiskimage('deb', { formats: ['qcow2'] }, { FAKE_DIB_DELAY: '3' })], providers,
      gearmand: { jobRetries: 1 },
    });
    const a = await sys.addBuilder('a', { process: true });
    await sys.startServer();
    const failures: Array<[string, string]> = [];
    sys.server!.lifecycle!.on('build:failed', (id, reason) => failures.push([id, reason]));
    const building = await sys.waitForBuild('build running on builder-a', (b) => b.state === 'building' && b.builderHostname === 'builder-a', 60_000);
    await sys.addBuilder('b');
    await a.process!.kill();
    sys.builders.delete('a');
    const s = await sys.waitForState('a retry ready on builder-b', (x) => x.builds.some((b) => b.id !== building.id && b.state === 'ready' && b.builderHostname === 'builder-b'), 60_000);
    assert.deepEqual(failures.map(([id]) => id), [building.id], 'the interrupted build was recorded failed');
    assert.ok(failures[0]?.[1]);
    assert.ok(!s.builds.some((b) => b.id === building.id && b.state !== 'failed'), 'the interrupted build never became ready');
    await waitFor(async () => !runningProcesses().some((p) => p.name === 'fake-dib'), { timeoutMs: 10_000, what: 'no fake-dib left' });
  });
});
