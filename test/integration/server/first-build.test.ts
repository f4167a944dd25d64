import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fn } from '../../../lib/gearman/functions.js';
import { adminWorkers } from '../../../lib/gearman/admin.js';
import type { ServerHeartbeat } from '../../../lib/status/server.js';
import { fakeDiskimage, loopbackProvider } from '../../support/builder-env.js';
import { ImageSystem } from '../../support/image-system.js';
import { runningProcesses } from '../../support/processes.js';
import { LIFECYCLE_STATUS_KEY, SERVER_HEARTBEAT_KEY } from '../../../lib/status/lifecycle-status.js';

describe('nodepool-server: first build and upload', () => {
  let sys: ImageSystem;

  before(async () => {
    sys = await ImageSystem.start({
      diskimages: [fakeDiskimage('deb', { formats: ['qcow2'] }, { FAKE_DIB_DELAY: '0.2' })],
      providers: [loopbackProvider('cloud-a', ['deb']), loopbackProvider('cloud-b', ['deb'], 'raw')],
    });
    await sys.addBuilder('a');
    await sys.startServer();
  });

  after(async () => {
    await sys?.stop();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  it('builds the diskimage once and uploads it to every provider that lists it', async () => {
    const { builds, uploads } = await sys.waitForState('build ready and uploaded to both providers', (s) =>
      s.builds.some((b) => b.state === 'ready') && s.uploads.filter((u) => u.state === 'ready').length === 2);
    assert.equal(builds.length, 1);
    const build = builds[0]!;
    assert.equal(build.id, 'deb-0000000001');
    assert.equal(build.builderHostname, 'builder-a');
    assert.ok(build.builderId);
    assert.deepEqual(build.formats, ['qcow2']);
    assert.equal(build.files[0]?.format, 'qcow2');
    assert.equal(uploads.length, 2);
    const images = await sys.glanceImages({ nodepool_build_id: build.id });
    for (const u of uploads) {
      assert.equal(u.buildId, build.id);
      assert.equal(u.format, u.provider === 'cloud-a' ? 'qcow2' : 'raw');
      const image = images.find((i) => i.externalId === u.externalId);
      assert.ok(image, `upload ${u.id} is in Glance`);
      assert.equal(image.status, 'active');
      assert.equal(image.name, u.externalName);
      assert.equal(image.properties.nodepool_upload_id, u.id);
      assert.equal(image.properties.purpose, 'test');
    }
  });

  it('publishes its status and heartbeat for the CLI', async () => {
    const status = await sys.store.getStatus<{ diskimages: Array<{ diskimage: string; failures: number; rebuildAt: number | null }> }>(LIFECYCLE_STATUS_KEY);
    assert.equal(status?.value.diskimages[0]?.diskimage, 'deb');
    assert.equal(status?.value.diskimages[0]?.failures, 0);
    assert.ok(status?.value.diskimages[0]?.rebuildAt);
    const beat = await sys.store.getStatus<ServerHeartbeat>(SERVER_HEARTBEAT_KEY);
    assert.equal(beat?.value.hostname, 'test-server');
    assert.equal(beat?.value.interval, 1);
    await sys.passes(2);
    const later = await sys.store.getStatus<ServerHeartbeat>(SERVER_HEARTBEAT_KEY);
    assert.ok(later && beat && later.updated > beat.updated, 'refreshed by the passes');
    const loops = later.value.loops ?? [];
    // The providers only take images (no pools), so there is no pool worker.
    assert.deepEqual(loops.map((l) => l.name).sort(), ['cleanup', 'deleter', 'fleet-ownership', 'image-lifecycle', 'min-ready']);
    for (const l of loops) assert.deepEqual([l.name, l.consecutiveFailures, l.lastError, l.passes > 0], [l.name, 0, null, true]);
  });

  it('does not build again while the newest build is younger than rebuild-age', async () => {
    await sys.passes(3);
    const builds = await sys.store.listBuilds();
    assert.equal(builds.length, 1);
    const workers = await adminWorkers(sys.gearmand.address);
    assert.ok(workers.some((w) => w.functions.includes(fn.imageUpload('deb-0000000001'))));
  });

  it('removes an operator request when the build serving it is created: deleting that build starts no other', async () => {
    await sys.store.requestBuild('deb');
    const serving = await sys.waitForBuild('a build serving the request', (b) => b.id === 'deb-0000000002');
    assert.deepEqual(await sys.store.listBuildRequests(), [], `no request left once ${serving.id} exists (state ${serving.state})`);
    await sys.waitForBuild('the requested build ready', (b) => b.id === serving.id && b.state === 'ready');
    // What `nodepool image-delete <build-id>` records: the operations doc's rollback.
    await sys.store.updateBuild(serving.id, { state: 'deleting', reason: 'operator rollback' }, { expectStates: ['ready'] });
    await sys.waitForState('the rolled back build gone', (x) => !x.builds.some((b) => b.id === serving.id));
    await sys.passes(3);
    assert.deepEqual((await sys.store.listBuilds()).map((b) => `${b.id} ${b.state}`), ['deb-0000000001 ready'], 'no new build after the rollback');
  });
});
