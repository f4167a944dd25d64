import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, rm } from 'node:fs/promises';
import { loadConfig } from '../../../lib/config/load.js';
import { openStore } from '../../../lib/store/open-store.js';
import type { Store } from '../../../lib/store/store.js';
import { LIFECYCLE_STATUS_KEY, type LifecycleStatus } from '../../../lib/status/lifecycle-status.js';
import { fakeDiskimage, loopbackProvider } from '../../support/builder-env.js';
import { ImageSystem } from '../../support/image-system.js';
import { runningProcesses } from '../../support/processes.js';

/** Ids with files in a builder's images-dir. */
async function idsOnDisk(dir: string): Promise<string[]> {
  return [...new Set((await readdir(dir)).map((f) => /^(deb-\d{10})\./.exec(f)?.[1]).filter((x): x is string => !!x))].sort();
}

describe('state reset or restored from an old backup', () => {
  let sys: ImageSystem | undefined;
  after(async () => {
    await sys?.stop();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  it('never hands out an id a builder still holds, and a wiped store (a new installation) does not delete the old files: it says why', async () => {
    sys = await ImageSystem.start({ diskimages: [fakeDiskimage('deb', { formats: ['qcow2'] }, { FAKE_DIB_DELAY: '0.1' })], providers: [loopbackProvider('cloud-a', ['deb'])] });
    const a = await sys.addBuilder('a');
    let dibRuns = 0;
    a.inProcess!.on('build:complete', () => { dibRuns += 1; });
    await sys.startServer();
    await sys.waitForState('first build and upload ready', (x) => x.builds.some((b) => b.id === 'deb-0000000001' && b.state === 'ready') && x.uploads.some((u) => u.state === 'ready'));
    await sys.stopServer();

    // The operator wipes the state (or restores a backup from before the first build).
    await sys.store.close();
    const stateDir = loadConfig(sys.serverConfigPath).stateDir;
    await rm(stateDir, { recursive: true, force: true });
    (sys as { store: Store }).store = await openStore(loadConfig(sys.serverConfigPath));
    await sys.startServer();

    const fresh = await sys.waitForBuild('a new build ready', (b) => b.state === 'ready', 60_000);
    assert.equal(fresh.id, 'deb-0000000002', 'the id the builder still advertised was skipped');
    assert.equal(dibRuns, 2, 'a real second build, not the old files answered as new');
    // The old files were there before the new store had a build of its own: they may be another
    // installation's, so they are kept (past the stray grace) and the lifecycle status says why.
    await sys.passes(5);
    const status = (await sys.store.getStatus<LifecycleStatus>(LIFECYCLE_STATUS_KEY))?.value;
    assert.match(status?.held?.join('\n') ?? '', /1 image ids builders advertise were there before this store had any record of its own/);
    assert.deepEqual(await idsOnDisk(a.env.imagesDir), ['deb-0000000001', 'deb-0000000002'], 'the old files are kept');
    assert.deepEqual((await sys.store.listBuilds()).map((b) => b.id), ['deb-0000000002']);
  });
});
