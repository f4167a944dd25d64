import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { waitFor } from '../../../lib/lifecycle.js';
import { fakeDiskimage, loopbackProvider, type RawProvider } from '../../support/builder-env.js';
import { ImageSystem } from '../../support/image-system.js';
import { runningProcesses } from '../../support/processes.js';
import { LIFECYCLE_STATUS_KEY, type DiskimageStatus, type UploadTargetStatus } from '../../../lib/status/lifecycle-status.js';

type Status = { diskimages: DiskimageStatus[]; targets: UploadTargetStatus[] };

async function status(sys: ImageSystem): Promise<Status> {
  return (await sys.store.getStatus<Status>(LIFECYCLE_STATUS_KEY))?.value ?? { diskimages: [], targets: [] };
}

const broken: RawProvider = { ...loopbackProvider('broken', ['deb']), cloud: 'no-such-cloud' };

describe('nodepool-server: failures, backoff, pause and waiting', () => {
  let sys: ImageSystem;
  const good = fakeDiskimage('deb', { formats: ['qcow2'] }, { FAKE_DIB_DELAY: '0.1' });
  const failing = fakeDiskimage('deb', { formats: ['qcow2'] }, { FAKE_DIB_EXIT: '1' });
  const orphan = fakeDiskimage('orphan', { formats: ['qcow2'] });

  before(async () => {
    sys = await ImageSystem.start({
      diskimages: [failing, orphan],
      providers: [loopbackProvider('cloud-a', ['deb']), broken],
      lifecycle: { 'retry-delay': 1, 'max-retry-delay': 4 },
    });
    await sys.addBuilder('a', { diskimages: [failing] });
    await sys.startServer();
  });

  after(async () => {
    await sys?.stop();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  it('reports a diskimage no builder can build as waiting, without queueing a job', async () => {
    const s = await waitFor(async () => (await status(sys)).diskimages.find((d) => d.diskimage === 'orphan' && d.waiting), { timeoutMs: 10_000, what: 'orphan waiting' });
    assert.match(s.waiting ?? '', /no builder registers image-build:orphan/);
    assert.equal((await sys.store.listBuilds({ diskimage: 'orphan' })).length, 0);
  });

  it('backs off exponentially while builds fail, and shows the reason and next attempt', async () => {
    const failed = await sys.waitForState('three failed builds', (s) => s.builds.filter((b) => b.state === 'failed').length >= 3, 60_000);
    const times = failed.builds.filter((b) => b.state === 'failed').map((b) => b.stateTime).sort((a, b) => a - b);
    const gaps = times.slice(1).map((t, i) => t - times[i]!);
    // Each retry waits at least its delay (retry-delay 1 s, doubled per failure); the pass
    // interval and a loaded machine only add to a gap, so only the lower bound is exact.
    assert.ok(gaps[0]! >= 1000 && gaps[1]! >= 2000, `retries wait 1 s, then 2 s: gaps ${gaps.join(', ')} ms`);
    assert.match(failed.builds[0]?.reason ?? '', /exit|failed/i);
    // After three failures the delay has doubled twice, to the 4 s cap: the status's next
    // attempt is the newest failure plus 4 s (read until status and records agree).
    const d = await waitFor(async () => {
      const s = (await status(sys)).diskimages.find((x) => x.diskimage === 'deb' && x.failures >= 3);
      const failedTimes = (await sys.store.listBuilds({ diskimage: 'deb' })).filter((b) => b.state === 'failed').map((b) => b.stateTime);
      return s && s.retryAt === Math.max(...failedTimes) + 4000 ? s : undefined;
    }, { timeoutMs: 15_000, what: 'status shows 3 failures and the next attempt 4 s after the newest' });
    assert.ok(d.lastFailure);
  });

  it('recovers when the build is fixed, and forgets the failures', async () => {
    await sys.reconfigure({ diskimages: [good, orphan] });
    const s = await sys.waitForState('a ready build, failed ones pruned', (x) =>
      x.builds.some((b) => b.diskimage === 'deb' && b.state === 'ready') && !x.builds.some((b) => b.state === 'failed'), 60_000);
    assert.equal(s.builds.filter((b) => b.diskimage === 'deb').length, 1);
    await waitFor(async () => (await status(sys)).diskimages.find((x) => x.diskimage === 'deb')?.failures === 0, { timeoutMs: 10_000, what: 'failures reset' });
  });

  it('uploads to a working provider while another provider keeps failing', async () => {
    const s = await sys.waitForState('cloud-a ready, broken failed', (x) =>
      x.uploads.some((u) => u.provider === 'cloud-a' && u.state === 'ready') && x.uploads.some((u) => u.provider === 'broken' && u.state === 'failed'), 30_000);
    const failedUpload = s.uploads.find((u) => u.provider === 'broken')!;
    assert.match(failedUpload.reason ?? '', /no-such-cloud|cloud/i);
    const t = await waitFor(async () => (await status(sys)).targets.find((x) => x.provider === 'broken' && x.failures > 0), { timeoutMs: 10_000, what: 'broken target backing off' });
    assert.ok(t.retryAt);
    assert.ok(t.lastFailure);
  });

  it('pauses builds by config and by operator, and uploads per provider', async () => {
    await sys.reconfigure({ diskimages: [{ ...good, pause: true }, orphan] });
    await waitFor(async () => (await status(sys)).diskimages.find((x) => x.diskimage === 'deb')?.paused === 'config', { timeoutMs: 10_000, what: 'paused by config' });
    await sys.reconfigure({ diskimages: [good, orphan] });
    await sys.store.setPause('deb', null, true, 'testing');
    await waitFor(async () => (await status(sys)).diskimages.find((x) => x.diskimage === 'deb')?.paused === 'operator', { timeoutMs: 10_000, what: 'paused by operator' });
    const before = (await sys.store.listBuilds({ diskimage: 'deb' })).length;
    await sys.store.requestBuild('deb');
    await sys.passes(3);
    assert.equal((await sys.store.listBuilds({ diskimage: 'deb' })).length, before, 'a paused diskimage is not built, even on request');
    await sys.store.setPause('deb', 'cloud-a', true);
    await sys.store.setPause('deb', null, false);
    const s = await sys.waitForState('the requested build is ready', (x) => x.builds.filter((b) => b.diskimage === 'deb' && b.state === 'ready').length === 2, 30_000);
    const newest = s.builds.filter((b) => b.diskimage === 'deb').at(-1)!;
    await sys.passes(3);
    const uploads = await sys.store.listUploads({ buildId: newest.id });
    assert.equal(uploads.filter((u) => u.provider === 'cloud-a').length, 0, 'no upload to a paused provider');
    assert.equal((await status(sys)).targets.find((x) => x.provider === 'cloud-a')?.paused, 'operator');
    await sys.store.setPause('deb', 'cloud-a', false);
    await sys.waitForState('uploaded to cloud-a after unpause', (x) => x.uploads.some((u) => u.buildId === newest.id && u.provider === 'cloud-a' && u.state === 'ready'), 30_000);
  });
});
