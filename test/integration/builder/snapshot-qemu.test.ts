/**
 * `builder: snapshot` on a qemu provider, fully real: the build instance boots the suite's
 * bootable Debian image under QEMU, the setup runs over SSH (a marker file, a user), the
 * instance is sealed and powered off, and its disk becomes the build's qcow2. It is then an
 * ordinary build: uploaded to the loopback Glance (bytes checked) and to a qemu provider, and a
 * VM booted from the qemu provider's upload shows the marker and the user, and the build's key
 * is not in it. Faults: a setup that exits non-zero, a builder stopped (SIGTERM) mid-setup, and
 * a builder killed with -9 mid-setup (its next start deletes the VM).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { chmod, readdir, readFile, writeFile } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import path from 'node:path';
import { fn } from '../../../lib/gearman/functions.js';
import type { GearmanClient } from '../../../lib/gearman/client.js';
import { waitFor } from '../../../lib/lifecycle.js';
import { VmHost } from '../../../lib/drivers/qemu/vm-host.js';
import { keyscan } from '../../../lib/ssh/keyscan.js';
import { runSshCommand } from '../../../lib/ssh/ssh-command.js';
import { NodepoolBuilder } from '../../../workers/builder/nodepool-builder.js';
import { startGearmand, type GearmandHandle } from '../../support/gearmand.js';
import { recordFault } from '../../support/fault-report.js';
import { runningProcesses } from '../../support/processes.js';
import { bootableImage, QEMU_TEST_USER } from '../../support/qemu-image.js';
import { testImageServices } from '../../support/image-services.js';
import { useLoopbackCloud, type LoopbackCloud } from '../../support/openstack.js';
import {
  builderProcess, createBuilderEnv, glanceAdmin, loopbackProvider, runJob, testClient, testLogger, type BuilderEnv, type RawDiskimage,
} from '../../support/builder-env.js';

/** The setup: a marker with its argument and environment, and a user. */
const SETUP = `#!/bin/sh
set -eu
echo "setting up: $1"
echo "marker $1 $MARKER_NOTE" | sudo tee /etc/nodepool-snapshot-marker
sudo useradd --create-home snapuser
echo "setup done"
`;

describe('snapshot builds on a qemu provider (real QEMU, real guest)', { timeout: 1_500_000 }, () => {
  let gearmand: GearmandHandle;
  let cloud: LoopbackCloud;
  let env: BuilderEnv;
  let builder: NodepoolBuilder;
  let client: GearmanClient;
  let base: string;
  let stateDir: string;
  const log = testLogger();

  const diskimage = (name: string, setup: string[]): RawDiskimage => ({
    name, builder: 'snapshot', formats: ['qcow2'], 'build-timeout': 1200,
    snapshot: { provider: 'vms', 'base-image': base, setup, 'env-vars': { MARKER_NOTE: 'from-env', API_TOKEN: 'tok-snap-s3cret' }, memory: 512 },
  });

  const newBuilder = (): NodepoolBuilder => new NodepoolBuilder({
    config: env.config, log, hostname: 'snap-builder', env: { PATH: process.env.PATH, HOME: process.env.HOME },
    reconnect: { initialMs: 50, maxMs: 500 }, imageServices: testImageServices(() => cloud.cloudsYamlPath, log),
    buildInstances: testImageServices(() => cloud.cloudsYamlPath, log).buildInstances,
  });

  /** VMs in the provider's build state dir (running or not). */
  const buildVms = async (): Promise<string[]> => readdir(path.join(stateDir, 'builds')).catch(() => []);

  /** Waits until build `id`'s slow setup runs on its one build VM; returns that VM's QEMU pid. */
  async function slowSetupRunning(id: string): Promise<number> {
    const logFile = `${env.buildLogDir}/${id}.log`;
    await waitFor(async () => /setup started/.test(await readFile(logFile, 'utf8').catch(() => '')), { timeoutMs: 1_100_000, intervalMs: 2000, what: 'the slow setup to start' });
    const left = await buildVms();
    assert.equal(left.length, 1);
    return Number((await readFile(path.join(stateDir, 'builds', left[0] as string, 'qemu.pid'), 'utf8')).trim());
  }

  before(async () => {
    base = (await bootableImage()).path;
    [gearmand, cloud] = await Promise.all([startGearmand({ jobRetries: 1 }), useLoopbackCloud()]);
    env = await createBuilderEnv({ gearmanPort: gearmand.port, cloud });
    stateDir = path.join(env.dir, 'vms');
    const setup = path.join(env.dir, 'prepare.sh');
    await writeFile(setup, SETUP);
    await chmod(setup, 0o755);
    const failing = path.join(env.dir, 'fail.sh');
    await writeFile(failing, '#!/bin/sh\necho "installing the frobnicator"\necho "frobnicator: not found" >&2\nexit 3\n');
    await chmod(failing, 0o755);
    const slow = path.join(env.dir, 'slow.sh');
    await writeFile(slow, '#!/bin/sh\necho "setup started"\nsleep 600\n');
    await chmod(slow, 0o755);
    await env.rewrite({
      diskimages: [diskimage('debian-snap', [setup, 'first']), diskimage('debian-fail', [failing]), diskimage('debian-slow', [slow])],
      providers: [{
        name: 'vms', driver: 'qemu', 'image-dir': path.join(env.dir, 'uploads'), 'state-dir': stateDir, accel: 'auto',
        'boot-timeout': 600, username: QEMU_TEST_USER, diskimages: [{ name: 'debian-snap' }],
      }, loopbackProvider('cloud', ['debian-snap'])],
    });
    builder = newBuilder();
    await builder.start();
    client = await testClient(gearmand.port);
  });

  after(async () => {
    await client?.stop();
    await builder?.stop({ abortAfterMs: 5000 });
    await gearmand?.stop();
    await cloud?.stop();
    await env?.remove();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  it('builds: boots the base, runs the setup over SSH, snapshots the powered-off disk, deletes the instance', async () => {
    const id = 'debian-snap-0000000001';
    const end = await runJob(client, fn.imageBuild('debian-snap'), { 'image-id': id }, { timeoutMs: 1_200_000 });
    const buildLog = await readFile(`${env.buildLogDir}/${id}.log`, 'utf8');
    assert.equal(end.type, 'complete', `${end.message}\n--- build log tail ---\n${buildLog.slice(-3000)}`);
    assert.match(buildLog, /setting up: first/);
    assert.match(buildLog, /setup done/);
    assert.doesNotMatch(buildLog, /tok-snap-s3cret/, 'a secret env-var never reaches the build log');
    assert.deepEqual(end.statuses.map((s) => s.join('/')), ['1/4', '2/4', '3/4', '4/4']);
    const file = `${env.imagesDir}/${id}.qcow2`;
    const info = JSON.parse(execFileSync('qemu-img', ['info', '--output=json', file], { encoding: 'utf8' })) as Record<string, unknown>;
    assert.equal(info.format, 'qcow2');
    assert.equal(info['backing-filename'], undefined, 'a whole image, not an overlay of the base');
    assert.deepEqual(await buildVms(), [], 'the build instance is deleted');
    const md5 = createHash('md5');
    await pipeline(createReadStream(file), md5);
    const sum = md5.digest('hex');

    // An ordinary build from here on: uploaded to Glance (the same bytes) and to the qemu provider.
    const toGlance = await runJob(client, fn.imageUpload(id), { 'image-name': 'debian-snap', provider: 'cloud' }, { timeoutMs: 600_000 });
    assert.equal(toGlance.type, 'complete', toGlance.message);
    const glance = await glanceAdmin(cloud);
    const image = await glance.glance.getImage(String(toGlance.json?.['external-id']));
    assert.equal(image?.status, 'active');
    assert.equal(image?.checksum, sum);
    await glance.delete(image?.id ?? '');
    const toQemu = await runJob(client, fn.imageUpload(id), { 'image-name': 'debian-snap', provider: 'vms' }, { timeoutMs: 600_000 });
    assert.equal(toQemu.type, 'complete', toQemu.message);
    // The qemu image store keeps an upload as <image-dir>/<external id>.qcow2.
    const uploaded = path.join(env.dir, 'uploads', `${String(toQemu.json?.['external-id'])}.qcow2`);
    const stored = JSON.parse(execFileSync('qemu-img', ['info', '--output=json', uploaded], { encoding: 'utf8' })) as Record<string, unknown>;
    assert.equal(stored.format, 'qcow2', `the qemu provider's upload ${uploaded}`);

    // A VM booted from the qemu provider's upload, as its nodes are: a fresh cloud-init run gives it our key.
    const key = path.join(env.dir, 'node-key');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'node-test', '-f', key]);
    const vms = new VmHost({ stateDir: path.join(env.dir, 'check-vms'), provider: 'check', qemuBinary: 'qemu-system-x86_64', log });
    try {
      const vm = await vms.create('check', {
        nodeId: '1', pool: 'p', label: 'l', image: id, imagePath: uploaded, hostname: 'from-snapshot', accel: 'tcg', memory: 512, cpus: 1,
        authorizedKeys: [(await readFile(`${key}.pub`, 'utf8')).trim()],
      });
      const hostKeys = await keyscan('127.0.0.1', vm.record.port, { timeoutMs: 900_000, connectTimeoutMs: 15_000, retryMs: 2000 });
      let out = '';
      await waitFor(async () => {
        const r = await runSshCommand({
          host: '127.0.0.1', port: vm.record.port, user: QEMU_TEST_USER, privateKey: key, hostKeys, timeoutMs: 120_000,
          command: 'cat /etc/nodepool-snapshot-marker; id -un snapuser; cat ~/.ssh/authorized_keys',
        });
        out = r.outputTail;
        return r.exitCode === 0;
      }, { timeoutMs: 600_000, intervalMs: 5000, what: 'an SSH login to the VM booted from the snapshot' });
      assert.match(out, /^marker first from-env$/m);
      assert.match(out, /^snapuser$/m);
      assert.match(out, /node-test/);
      assert.doesNotMatch(out, /nodepool-build-/, 'the build key is not authorized in the image');
    } finally {
      await vms.destroy('check');
    }
  });

  it('fails a build whose setup exits non-zero with its last lines, leaving no instance and no file', async () => {
    const id = 'debian-fail-0000000001';
    const started = Date.now();
    const end = await runJob(client, fn.imageBuild('debian-fail'), { 'image-id': id }, { timeoutMs: 1_200_000 });
    const took = Date.now() - started;
    const [vmsLeft, filesLeft] = [await buildVms(), (await readdir(env.imagesDir)).filter((f) => f.startsWith(id))];
    recordFault({
      scenario: 'snapshot build: the setup exits non-zero (qemu)', runs: 1, recovered: end.type === 'fail' ? 1 : 0, lost: 0, leaked: vmsLeft.length + filesLeft.length, recoverMs: took,
      notes: 'time from the build job to its WORK_FAIL with the setup\'s last lines, the VM deleted (a real boot under TCG included)',
    });
    assert.equal(end.type, 'fail');
    assert.match(String(end.message), /the setup on build instance \S+ exited with 3: .*frobnicator: not found/);
    assert.deepEqual(vmsLeft, []);
    assert.deepEqual(filesLeft, []);
  });

  it('a builder stopped (SIGTERM) mid-setup deletes the build instance before it exits', async () => {
    const id = 'debian-slow-0000000002';
    await builder.stop({ abortAfterMs: 5000 });
    const proc = builderProcess(env, { hostname: 'snap-builder', shutdownTimeoutS: 60 });
    try {
      const job = runJob(client, fn.imageBuild('debian-slow'), { 'image-id': id }, { timeoutMs: 1_200_000 });
      const pid = await slowSetupRunning(id);
      const stopped = Date.now();
      await proc.stop(120_000);
      const stopMs = Date.now() - stopped;
      assert.notEqual((await proc.exited).signal, 'SIGKILL', 'the builder shut down within its own bound');
      assert.notEqual((await job).type, 'complete');
      assert.deepEqual(await buildVms(), [], 'deleted before the builder exited');
      assert.equal(await exited(pid), true, `its QEMU ${pid} has exited`);
      assert.deepEqual((await readdir(env.imagesDir)).filter((f) => f.startsWith(id)), [], 'no partial file');
      recordFault({
        scenario: 'snapshot build: builder SIGTERM mid-setup (qemu)', runs: 1, recovered: 1, lost: 0, leaked: 0, recoverMs: stopMs,
        notes: 'time from SIGTERM to the builder\'s exit, the build VM deleted before it (shutdown-timeout 60 s)',
      });
    } finally {
      await proc.kill();
      builder = newBuilder();
      await builder.start();
    }
  });

  it('after a kill -9 mid-setup, the next start of the builder deletes the build instance it left', async () => {
    const id = 'debian-slow-0000000001';
    // nodepool-builder itself, as a process to kill; the in-process builder (same images dir, so
    // the same builder id) is its next start.
    await builder.stop({ abortAfterMs: 5000 });
    const proc = builderProcess(env, { hostname: 'snap-builder' });
    const job = runJob(client, fn.imageBuild('debian-slow'), { 'image-id': id }, { timeoutMs: 1_200_000 });
    const pid = await slowSetupRunning(id);
    await proc.kill();
    // gearmand (--job-retries=1) fails the job whose worker died; nobody builds it again.
    assert.equal((await job).type, 'fail');
    assert.equal(await exited(pid), false, 'the build VM outlived its builder');
    const restarted = Date.now();
    builder = newBuilder();
    await builder.start();
    const startMs = Date.now() - restarted;
    assert.deepEqual(await buildVms(), [], 'deleted at the next start');
    assert.equal(await exited(pid), true, `its QEMU ${pid} has exited`);
    recordFault({
      scenario: 'snapshot build: builder kill -9 mid-setup (qemu)', runs: 1, recovered: 1, lost: 0, leaked: 0, recoverMs: startMs,
      notes: 'the VM outlives the builder; its next start deletes it before taking jobs (time of that start); bound: the next start',
    });
  });
});

/**
 * Whether process `pid` has exited: gone, or a zombie. A daemonized QEMU's parent is the
 * machine's init, which may reap it late or never (this sandbox's does not), so a zombie counts.
 */
async function exited(pid: number): Promise<boolean> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}
