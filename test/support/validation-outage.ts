/**
 * The fault scenario "ZooKeeper killed mid-validation" (test/faults/zookeeper-outage-validation-*):
 * a `driver: qemu` provider validates a new upload of the real bootable Debian image of
 * test/support/qemu-image.ts (copied by a DIB stand-in), nodepool-server and nodepool-builder
 * run as processes on a ZooKeeper store, and ZooKeeper is killed (SIGKILL) while the validation
 * node's VM starts (the upload `validating`, the node `building`, QEMU running), left down for
 * the outage, then started again on the same port and data. The boot is not the subject: the
 * provider's `qemu-binary:` resumes the guest from the run's saved, booted guest
 * (test/support/qemu-saved-guest.ts) and holds its start open until ZooKeeper is down, so the
 * launch returns during the outage as a boot would (a real boot took 110-150 CPU-seconds). The
 * server must never exit, the upload must end validated and ready (on a new validation node
 * if the first was given up), every validation node deleted and no QEMU of the provider left
 * running, and no image left in the provider that no ready upload names.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { execFileSync } from 'node:child_process';
import { chmod, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import yaml from 'js-yaml';
import { loadConfig } from '../../lib/config/load.js';
import { waitFor } from '../../lib/lifecycle.js';
import type { UploadRecord } from '../../lib/store/models.js';
import { openStore } from '../../lib/store/open-store.js';
import { recordFault } from './fault-report.js';
import { nodeScript } from './node-command.js';
import { startGearmand } from './gearmand.js';
import { runningProcesses, startProcess } from './processes.js';
import { bootableImage, COPY_DIB, QEMU_TEST_USER } from './qemu-image.js';
import { qemuResumeWrapper, savedGuest } from './qemu-saved-guest.js';
import { startZooKeeper, type ZooKeeperHandle } from './zookeeper.js';

/** The server's ZooKeeper session (s): a 60 s outage loses it; a 10 s one keeps it unless ZooKeeper's restart is slow (at load it was not kept). */
const SESSION_TIMEOUT_S = 20;
const ROOT = path.resolve('.');

/** Runs the scenario once with ZooKeeper down `outageS` seconds; records its fault row, then asserts. */
export async function zookeeperOutageMidValidation(zk: ZooKeeperHandle, outageS: number): Promise<void> {
  const image = (await bootableImage()).path;
  const saved = await savedGuest();
  const dir = await mkdtemp(path.join(tmpdir(), 'nodepool-zk-validation-'));
  // While this file exists a resumed VM's start stays in progress (at most 35 s): removed once ZooKeeper is down.
  const holdBoot = path.join(dir, 'hold-boot');
  await writeFile(holdBoot, '');
  const qemuBinary = await qemuResumeWrapper(saved, dir, { holdWhile: holdBoot });
  const key = path.join(dir, 'id_ed25519');
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'zk-validation-fault', '-f', key]);
  await writeFile(path.join(dir, 'copy-dib'), COPY_DIB);
  await chmod(path.join(dir, 'copy-dib'), 0o755);
  await symlink(image, path.join(dir, 'deb-source.qcow2'));
  const imageDir = path.join(dir, 'vm-images');
  const gearmand = await startGearmand();
  const configPath = path.join(dir, 'nodepool.yaml');
  await writeFile(configPath, yaml.dump({
    'gearman-servers': [{ host: '127.0.0.1', port: gearmand.port }],
    'zookeeper-servers': [{ host: '127.0.0.1', port: zk.port, chroot: `/validation-${outageS}` }],
    'zookeeper-timeout': SESSION_TIMEOUT_S,
    'state-dir': path.join(dir, 'state'),
    'images-dir': path.join(dir, 'images'),
    'build-log-dir': path.join(dir, 'logs'),
    'image-lifecycle': { interval: 1, 'retry-delay': 5, 'max-retry-delay': 10, 'build-timeout-grace': 5, 'leak-check-interval': 2 },
    launcher: { interval: 0.5, 'delete-interval': 0.5, 'cleanup-interval': 2, 'session-ttl': SESSION_TIMEOUT_S },
    labels: [{ name: 'vm' }],
    diskimages: [{
      name: 'deb', elements: ['copy'], release: 'bookworm', formats: ['qcow2'], 'dib-cmd': path.join(dir, 'copy-dib'),
      'env-vars': { COPY_DIB_SOURCE: path.join(dir, 'deb-source.qcow2') },
    }],
    providers: [{
      name: 'vms', driver: 'qemu', 'qemu-binary': qemuBinary, 'image-dir': imageDir, 'state-dir': path.join(dir, 'vm-state'), accel: 'auto', 'boot-timeout': 600,
      username: QEMU_TEST_USER, 'authorized-keys': `${key}.pub`,
      diskimages: [{ name: 'deb', validate: { command: 'test -e /etc/os-release', timeout: 900, 'private-key': key } }],
      pools: [{ name: 'main', 'max-servers': 2, labels: [{ name: 'vm', diskimage: 'deb', memory: 1024, cpus: 1 }] }],
    }],
  }));
  const store = await openStore(loadConfig(configPath));
  const env = { ...process.env, NODEPOOL_CONFIG: '' };
  const daemon = (name: string, bin: string, extra: string[]) => startProcess(name, process.execPath, [
    ...nodeScript(bin), '-c', configPath, '--log-level', 'debug', ...extra,
  ], { cwd: ROOT, logFile: path.join(dir, `${name}.log`), env });
  const builder = daemon('nodepool-builder', 'bin/nodepool-builder.ts', ['--hostname', 'builder-zkv']);
  const server = daemon('nodepool-server', 'bin/nodepool-server.ts', ['--hostname', 'server-zkv', '--no-webapp']);
  const tails = async (): Promise<string> => {
    const tail = async (f: string): Promise<string> => (await readFile(path.join(dir, f), 'utf8').catch(() => '')).trimEnd().split('\n').slice(-20).join('\n');
    return `server (${server.alive() ? 'running' : 'exited'}):\n${await tail('nodepool-server.log')}\nbuilder:\n${await tail('nodepool-builder.log')}`;
  };
  try {
    await waitFor(async () => {
      const validating = (await store.listUploads({ diskimage: 'deb' })).some((u) => u.state === 'validating');
      const booting = (await store.listNodes()).some((n) => n.validatesUpload && n.state === 'building');
      return validating && booting && (await qemuOf(dir)).length > 0;
    }, { timeoutMs: 300_000, what: 'a validation VM starting', intervalMs: 250 }).catch(async (err: Error) => assert.fail(`${err.message}\n${await tails()}`));
    const t0 = Date.now();
    await zk.kill();
    await rm(holdBoot, { force: true });
    await delay(outageS * 1000);
    assert.ok(server.alive(), `nodepool-server exited during the outage:\n${await tails()}`);
    await zk.restart();

    let ready: UploadRecord | undefined;
    let stuck: Error | undefined;
    try {
      ready = await waitFor(async () => (await store.listUploads({ diskimage: 'deb' })).find((u) => u.state === 'ready'), {
        // Two VM starts when the outage costs the session (the first node is given up); when they
        // were real boots under TCG, at load 8-10 the second took 418 s and its command 70 s.
        timeoutMs: 840_000, what: 'the upload validated and ready', intervalMs: 500,
      });
      await waitFor(async () => (await store.listNodes()).length === 0 && (await qemuOf(dir)).length === 0, {
        timeoutMs: 120_000, what: 'every validation node deleted and its VM gone', intervalMs: 500,
      });
    } catch (err) {
      stuck = err as Error;
    }
    const recoverMs = stuck ? null : Date.now() - t0;
    // Leaked (after 30 s for deletes in progress): QEMU of the provider, or an image no ready upload names.
    const strays = async (): Promise<string[]> => {
      const named = new Set((await store.listUploads()).filter((u) => u.state === 'ready').map((u) => u.externalId));
      return [
        ...(await qemuOf(dir)).map((pid) => `qemu ${pid}`),
        ...(await readdir(imageDir).catch(() => [] as string[])).filter((f) => f.endsWith('.qcow2') && !named.has(f.replace(/\.qcow2$/, ''))),
      ];
    };
    let leaks: string[] = [];
    await waitFor(async () => (leaks = await strays()).length === 0, { timeoutMs: 30_000, what: 'no stray VM or image' }).catch(() => undefined);
    recordFault({
      scenario: `ZooKeeper killed ${outageS} s mid-validation`, runs: 1, recovered: stuck ? 0 : 1, lost: 0, leaked: leaks.length, recoverMs,
      ...(ready ? { notes: `upload ${ready.id} validated after the outage` } : {}),
    });
    if (stuck) assert.fail(`not recovered: ${stuck.message}; uploads ${JSON.stringify(await store.listUploads())}\n${await tails()}`);
    assert.deepEqual(leaks, [], 'nothing leaked');
    assert.ok(server.alive(), `nodepool-server exited after the outage:\n${await tails()}`);
  } finally {
    await server.stop();
    await builder.stop();
    await store.close();
    await gearmand.stop();
    for (const pid of await qemuOf(dir)) process.kill(pid, 'SIGKILL');
    if (!process.env.NODEPOOL_FAULTS_KEEP) await rm(dir, { recursive: true, force: true });
  }
}

/** pids of QEMU processes whose command line names `dir` (the scenario's VMs). */
async function qemuOf(dir: string): Promise<number[]> {
  const out: number[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const cmd = await readFile(`/proc/${name}/cmdline`, 'utf8').catch(() => '');
    if (cmd.startsWith('qemu-system') && cmd.includes(dir)) out.push(Number(name));
  }
  return out;
}

/** The test file of one outage length: its own ZooKeeper, the scenario once (one file per length keeps each under the runner's 25-minute file bound). */
export function describeValidationOutage(outageS: number): void {
  describe(`faults: ZooKeeper killed ${outageS} s mid-validation`, () => {
    let zk: ZooKeeperHandle;

    before(async () => {
      zk = await startZooKeeper();
    });
    after(async () => {
      await zk?.stop();
      assert.deepEqual(runningProcesses().map((p) => p.name), []);
    });

    it('rides it out: the upload ends validated, the server never exits, no VM or image left', { timeout: 1_380_000 }, async () => {
      await zookeeperOutageMidValidation(zk, outageS);
    });
  });
}
