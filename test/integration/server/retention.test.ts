import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { waitFor } from '../../../lib/lifecycle.js';
import { LIFECYCLE_STATUS_KEY, type LifecycleStatus } from '../../../lib/status/lifecycle-status.js';
import { fakeDiskimage, loopbackProvider } from '../../support/builder-env.js';
import { ImageSystem } from '../../support/image-system.js';
import { runningProcesses } from '../../support/processes.js';
import { nodeScript } from '../../support/node-command.js';

const run = promisify(execFile);
const seq = (id: string): number => Number(id.slice(-10));

/** Image ids that have files in a builder's images-dir. */
async function idsOnDisk(dir: string): Promise<string[]> {
  const ids = new Set((await readdir(dir)).map((f) => /^(deb-\d{10})\./.exec(f)?.[1]).filter((x): x is string => !!x));
  return [...ids].sort();
}

describe('nodepool-server: daily rebuild, retention of two, operator delete, revoke', () => {
  let sys: ImageSystem;

  before(async () => {
    sys = await ImageSystem.start({
      diskimages: [fakeDiskimage('deb', { formats: ['qcow2'], 'rebuild-age': 4 }, { FAKE_DIB_DELAY: '0.1' })],
      providers: [loopbackProvider('cloud-a', ['deb']), loopbackProvider('cloud-b', ['deb'], 'raw')],
    });
    await sys.addBuilder('a');
    await sys.startServer();
  });

  after(async () => {
    await sys?.stop();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  it('rebuilds after rebuild-age and keeps exactly the two newest builds and uploads', async () => {
    await sys.waitForBuild('a fourth build ready', (b) => b.state === 'ready' && seq(b.id) >= 4, 90_000);
    const builder = sys.builders.get('a')!;
    const s = await sys.waitForState('retention settled: 2 ready builds, 2 ready uploads per provider, nothing else', (x) =>
      x.builds.length === 2 && x.builds.every((b) => b.state === 'ready')
      && x.uploads.length === 4 && x.uploads.every((u) => u.state === 'ready'), 60_000);
    const kept = s.builds.map((b) => b.id).sort();
    assert.ok(seq(kept[1]!) === seq(kept[0]!) + 1, `the two newest builds are kept: ${kept.join(', ')}`);
    for (const p of ['cloud-a', 'cloud-b']) {
      assert.deepEqual(s.uploads.filter((u) => u.provider === p).map((u) => u.buildId).sort(), kept);
    }
    // Builds keep coming every 4 s: Glance and the builder's files are compared with the store
    // at one moment where all three agree (read again until they do), not across a rebuild.
    await waitFor(async () => {
      const x = await sys.waitForState('records', () => true);
      const images = (await sys.glanceImages({ nodepool_image_name: 'deb' })).map((i) => i.externalId).sort();
      const onDisk = await idsOnDisk(builder.env.imagesDir);
      const ready = x.uploads.filter((u) => u.state === 'ready').map((u) => u.externalId).sort();
      const builds = x.builds.filter((b) => b.state === 'ready').map((b) => b.id).sort();
      return x.builds.length === 2 && images.length === 4 && JSON.stringify(images) === JSON.stringify(ready) && JSON.stringify(onDisk) === JSON.stringify(builds) ? true : undefined;
    }, { timeoutMs: 60_000, what: 'only the 4 kept images in Glance and the 2 kept builds\' files on the builder', intervalMs: 200 });
  });

  it('image-delete of the newest build deletes its uploads and files and falls back to the previous build', async () => {
    // Make the builds old-proof: no rebuild during this test.
    await sys.reconfigure({ diskimages: [fakeDiskimage('deb', { formats: ['qcow2'], 'rebuild-age': 3600 }, { FAKE_DIB_DELAY: '0.1' })] });
    const before = await sys.waitForState('retention settled', (x) => x.builds.length === 2 && x.builds.every((b) => b.state === 'ready') && x.uploads.length === 4 && x.uploads.every((u) => u.state === 'ready'));
    const [previous, newest] = before.builds.map((b) => b.id) as [string, string];
    const cli = await run(process.execPath, [...nodeScript('bin/nodepool.ts'), '-c', sys.serverConfigPath, 'image-delete', newest]);
    assert.match(cli.stdout, /marked for deletion/);
    const after = await sys.waitForState(`${newest} and its uploads gone`, (x) => x.builds.every((b) => b.id !== newest) && x.uploads.every((u) => u.buildId !== newest));
    assert.deepEqual(after.builds.map((b) => [b.id, b.state]), [[previous, 'ready']]);
    assert.deepEqual(after.uploads.map((u) => [u.buildId, u.state]), [[previous, 'ready'], [previous, 'ready']]);
    const builder = sys.builders.get('a')!;
    await waitFor(async () => !(await idsOnDisk(builder.env.imagesDir)).includes(newest), { timeoutMs: 20_000, what: `${newest} files deleted` });
    assert.deepEqual((await sys.glanceImages({ nodepool_build_id: newest })).length, 0);
    // No rebuild: the previous build is current and young enough.
    await sys.passes(3);
    assert.deepEqual((await sys.store.listBuilds()).map((b) => b.id), [previous]);
  });

  it('keeps the rolled-back build as the next most recent when the next build arrives', async () => {
    const [previous] = (await sys.store.listBuilds()).map((b) => b.id) as [string];
    const r = await run(process.execPath, [...nodeScript('bin/nodepool.ts'), '-c', sys.serverConfigPath, 'image-build', 'deb']);
    assert.match(r.stdout, /requested/);
    const s = await sys.waitForState('a new build ready and uploaded next to the previous one', (x) =>
      x.builds.length === 2 && x.builds.every((b) => b.state === 'ready') && x.uploads.length === 4 && x.uploads.every((u) => u.state === 'ready'));
    assert.equal(s.builds[0]?.id, previous);
    assert.ok(seq(s.builds[1]!.id) > seq(previous));
    assert.equal((await sys.store.listBuildRequests()).length, 0, 'the served request is cleared');
  });

  it('revoking the newest build through the store builds anew and keeps the revoked and the previous good build', async () => {
    const [previous, newest] = (await sys.store.listBuilds()).map((b) => b.id) as [string, string];
    await sys.store.setRevocation('deb', newest, true, 'kernel panics on boot');
    const s = await sys.waitForState('a replacement build ready and uploaded to both providers', (x) =>
      x.builds.length === 3 && x.builds.every((b) => b.state === 'ready') && x.uploads.length === 6 && x.uploads.every((u) => u.state === 'ready'), 90_000);
    const replacement = s.builds[2]!.id;
    assert.deepEqual(s.builds.map((b) => b.id), [previous, newest, replacement], 'nothing deleted: one good build is newer than the revoked one');
    assert.ok(seq(replacement) > seq(newest));
    const published = (await sys.store.getStatus<LifecycleStatus>(LIFECYCLE_STATUS_KEY))?.value;
    assert.equal(published?.diskimages.find((d) => d.diskimage === 'deb')?.revoked, null, 'up to date again');
    // Without rebuild-age passing, nothing more happens: no second replacement, nothing deleted.
    await sys.passes(3);
    assert.deepEqual((await sys.store.listBuilds()).map((b) => b.id), [previous, newest, replacement]);
  });

  it('deletes the revoked build once two good builds are newer, then forgets its revocation', async () => {
    const [, revoked, replacement] = (await sys.store.listBuilds()).map((b) => b.id) as [string, string, string];
    const r = await run(process.execPath, [...nodeScript('bin/nodepool.ts'), '-c', sys.serverConfigPath, 'image-build', 'deb']);
    assert.match(r.stdout, /requested/);
    const s = await sys.waitForState('two good builds kept, the revoked and the older one deleted', (x) =>
      x.builds.length === 2 && x.builds.every((b) => b.state === 'ready') && x.uploads.length === 4 && x.uploads.every((u) => u.state === 'ready'), 90_000);
    assert.equal(s.builds[0]?.id, replacement);
    await waitFor(async () => (await sys.store.listRevocations()).length === 0, { timeoutMs: 30_000, what: `the revocation of ${revoked} removed` });
  });
});
