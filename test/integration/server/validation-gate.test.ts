/**
 * The validation gate end to end (issue 14 §2, §5) on real parts: gearmand, an in-process
 * builder (its DIB command copies a prepared qcow2: the real DIB image of
 * test/support/qemu-image.ts, or a blank one), and nodepool-server in this process with a
 * `driver: qemu` provider whose diskimages have `validate:`. Its subject is the gate, not the
 * boot: the provider's `qemu-binary:` resumes guests of the bootable image from the run's saved
 * guest (test/support/qemu-saved-guest.ts), seconds each, and boots any other image for real.
 *   1. diskimage `deb`: validated by a guest plus a passing command → ready;
 *   2. diskimage `debc` (at the same time): the command `test -e /nonexistent` fails → the
 *      upload fails with the exit status and its image is gone from the provider;
 *   (a blank `deb` build then fails validation within a 15 s boot-timeout, with the console
 *   tail in its reason, while upload 1 stays current: a real boot that fails in seconds)
 *   3. a node request for `deb` is served from upload 1, the previous ready upload.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readdir, readFile, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import yaml from 'js-yaml';
import { loadConfig } from '../../../lib/config/load.js';
import type { Config } from '../../../lib/config/schema.js';
import { QemuImageService } from '../../../lib/drivers/qemu/image-store.js';
import { waitFor } from '../../../lib/lifecycle.js';
import type { NodeRecord, UploadRecord, UploadState } from '../../../lib/store/models.js';
import { NodepoolServer } from '../../../server/main.js';
import { DibBuilder } from '../../../workers/builder/dib-builder.js';
import { startGearmand, type GearmandHandle } from '../../support/gearmand.js';
import { testImageServices } from '../../support/image-services.js';
import { bootableImage, COPY_DIB } from '../../support/qemu-image.js';
import { qemuResumeWrapper, savedGuest } from '../../support/qemu-saved-guest.js';
import { testLogger } from '../../support/test-log.js';


const COMMAND_OK = 'test -e /etc/os-release && echo validated';
const COMMAND_BAD = 'test -e /nonexistent';

void describe('validation gate: uploads booted and checked on a qemu provider before use', { timeout: 2_400_000 }, () => {
  let dir: string;
  let gearmand: GearmandHandle;
  let builder: DibBuilder;
  let server: NodepoolServer;
  let configPath: string;
  let imageDir: string;
  let vmStateDir: string;
  let key: string;
  let qemuBinary: string;
  let bootTimeout = 600;
  let good: UploadRecord;
  const seen = new Map<string, Set<UploadState>>();
  const validationNodes = new Map<string, NodeRecord>();
  let watching = true;
  let watcher: Promise<void> | undefined;
  const t0 = Date.now();
  const elapsed = (): string => `${((Date.now() - t0) / 1000).toFixed(0)} s`;

  const render = (): string => yaml.dump({
    'gearman-servers': [{ host: '127.0.0.1', port: gearmand.port }],
    'state-dir': path.join(dir, 'state'),
    'images-dir': path.join(dir, 'images'),
    'build-log-dir': path.join(dir, 'logs'),
    // No retry of a failed upload during the test: each would be another boot.
    'image-lifecycle': { interval: 1, 'retry-delay': 3600, 'max-retry-delay': 7200, 'build-timeout-grace': 5, 'leak-check-interval': 2, 'stray-grace': 2 },
    launcher: { interval: 0.5, 'delete-interval': 0.5, 'cleanup-interval': 2, 'session-ttl': 10 },
    labels: [{ name: 'vm' }, { name: 'vmc' }],
    diskimages: ['deb', 'debc'].map((name) => ({
      name, elements: ['copy'], release: 'bookworm', formats: ['qcow2'], 'dib-cmd': path.join(dir, 'copy-dib'),
      'env-vars': { COPY_DIB_SOURCE: path.join(dir, `${name}-source.qcow2`) },
    })),
    providers: [{
      name: 'vms', driver: 'qemu', 'image-dir': imageDir, 'state-dir': vmStateDir, accel: 'auto', 'boot-timeout': bootTimeout,
      'qemu-binary': qemuBinary, username: 'debian', 'authorized-keys': `${key}.pub`,
      diskimages: [
        { name: 'deb', validate: { command: COMMAND_OK, timeout: 900, 'private-key': key } },
        { name: 'debc', validate: { command: COMMAND_BAD, label: 'vmc', timeout: 900, 'private-key': key } },
      ],
      pools: [{
        name: 'main', 'max-servers': 4,
        labels: [{ name: 'vm', diskimage: 'deb', memory: 1024, cpus: 1 }, { name: 'vmc', diskimage: 'debc', memory: 1024, cpus: 1 }],
      }],
    }],
  });

  async function reconfigure(): Promise<Config> {
    await writeFile(configPath, render());
    const config = loadConfig(configPath);
    builder.reconfigure(config);
    server.reconfigure(config);
    await server.launcher.reconfigure();
    return config;
  }

  async function qemuPids(): Promise<number[]> {
    const out: number[] = [];
    for (const name of await readdir('/proc')) {
      if (!/^\d+$/.test(name)) continue;
      const cmd = await readFile(`/proc/${name}/cmdline`, 'utf8').catch(() => '');
      if (cmd.startsWith('qemu-system') && cmd.includes(vmStateDir)) out.push(Number(name));
    }
    return out;
  }

  const upload = (diskimage: string, pred: (u: UploadRecord) => boolean, what: string, timeoutMs: number): Promise<UploadRecord> =>
    waitFor(async () => (await server.store.listUploads({ diskimage, provider: 'vms' })).find(pred), { timeoutMs, what, intervalMs: 500 });

  before(async () => {
    const image = await bootableImage();
    const saved = await savedGuest();
    dir = await mkdtemp(path.join(tmpdir(), 'validation-gate-'));
    qemuBinary = await qemuResumeWrapper(saved, dir);
    imageDir = path.join(dir, 'vm-images');
    vmStateDir = path.join(dir, 'vm-state');
    key = path.join(dir, 'id_ed25519');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'validation-gate-test', '-f', key]);
    await writeFile(path.join(dir, 'copy-dib'), COPY_DIB);
    await chmod(path.join(dir, 'copy-dib'), 0o755);
    await symlink(image.path, path.join(dir, 'deb-source.qcow2'));
    await symlink(image.path, path.join(dir, 'debc-source.qcow2'));
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', path.join(dir, 'blank.qcow2'), '256M']);
    gearmand = await startGearmand();
    configPath = path.join(dir, 'nodepool.yaml');
    await writeFile(configPath, render());
    const config = loadConfig(configPath);
    const log = testLogger();
    builder = new DibBuilder({
      config, log, hostname: 'builder-a', uploadWorkers: 2, env: { PATH: process.env.PATH, HOME: process.env.HOME },
      reconnect: { initialMs: 50, maxMs: 500 }, killGraceMs: 2000, imageServices: testImageServices(() => undefined, log),
    });
    await builder.start();
    server = await NodepoolServer.create({ config, log, hostname: 'validation-test', imageServices: testImageServices(() => undefined, log) });
    // Every state each upload passes through, and every validation node, as the test goes.
    watcher = (async () => {
      while (watching) {
        for (const u of await server.store.listUploads().catch(() => [])) {
          const states = seen.get(u.id) ?? new Set<UploadState>();
          states.add(u.state);
          seen.set(u.id, states);
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
    await builder?.stop({ abortAfterMs: 2000 });
    await gearmand?.stop();
    const left = vmStateDir ? await qemuPids() : [];
    for (const pid of left) process.kill(pid, 'SIGKILL');
    await rm(dir, { recursive: true, force: true });
    assert.deepEqual(left, [], 'no QEMU of this test left running');
  });

  it('validates by booting and running the command: ready; a failing command fails its upload and deletes its image', async () => {
    good = await upload('deb', (u) => u.state === 'ready', 'deb upload validated and ready', 1_200_000);
    console.log(`# deb upload ${good.id} validated and ready at ${elapsed()}`);
    const bad = await upload('debc', (u) => u.state === 'failed', 'debc upload failed validation', 1_200_000);
    console.log(`# debc upload ${bad.id} failed validation at ${elapsed()}: ${bad.reason}`);
    // The watcher samples every 250 ms: it saw the upload validate (for a minute) and never fail; it was ready when waited for.
    assert.ok(seen.get(good.id)?.has('validating'), `states seen: ${[...(seen.get(good.id) ?? [])].join(', ')}`);
    assert.ok(!seen.get(good.id)?.has('failed'));
    assert.ok(seen.get(bad.id)?.has('validating'));
    assert.equal(good.reason, null);
    assert.match(bad.reason ?? '', /^validation: command "test -e \/nonexistent" exited 1/);
    // The validation nodes booted exactly their uploads, were never handed out, and are deleted by the deleter.
    const byUpload = new Map([...validationNodes.values()].map((n) => [n.validatesUpload, n]));
    for (const u of [good, bad]) {
      const n = byUpload.get(u.id);
      assert.ok(n, `a validation node of upload ${u.id}`);
      assert.equal(n.allocatedTo, `validation-${u.id}`);
      assert.equal(n.image, u.id);
    }
    await waitFor(async () => (await server.store.listNodes()).length === 0, { timeoutMs: 60_000, what: 'validation nodes deleted', intervalMs: 250 });
    // The failed upload's image is gone from the provider; its record stays failed with the reason.
    const images = new QemuImageService({ imageDir, log: testLogger() });
    await waitFor(async () => !(await images.list()).some((i) => i.externalId === bad.externalId), { timeoutMs: 30_000, what: 'the failed image deleted' });
    assert.ok(!existsSync(images.imagePath(bad.externalId ?? 'none')));
    assert.ok(existsSync(images.imagePath(good.externalId ?? 'none')), 'the validated image stays');
    assert.equal((await server.store.getUpload(bad.id))?.state, 'failed');
  });

  it('rejects an unbootable build with the console tail while the previous ready upload stays current', async () => {
    bootTimeout = 15;
    await unlink(path.join(dir, 'deb-source.qcow2'));
    await symlink(path.join(dir, 'blank.qcow2'), path.join(dir, 'deb-source.qcow2'));
    await reconfigure();
    const started = Date.now();
    await server.store.requestBuild('deb');
    const blank = await upload('deb', (u) => u.id > good.id && u.state === 'failed', 'the blank build\'s upload failed validation', 300_000);
    console.log(`# blank deb upload ${blank.id} rejected ${((Date.now() - started) / 1000).toFixed(0)} s after the build request; reason:\n${blank.reason}`);
    assert.ok(seen.get(blank.id)?.has('validating'));
    assert.match(blank.reason ?? '', /^validation: node \d+ did not boot: .*within boot-timeout 15 s/s);
    assert.match(blank.reason ?? '', /--- console tail ---\n[\s\S]*(bootable|Boot failed)/i);
    assert.equal((await server.store.getUpload(good.id))?.state, 'ready', 'the previous ready upload stays current');
    const images = new QemuImageService({ imageDir, log: testLogger() });
    await waitFor(async () => !(await images.list()).some((i) => i.externalId === blank.externalId), { timeoutMs: 30_000, what: 'the blank image deleted' });
  });

  it('serves a node request from the previous ready upload', async () => {
    bootTimeout = 600;
    await reconfigure();
    const request = await server.store.createRequest({ labels: ['vm'], requestor: 'validation-test' });
    const done = await waitFor(async () => {
      const r = await server.store.getRequest(request.id);
      return r && (r.state === 'fulfilled' || r.state === 'failed') ? r : undefined;
    }, { timeoutMs: 900_000, what: `request ${request.id} done`, intervalMs: 500 });
    assert.equal(done.state, 'fulfilled', done.reason ?? '');
    const node = await server.store.getNode(done.nodes[0] ?? '');
    console.log(`# request served at ${elapsed()} by node ${node?.id} from upload ${node?.image}`);
    assert.equal(node?.image, good.id, 'booted from the validated upload, not the rejected newer one');
    assert.equal(node?.validatesUpload ?? null, null);
    await server.store.updateNode(node?.id ?? '', { state: 'used' });
    await server.store.deleteRequest(request.id);
    await waitFor(async () => (await server.store.listNodes()).length === 0, { timeoutMs: 60_000, what: 'the used node deleted', intervalMs: 250 });
    const maxNodeId = Math.max(...[...validationNodes.keys(), node?.id ?? '0'].map(Number));
    console.log(`# node records created: ${maxNodeId} (validation nodes: ${validationNodes.size}); test wall time ${elapsed()}`);
  });
});
