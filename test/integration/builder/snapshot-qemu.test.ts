/**
 * `builder: snapshot` on a qemu provider, fully real: the build instance is a guest of the
 * suite's bootable Debian image (resumed from the run's saved guest, test/support/qemu-saved-guest.ts:
 * its boot is not the subject here), the setup runs over SSH (a marker file, a user), the
 * instance is sealed and powered off, and its disk becomes the build's qcow2. It is then an
 * ordinary build of an in-process nodepool-server: uploaded to the loopback Glance (bytes
 * checked) and to a qemu provider, validated by the gate on a node booted from it for real, a
 * min-ready node launched from it by the launcher shows the marker and the user (and not the
 * build's key) over SSH, and the build is pinned, unpinned and revoked like any other. Faults:
 * a setup that exits non-zero, a build that exceeds its build-timeout, a builder stopped
 * (SIGTERM) mid-setup, and a builder killed with -9 mid-setup (its next start deletes the VM).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { chmod, readdir, readFile, writeFile } from 'node:fs/promises';
import yaml from 'js-yaml';
import { pipeline } from 'node:stream/promises';
import path from 'node:path';
import { pauseImage } from '../../../lib/actions/image-pause.js';
import { pinImage, unpinImage } from '../../../lib/actions/image-pin.js';
import { revokeBuild } from '../../../lib/actions/image-revoke.js';
import { loadConfig } from '../../../lib/config/load.js';
import type { Config } from '../../../lib/config/schema.js';
import { fn } from '../../../lib/gearman/functions.js';
import type { GearmanClient } from '../../../lib/gearman/client.js';
import { waitFor } from '../../../lib/lifecycle.js';
import { runSshCommand } from '../../../lib/ssh/ssh-command.js';
import type { NodeRecord, UploadRecord, UploadState } from '../../../lib/store/models.js';
import { NodepoolServer } from '../../../server/main.js';
import { NodepoolBuilder } from '../../../workers/builder/nodepool-builder.js';
import { startGearmand, type GearmandHandle } from '../../support/gearmand.js';
import { recordFault } from '../../support/fault-report.js';
import { runningProcesses } from '../../support/processes.js';
import { bootableImage, QEMU_TEST_USER } from '../../support/qemu-image.js';
import { qemuResumeWrapper, savedGuest, SAVED_GUEST_CPUS, SAVED_GUEST_MEMORY } from '../../support/qemu-saved-guest.js';
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

describe('snapshot builds on a qemu provider (real QEMU, real guest)', { timeout: 2_400_000 }, () => {
  let gearmand: GearmandHandle;
  let cloud: LoopbackCloud;
  let env: BuilderEnv;
  let builder: NodepoolBuilder;
  let client: GearmanClient;
  let base: string;
  let stateDir: string;
  let server: NodepoolServer;
  let serverConfig: Config;
  let nodeKey: string;
  const uploadStates = new Map<string, Set<UploadState>>();
  const validationNodes = new Map<string, NodeRecord>();
  let watching = true;
  let watcher: Promise<void> | undefined;
  const log = testLogger();

  /** A snapshot diskimage on `vms`; its build instance has the saved guest's size, so it is resumed, not booted. */
  const diskimage = (name: string, setup: string[], o: { base?: string; buildTimeoutS?: number } = {}): RawDiskimage => ({
    name, builder: 'snapshot', formats: ['qcow2'], 'build-timeout': o.buildTimeoutS ?? 1200,
    snapshot: {
      provider: 'vms', 'base-image': o.base ?? base, setup, 'env-vars': { MARKER_NOTE: 'from-env', API_TOKEN: 'tok-snap-s3cret' },
      memory: SAVED_GUEST_MEMORY, cpus: SAVED_GUEST_CPUS,
    },
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
    const saved = await savedGuest();
    [gearmand, cloud] = await Promise.all([startGearmand({ jobRetries: 1 }), useLoopbackCloud()]);
    env = await createBuilderEnv({ gearmanPort: gearmand.port, cloud });
    stateDir = path.join(env.dir, 'vms');
    const qemuBinary = await qemuResumeWrapper(saved, env.dir);
    nodeKey = path.join(env.dir, 'node-key');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'snapshot-node-test', '-f', nodeKey]);
    const blank = path.join(env.dir, 'blank.qcow2');
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', blank, '256M']);
    const setup = path.join(env.dir, 'prepare.sh');
    await writeFile(setup, SETUP);
    await chmod(setup, 0o755);
    const failing = path.join(env.dir, 'fail.sh');
    await writeFile(failing, '#!/bin/sh\necho "installing the frobnicator"\necho "frobnicator: not found" >&2\nexit 3\n');
    await chmod(failing, 0o755);
    const slow = path.join(env.dir, 'slow.sh');
    await writeFile(slow, '#!/bin/sh\necho "setup started"\nsleep 600\n');
    await chmod(slow, 0o755);
    const snap = diskimage('debian-snap', [setup, 'first']);
    const vms = {
      name: 'vms', driver: 'qemu', 'image-dir': path.join(env.dir, 'uploads'), 'state-dir': stateDir, accel: 'auto', 'qemu-binary': qemuBinary,
      'boot-timeout': 600, username: QEMU_TEST_USER, 'authorized-keys': `${nodeKey}.pub`,
    };
    await env.rewrite({
      diskimages: [snap, diskimage('debian-fail', [failing]), diskimage('debian-slow', [slow]), diskimage('debian-stall', [slow], { base: blank, buildTimeoutS: 20 })],
      providers: [{ ...vms, diskimages: [{ name: 'debian-snap' }] }, loopbackProvider('cloud', ['debian-snap'])],
    });
    builder = newBuilder();
    await builder.start();
    client = await testClient(gearmand.port);

    // The server builds debian-snap alone (the other diskimages are the builder's, for the fault cases).
    const serverConfigPath = path.join(env.dir, 'server.yaml');
    await writeFile(serverConfigPath, yaml.dump({
      'gearman-servers': [{ host: '127.0.0.1', port: gearmand.port }],
      'images-dir': env.imagesDir, 'build-log-dir': env.buildLogDir, 'state-dir': path.join(env.dir, 'server-state'),
      'clouds-file': cloud.cloudsYamlPath,
      // No retry of a failed upload and one build: each would be another boot.
      'image-lifecycle': { interval: 1, 'retry-delay': 3600, 'max-retry-delay': 7200, 'leak-check-interval': 5, 'stray-grace': 5 },
      launcher: { interval: 0.5, 'delete-interval': 0.5, 'cleanup-interval': 2, 'session-ttl': 10 },
      labels: [{ name: 'snap-vm', 'min-ready': 1 }],
      diskimages: [snap],
      providers: [{
        ...vms,
        diskimages: [{
          name: 'debian-snap',
          validate: { command: 'cat /etc/nodepool-snapshot-marker && id -un snapuser && ! grep -q nodepool-build- ~/.ssh/authorized_keys', timeout: 900, 'private-key': nodeKey },
        }],
        pools: [{ name: 'main', 'max-servers': 2, labels: [{ name: 'snap-vm', diskimage: 'debian-snap', memory: 1024, cpus: 1 }] }],
      }, loopbackProvider('cloud', ['debian-snap'])],
    }));
    serverConfig = loadConfig(serverConfigPath);
    server = await NodepoolServer.create({ config: serverConfig, log, hostname: 'snap-server', imageServices: testImageServices(() => cloud.cloudsYamlPath, log) });
    // Every state each upload passes through, and every validation node, as the test goes.
    watcher = (async () => {
      while (watching) {
        for (const u of await server.store.listUploads().catch(() => [])) {
          const states = uploadStates.get(u.id) ?? new Set<UploadState>();
          states.add(u.state);
          uploadStates.set(u.id, states);
        }
        for (const n of await server.store.listNodes().catch(() => [])) if (n.validatesUpload) validationNodes.set(n.id, n);
        await new Promise((r) => setTimeout(r, 250));
      }
    })();
  });

  after(async () => {
    watching = false;
    await watcher;
    await server?.stop();
    await client?.stop();
    await builder?.stop({ abortAfterMs: 5000 });
    await gearmand?.stop();
    await cloud?.stop();
    await env?.remove();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  it('builds for the server: boots the base, runs the setup over SSH, snapshots the powered-off disk, deletes the instance; then an ordinary build', async () => {
    // The server's lifecycle asks for the first build of debian-snap; uploads follow, then the gate.
    const ready = (provider: string): Promise<UploadRecord> => waitFor(async () => (await server.store.listUploads({ diskimage: 'debian-snap', provider }))
      .find((u) => u.state === 'ready'), { timeoutMs: 1_200_000, intervalMs: 1000, what: `a ready upload of debian-snap to ${provider}` });
    const [toQemu, toGlance] = await Promise.all([ready('vms'), ready('cloud')]);
    const build = await server.store.getBuild(toQemu.buildId);
    assert.equal(build?.state, 'ready');
    const id = toQemu.buildId;
    const buildLog = await readFile(`${env.buildLogDir}/${id}.log`, 'utf8');
    assert.match(buildLog, /setting up: first/);
    assert.match(buildLog, /setup done/);
    assert.doesNotMatch(buildLog, /tok-snap-s3cret/, 'a secret env-var never reaches the build log');
    const steps = [...buildLog.matchAll(/^.*snapshot build: (\S.*)$/gm)].map((m) => m[1]);
    assert.deepEqual(steps, ['booting', 'setup', 'powering off', 'snapshotting'], 'each step in the build log, in order');
    const file = `${env.imagesDir}/${id}.qcow2`;
    const info = JSON.parse(execFileSync('qemu-img', ['info', '--output=json', file], { encoding: 'utf8' })) as Record<string, unknown>;
    assert.equal(info.format, 'qcow2');
    assert.equal(info['backing-filename'], undefined, 'a whole image, not an overlay of the base');
    assert.deepEqual(await buildVms(), [], 'the build instance is deleted');

    // Uploaded to Glance (the same bytes) and to the qemu provider.
    const md5 = createHash('md5');
    await pipeline(createReadStream(file), md5);
    const glance = await glanceAdmin(cloud);
    const image = await glance.glance.getImage(String(toGlance.externalId));
    assert.equal(image?.status, 'active');
    assert.equal(image?.checksum, md5.digest('hex'));
    // The qemu image store keeps an upload as <image-dir>/<external id>.qcow2.
    const uploaded = path.join(env.dir, 'uploads', `${String(toQemu.externalId)}.qcow2`);
    const stored = JSON.parse(execFileSync('qemu-img', ['info', '--output=json', uploaded], { encoding: 'utf8' })) as Record<string, unknown>;
    assert.equal(stored.format, 'qcow2', `the qemu provider's upload ${uploaded}`);

    // The gate validated it on a node booted from it (its command checks the marker, the user, no build key).
    assert.ok(uploadStates.get(toQemu.id)?.has('validating'), `states seen: ${[...(uploadStates.get(toQemu.id) ?? [])].join(', ')}`);
    const validation = [...validationNodes.values()].find((n) => n.validatesUpload === toQemu.id);
    assert.equal(validation?.image, toQemu.id, 'a validation node booted from the upload');

    // The launcher's min-ready node, booted from it for real (cloud-init gives it the provider's key).
    const node = await waitFor(async () => (await server.store.listNodes()).find((n) => n.labels.includes('snap-vm') && n.state === 'ready' && !n.validatesUpload),
      { timeoutMs: 1_200_000, intervalMs: 1000, what: 'a ready min-ready node of snap-vm' });
    assert.equal(node.image, toQemu.id);
    const r = await runSshCommand({
      host: node.interfaceIp ?? '127.0.0.1', port: node.connectionPort, user: QEMU_TEST_USER, privateKey: nodeKey, hostKeys: node.hostKeys, timeoutMs: 300_000,
      command: 'cat /etc/nodepool-snapshot-marker; id -un snapuser; cat ~/.ssh/authorized_keys',
    });
    assert.equal(r.exitCode, 0, r.outputTail);
    assert.match(r.outputTail, /^marker first from-env$/m);
    assert.match(r.outputTail, /^snapuser$/m);
    assert.match(r.outputTail, /snapshot-node-test/);
    assert.doesNotMatch(r.outputTail, /nodepool-build-/, 'the build key is not authorized in the image');

    // Pinned and unpinned, paused and revoked like a DIB build: the idle node booted from it goes.
    const ctx = { store: server.store, config: serverConfig };
    const pin = await pinImage(ctx, { diskimage: 'debian-snap', buildId: id, reason: 'snapshot test' });
    assert.ok(pin.ok, JSON.stringify(pin));
    assert.deepEqual(pin.uploads.map((u) => u.provider).sort(), ['cloud', 'vms']);
    assert.ok((await unpinImage(ctx, { diskimage: 'debian-snap' })).ok);
    assert.ok((await pauseImage(ctx, { diskimage: 'debian-snap', reason: 'no rebuild after the revoke' })).ok);
    const revoked = await revokeBuild(ctx, { buildId: id, reason: 'snapshot test', nodes: 'delete-ready' });
    assert.ok(revoked.ok, JSON.stringify(revoked));
    assert.deepEqual(revoked.deletedNodes, [node.id]);
    await waitFor(async () => (await server.store.getNode(node.id)) === undefined, { timeoutMs: 120_000, intervalMs: 500, what: `node ${node.id} deleted` });
    assert.deepEqual((await server.store.listRevocations()).map((v) => v.buildId), [id]);
    // The fault cases below need no server (with its build revoked and paused, it has nothing to launch).
    watching = false;
    await watcher;
    await server.stop();
  });

  it('a build that exceeds its build-timeout fails naming it, leaving no instance and no file', async () => {
    // The base never boots (a blank disk), so the build is still waiting for SSH when its 20 s run out.
    const id = 'debian-stall-0000000001';
    const started = Date.now();
    const end = await runJob(client, fn.imageBuild('debian-stall'), { 'image-id': id }, { timeoutMs: 600_000 });
    const took = Date.now() - started;
    const [vmsLeft, filesLeft] = [await buildVms(), (await readdir(env.imagesDir)).filter((f) => f.startsWith(id))];
    recordFault({
      scenario: 'snapshot build: build-timeout while booting (qemu)', runs: 1, recovered: end.type === 'fail' ? 1 : 0, lost: 0, leaked: vmsLeft.length + filesLeft.length, recoverMs: took,
      notes: 'build-timeout 20 s, the base never answers SSH; time from the build job to its WORK_FAIL with the VM deleted',
    });
    assert.equal(end.type, 'fail');
    assert.match(String(end.message), /build exceeded build-timeout of 20 s/);
    assert.deepEqual(vmsLeft, []);
    assert.deepEqual(filesLeft, []);
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
    assert.deepEqual(end.statuses.map((s) => s.join('/')), ['1/4', '2/4'], 'WORK_STATUS: booting, then setup, where it failed');
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
