import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { imageBuild } from '../../../cli/commands/image-build.js';
import { Releasers, waitFor } from '../../../lib/lifecycle.js';
import { openStore } from '../../../lib/store/open-store.js';
import { runningProcesses } from '../../support/processes.js';
import { createCliEnv, diskimageStatus, targetStatus, type CliEnv } from './cli-env.js';
import { SERVER_HEARTBEAT_KEY } from '../../../lib/status/lifecycle-status.js';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

describe('nodepool image-build', () => {
  const releasers = new Releasers();
  afterEach(async () => {
    await releasers.releaseAll();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  async function setup(): Promise<CliEnv> {
    const env = await createCliEnv();
    releasers.add('cli env', () => env.close());
    return env;
  }

  it('records a build request and says so', async () => {
    const env = await setup();
    await env.heartbeat();
    const before = Date.now();
    const r = await env.run('image-build', 'ubuntu-jammy');
    assert.deepEqual(r, { stdout: 'Build of ubuntu-jammy requested\n', stderr: '', code: 0 });
    const [req, ...more] = await env.store.listBuildRequests();
    assert.equal(req?.diskimage, 'ubuntu-jammy');
    assert.ok((req?.requested ?? 0) >= before);
    assert.deepEqual(more, []);
  });

  it('records the request but warns when no server is running to act on it', async () => {
    const env = await setup();
    const r = await env.run('image-build', 'ubuntu-jammy');
    assert.equal(r.code, 0);
    assert.equal(r.stderr, 'warning: no nodepool-server is running (last seen: never); the request waits for one\n');
    assert.equal((await env.store.listBuildRequests()).length, 1);
  });

  it('exits 3 for a diskimage that is not in nodepool.yaml', async () => {
    const env = await setup();
    const r = await env.run('image-build', 'centos-9');
    assert.equal(r.code, 3);
    assert.equal(r.stderr, `Diskimage centos-9 not found in ${env.configFile}\n`);
    assert.deepEqual(await env.store.listBuildRequests(), []);
  });

  it('exits 1 without a request when the diskimage is paused by config or by an operator', async () => {
    const env = await setup();
    const byConfig = await env.run('image-build', 'debian-bookworm');
    assert.equal(byConfig.code, 1);
    assert.equal(byConfig.stderr, `Diskimage debian-bookworm is paused (pause: true in ${env.configFile})\n`);
    await env.store.setPause('ubuntu-jammy', null, true, 'kernel regression');
    const byOperator = await env.run('image-build', 'ubuntu-jammy', '--follow');
    assert.equal(byOperator.code, 1);
    assert.equal(byOperator.stderr, 'Diskimage ubuntu-jammy is paused (kernel regression); nodepool image-unpause ubuntu-jammy resumes its builds\n');
    assert.deepEqual(await env.store.listBuildRequests(), []);
  });

  it('exits 1 without a request while a build of the diskimage is in progress, with or without --follow', async () => {
    const env = await setup();
    await env.heartbeat();
    const b = await env.store.createBuild({ diskimage: 'ubuntu-jammy', formats: ['qcow2'] });
    await env.store.updateBuild(b.id, { builderHostname: 'builder1', progress: { numerator: 1, denominator: 2 } });
    const expected = `Diskimage ubuntu-jammy has a build in progress (${b.id} on builder1, 50%); no new build requested\n`;
    for (const extra of [[], ['--follow']]) {
      const r = await env.run('image-build', 'ubuntu-jammy', ...extra);
      assert.deepEqual(r, { stdout: '', stderr: expected, code: 1 }, `with ${JSON.stringify(extra)}`);
    }
    assert.deepEqual(await env.store.listBuildRequests(), []);
  });

  it('records a request when the diskimage\'s builds have ended or only another diskimage is building', async () => {
    const env = await setup();
    await env.heartbeat();
    const other = await env.store.createBuild({ diskimage: 'debian-bookworm', formats: ['qcow2'] });
    assert.equal(other.state, 'building');
    for (const state of ['ready', 'failed', 'lost', 'deleting'] as const) {
      const b = await env.store.createBuild({ diskimage: 'ubuntu-jammy', formats: ['qcow2'] });
      await env.store.updateBuild(b.id, { state, reason: state === 'ready' ? null : `test: ${state}` });
    }
    const r = await env.run('image-build', 'ubuntu-jammy');
    assert.deepEqual(r, { stdout: 'Build of ubuntu-jammy requested\n', stderr: '', code: 0 });
    assert.deepEqual((await env.store.listBuildRequests()).map((q) => q.diskimage), ['ubuntu-jammy']);
  });

  it('exits 2 for --timeout without --follow or not a positive number', async () => {
    const env = await setup();
    const alone = await env.run('image-build', 'ubuntu-jammy', '--timeout', '30');
    assert.equal(alone.code, 2);
    assert.equal(alone.stderr, '--timeout only applies with --follow\n');
    const zero = await env.run('image-build', 'ubuntu-jammy', '--follow', '--timeout', '0');
    assert.equal(zero.code, 2);
    assert.deepEqual(await env.store.listBuildRequests(), []);
  });

  it('--follow shows progress every 10 % of the requested build, then of its upload, and exits 0 when all are ready', async () => {
    const env = await setup();
    await env.heartbeat();
    // A build made before the request is not the one followed.
    const earlier = await env.store.createBuild({ diskimage: 'ubuntu-jammy', formats: ['qcow2', 'raw'] });
    await env.store.updateBuild(earlier.id, { state: 'ready', progress: null });
    const cli = env.start(['image-build', 'ubuntu-jammy', '--follow', '--timeout', '60']);
    await cli.waitForOutput(/Build of ubuntu-jammy requested\n/, 'the request');
    const b = await env.store.createBuild({ diskimage: 'ubuntu-jammy', formats: ['qcow2', 'raw'] });
    assert.equal(b.id, 'ubuntu-jammy-0000000002');
    await env.store.updateBuild(b.id, { builderHostname: 'builder1', progress: { numerator: 1, denominator: 4 } });
    await cli.waitForOutput(/ubuntu-jammy-0000000002: 25%\n/, '25 %');
    await env.store.updateBuild(b.id, { progress: { numerator: 2, denominator: 4 } });
    await cli.waitForOutput(/ubuntu-jammy-0000000002: 50%\n/, '50 %');
    await env.store.updateBuild(b.id, { progress: { numerator: 3, denominator: 4 } });
    await cli.waitForOutput(/ubuntu-jammy-0000000002: 75%\n/, '75 %');
    // The server uploads to cloud-a; cloud-b's ubuntu-jammy is paused by config.
    await env.lifecycleStatus([diskimageStatus('ubuntu-jammy')], [
      targetStatus('ubuntu-jammy', 'cloud-a'), targetStatus('ubuntu-jammy', 'cloud-b', { paused: 'config' }),
    ]);
    await env.store.updateBuild(b.id, { state: 'ready', progress: null });
    await cli.waitForOutput(/Following 1 upload of ubuntu-jammy-0000000002: cloud-a\n/, 'the uploads it follows');
    const u = await env.store.createUpload({ buildId: b.id, provider: 'cloud-a', imageName: 'ubuntu-jammy', externalName: 'ubuntu-jammy-1700000000' });
    await env.store.updateUpload(u.id, { progress: { numerator: 256 * MiB, denominator: 768 * MiB, rate: 64 * MiB, sampledAt: Date.now() } });
    await cli.waitForOutput(/Upload 0000000001 to cloud-a: 256\/768 MiB 33% 64 MiB\/s ETA 00:00:00:08\n/, 'the upload at 33 %');
    await env.store.updateUpload(u.id, { progress: { numerator: 640 * MiB, denominator: 768 * MiB, rate: 64 * MiB, sampledAt: Date.now() } });
    await cli.waitForOutput(/Upload 0000000001 to cloud-a: 640\/768 MiB 83% 64 MiB\/s ETA 00:00:00:02\n/, 'the upload at 83 %');
    await env.store.updateUpload(u.id, { state: 'ready', externalId: 'glance-0001', progress: null });
    const r = await cli.result;
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, [
      'Build of ubuntu-jammy requested',
      'Build ubuntu-jammy-0000000002 ready (qcow2, raw)',
      'Upload 0000000001 of ubuntu-jammy-0000000002 to cloud-a ready (glance-0001)',
      '',
    ].join('\n'));
    // The builder hostname shows when the CLI first sees the build after the test set it.
    assert.equal(r.stderr.replace(/^(Following build \S+) on builder1\n/, '$1\n'), [
      'Following build ubuntu-jammy-0000000002',
      'ubuntu-jammy-0000000002: 25%',
      'ubuntu-jammy-0000000002: 50%',
      'ubuntu-jammy-0000000002: 75%',
      'Following 1 upload of ubuntu-jammy-0000000002: cloud-a',
      'Uploads of ubuntu-jammy to cloud-b are paused by config; not following them',
      'Upload 0000000001 to cloud-a: 256/768 MiB 33% 64 MiB/s ETA 00:00:00:08',
      'Upload 0000000001 to cloud-a: 640/768 MiB 83% 64 MiB/s ETA 00:00:00:02',
      '',
    ].join('\n'));
  });

  it('--follow waits for every upload of the build and exits 1 when one failed', async () => {
    const env = await setup();
    await env.heartbeat();
    await env.lifecycleStatus([diskimageStatus('ubuntu-jammy')], [
      targetStatus('ubuntu-jammy', 'cloud-a'),
      targetStatus('ubuntu-jammy', 'cloud-b', { waiting: 'no builder registers image-upload:ubuntu-jammy-0000000001' }),
    ]);
    const cli = env.start(['image-build', 'ubuntu-jammy', '--follow', '--timeout', '60']);
    await cli.waitForOutput(/Build of ubuntu-jammy requested\n/, 'the request');
    const b = await env.store.createBuild({ diskimage: 'ubuntu-jammy', formats: ['qcow2'] });
    await env.store.updateBuild(b.id, { state: 'ready' });
    await cli.waitForOutput(/cloud-b: waiting: no builder registers image-upload:ubuntu-jammy-0000000001\n/, 'why cloud-b has no upload yet');
    const a = await env.store.createUpload({ buildId: b.id, provider: 'cloud-a', imageName: 'ubuntu-jammy', externalName: null });
    await env.store.updateUpload(a.id, { state: 'failed', reason: 'Glance answered 413: image too large' });
    await cli.waitForOutput(/Upload 0000000001 of ubuntu-jammy-0000000001 to cloud-a failed: Glance answered 413: image too large\n/, 'the failed upload');
    await env.lifecycleStatus([diskimageStatus('ubuntu-jammy')], [targetStatus('ubuntu-jammy', 'cloud-a'), targetStatus('ubuntu-jammy', 'cloud-b')]);
    const c = await env.store.createUpload({ buildId: b.id, provider: 'cloud-b', imageName: 'ubuntu-jammy', externalName: null });
    await env.store.updateUpload(c.id, { progress: { numerator: 10 * MiB, denominator: 20 * MiB } });
    await cli.waitForOutput(/Upload 0000000002 to cloud-b: 10\/20 MiB 50%\n/, 'cloud-b at 50 % (no rate recorded)');
    assert.equal(cli.proc.alive(), true, 'still following cloud-b after cloud-a failed');
    await env.store.updateUpload(c.id, { state: 'ready', externalId: 'glance-0002', progress: null });
    const r = await cli.result;
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stdout, /\nUpload 0000000002 of ubuntu-jammy-0000000001 to cloud-b ready \(glance-0002\)\n$/);
  });

  it("--follow shows the server's waiting reason and exits 1 with the reason when the build fails", async () => {
    const env = await setup();
    await env.heartbeat();
    await env.lifecycleStatus([diskimageStatus('ubuntu-jammy', { waiting: 'no builder registers image-build:ubuntu-jammy', requested: true })]);
    const cli = env.start(['image-build', 'ubuntu-jammy', '--follow', '--timeout', '60']);
    await cli.waitForOutput(/waiting: no builder registers image-build:ubuntu-jammy\n/, 'the waiting reason');
    await env.lifecycleStatus([diskimageStatus('ubuntu-jammy')]);
    const b = await env.store.createBuild({ diskimage: 'ubuntu-jammy', formats: ['qcow2'] });
    await cli.waitForOutput(/Following build ubuntu-jammy-0000000001\n/, 'the build it follows');
    await env.store.updateBuild(b.id, { state: 'failed', reason: 'disk-image-create exited 1 (log /var/log/nodepool/builds/ubuntu-jammy-0000000001.log)' });
    const r = await cli.result;
    assert.equal(r.code, 1);
    assert.match(r.stderr, /\nBuild ubuntu-jammy-0000000001 failed: disk-image-create exited 1 \(log \/var\/log\/nodepool\/builds\/ubuntu-jammy-0000000001\.log\)\n$/);
    assert.equal(r.stdout, 'Build of ubuntu-jammy requested\n');
  });

  it('--follow exits 1 at once when no server heartbeat exists, leaving the request in place', async () => {
    const env = await setup();
    const r = await env.run('image-build', 'ubuntu-jammy', '--follow');
    assert.equal(r.code, 1);
    assert.equal(r.stdout, 'Build of ubuntu-jammy requested\n');
    assert.equal(r.stderr, 'Cannot follow the build: no nodepool-server is running (last seen: never)\n');
    assert.equal((await env.store.listBuildRequests()).length, 1);
  });

  it('--follow exits 1 saying when the server was last seen when its heartbeat is stale', async () => {
    const env = await setup();
    const past = await openStore(env.config, { clock: () => Date.now() - 125_000 });
    await past.putStatus(SERVER_HEARTBEAT_KEY, { pid: 31337, hostname: 'np-old', started: 0, interval: 10 });
    await past.close();
    const r = await env.run('image-build', 'ubuntu-jammy', '--follow');
    assert.equal(r.code, 1);
    // 125 s before the write, plus however long the CLI took to start on a loaded machine (10 s seen in CI).
    assert.match(r.stderr, /^Cannot follow the build: no nodepool-server is running \(last seen 00:00:0[2-4]:\d\d ago, pid 31337 on np-old\)\n$/);
  });

  it('--follow exits 1 when no build starts before --timeout', async () => {
    const env = await setup();
    await env.heartbeat();
    const started = Date.now();
    const r = await env.run('image-build', 'ubuntu-jammy', '--follow', '--timeout', '1');
    assert.equal(r.code, 1);
    assert.equal(r.stderr, 'Timed out after 1 s waiting for a build of ubuntu-jammy to start; the request stays with the server\n');
    assert.ok(Date.now() - started < 20_000);
  });

  it('--follow stops on SIGINT with exit 130 and leaves the request to the server', async () => {
    const env = await setup();
    await env.heartbeat();
    const cli = env.start(['image-build', 'ubuntu-jammy', '--follow', '--timeout', '60']);
    await cli.waitForOutput(/Build of ubuntu-jammy requested\n/, 'the request');
    cli.proc.child.kill('SIGINT');
    const r = await cli.result;
    assert.equal(r.code, 130);
    assert.equal(r.stderr, 'Stopped following the build of ubuntu-jammy; the server goes on with it\n');
    assert.equal((await env.store.listBuildRequests()).length, 1);
  });

  it('--follow on a terminal redraws one progress bar in place on stderr', async () => {
    const env = await setup();
    await env.heartbeat();
    let out = '';
    let err = '';
    await env.lifecycleStatus([diskimageStatus('ubuntu-jammy')], []); // no provider to upload to
    const following = imageBuild({
      configFile: env.configFile, diskimage: 'ubuntu-jammy', follow: true, timeoutSeconds: 30, pollIntervalMs: 20,
      live: { out: (t) => { out += t; }, err: (t) => { err += t; }, errIsTTY: true },
    });
    await waitFor(() => out.includes('requested'), { timeoutMs: 10_000, what: 'the request' });
    const b = await env.store.createBuild({ diskimage: 'ubuntu-jammy', formats: ['qcow2'] });
    await env.store.updateBuild(b.id, { progress: { numerator: 1, denominator: 2 } });
    await waitFor(() => err.includes('] ') && err.includes(' 50% '), { timeoutMs: 10_000, what: 'the bar at 50 %' });
    await env.store.updateBuild(b.id, { state: 'ready' });
    const r = await following;
    assert.equal(r.exitCode, 0);
    assert.equal(out, 'Build of ubuntu-jammy requested\nBuild ubuntu-jammy-0000000001 ready (qcow2)\n');
    // Each redraw: carriage return, bar, build id, erase to end of line (ESC [ K).
    const shown = err.replaceAll('\r', '<CR>').replaceAll('\u001b[K', '<EL>');
    assert.match(shown, /^Following build ubuntu-jammy-0000000001\n(<CR>\[#{15}\.{15}\] {2}50% ubuntu-jammy-0000000001<EL>)+\n$/);
  });

  it('--follow on a terminal redraws one bar per upload in place, and Ctrl-C leaves the uploads to the server (exit 130)', async () => {
    const env = await setup();
    await env.heartbeat();
    await env.lifecycleStatus([diskimageStatus('ubuntu-jammy')], [targetStatus('ubuntu-jammy', 'cloud-a'), targetStatus('ubuntu-jammy', 'cloud-b')]);
    let err = '';
    const interrupt = new AbortController();
    const following = imageBuild({
      configFile: env.configFile, diskimage: 'ubuntu-jammy', follow: true, timeoutSeconds: 30, pollIntervalMs: 20, signal: interrupt.signal,
      live: { out: () => undefined, err: (t) => { err += t; }, errIsTTY: true },
    });
    const b = await waitFor(async () => {
      const [req] = await env.store.listBuildRequests();
      return req && env.store.createBuild({ diskimage: 'ubuntu-jammy', formats: ['qcow2'] });
    }, { timeoutMs: 10_000, what: 'the request' });
    await env.store.updateBuild(b.id, { state: 'ready' });
    const now = Date.now();
    for (const [provider, sent] of [['cloud-a', 3 * GiB], ['cloud-b', 1 * GiB]] as const) {
      const u = await env.store.createUpload({ buildId: b.id, provider, imageName: 'ubuntu-jammy', externalName: null });
      await env.store.updateUpload(u.id, { progress: { numerator: sent, denominator: 4 * GiB, rate: 100 * MiB, sampledAt: now } });
    }
    // Twice: the second drawing of both bars is a redraw in place.
    await waitFor(() => err.split('cloud-b 1.0/4.0 GiB').length > 2, { timeoutMs: 10_000, what: 'both bars drawn twice' });
    interrupt.abort();
    const r = await following;
    assert.equal(r.exitCode, 130);
    const shown = err.replaceAll('\r', '<CR>').replaceAll('\u001b[K', '<EL>').replaceAll('\u001b[1A', '<UP>');
    const bars = '\\[#{23}\\.{7}\\] {2}75% cloud-a 3\\.0/4\\.0 GiB 100 MiB/s ETA 00:00:00:11<EL>\n'
      + '\\[#{8}\\.{22}\\] {2}25% cloud-b 1\\.0/4\\.0 GiB 100 MiB/s ETA 00:00:00:31<EL>';
    // Each redraw: back to the start of the line, up one line to the first bar, both bars again.
    assert.match(shown, new RegExp(`(<CR><UP>${bars})+\\n`));
    assert.match(shown, /^Following build ubuntu-jammy-0000000001\nFollowing 2 uploads of ubuntu-jammy-0000000001: cloud-a, cloud-b\n/);
    assert.match(shown, /\nStopped following the uploads of ubuntu-jammy-0000000001; the server goes on with them\n$/);
  });
});
