/**
 * The validation worker after a crash, on real parts (SQLite store, sessions and locks, the
 * qemu driver with real QEMU, the deleter): a validation left by a launcher whose session
 * lapsed is resumed — its stale node discarded and deleted, a new node booted while time
 * remains — or failed as timed out when none remains. The image is a blank qcow2 with a 5 s
 * boot-timeout, so no guest really boots: seconds, not minutes.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { qemuDriver } from '../../../lib/drivers/qemu/index.js';
import type { QemuProvider } from '../../../lib/drivers/qemu/provider.js';
import { waitFor } from '../../../lib/lifecycle.js';
import { nodeLock, uploadValidationLock } from '../../../lib/store/lock-names.js';
import { validationAllocation, type UploadRecord } from '../../../lib/store/models.js';
import { validationDeadline } from '../../../server/image-lifecycle/validating.js';
import { NodeDeleter } from '../../../server/launcher/node-deleter.js';
import { ValidationWorker } from '../../../server/launcher/validation-worker.js';
import { testLogger } from '../../support/test-log.js';
import { QemuEnv } from '../drivers/qemu/qemu-env.js';

void describe('validation worker: resuming after a crash', { timeout: 300_000 }, () => {
  let env: QemuEnv;
  let blank: string;
  const running: Array<{ provider: QemuProvider; worker: ValidationWorker }> = [];

  before(async () => {
    env = await QemuEnv.create();
    blank = path.join(env.dir, 'blank.qcow2');
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', blank, '64M']);
  });

  async function stopAll(): Promise<void> {
    for (const r of running.splice(0)) {
      await r.worker.stop();
      await r.provider.stop();
    }
  }

  after(async () => {
    await stopAll();
    const left = await env?.qemuPids();
    await env?.close();
    assert.deepEqual(left, [], 'no QEMU of this test left running');
  });

  /** A provider and its validation worker with `validate: {timeout}`, started. */
  async function start(timeout: number): Promise<{ provider: QemuProvider; worker: ValidationWorker; deleter: NodeDeleter }> {
    const { config, provider: pc } = env.config({
      accel: 'tcg', bootTimeout: 5, memory: 256, extra: { diskimages: [{ name: 'deb', validate: { timeout } }] },
    });
    const provider = qemuDriver.createProvider(pc, env.ctx(config)) as QemuProvider;
    await provider.start();
    const log = testLogger();
    const worker = new ValidationWorker({
      store: env.store, log, provider, config: pc, sessionId: () => env.sessionId, hostname: 'test', pid: process.pid, intervalMs: 200, pollMs: 200,
    });
    const deleter = new NodeDeleter({ store: env.store, log, providers: () => new Map([['vms', provider]]), sessionId: () => env.sessionId });
    running.push({ provider, worker });
    worker.start();
    return { provider, worker, deleter };
  }

  /** An upload entering validating now, and what a crashed launcher left: the upload's lock and a locked building node, under a lapsed session. */
  async function crashedValidation(): Promise<{ upload: UploadRecord; staleNode: string }> {
    const ready = await env.readyUpload(blank);
    const upload = await env.store.updateUpload(ready.id, { state: 'validating' });
    assert.ok(upload);
    const dead = await env.store.openSession({ owner: 'crashed-server', hostname: 'gone', pid: 1, ttlMs: 300 });
    const node = await env.store.createNode({
      state: 'building', provider: 'vms', pool: 'main', labels: ['vm'], allocatedTo: validationAllocation(upload.id), validatesUpload: upload.id, image: upload.id,
    });
    assert.equal(await env.store.tryLock(uploadValidationLock(upload.id), dead.id), true);
    assert.equal(await env.store.tryLock(nodeLock(node.id), dead.id), true);
    await waitFor(async () => !(await env.store.isSessionLive(dead.id)), { timeoutMs: 5000, what: 'the crashed server\'s session to lapse', intervalMs: 20 });
    return { upload, staleNode: node.id };
  }

  async function drain(deleter: NodeDeleter, uploadId: string): Promise<void> {
    await waitFor(async () => {
      await deleter.pass();
      await deleter.settled();
      return (await env.store.listNodes({ allocatedTo: validationAllocation(uploadId) })).length === 0;
    }, { timeoutMs: 30_000, what: `validation nodes of ${uploadId} deleted`, intervalMs: 200 });
  }

  it('discards the stale node, boots a new one while time remains, and fails an unbootable upload with its console tail', async () => {
    const { upload, staleNode } = await crashedValidation();
    const { worker, deleter } = await start(120);
    const failed = await waitFor(async () => {
      const u = await env.store.getUpload(upload.id);
      return u?.state === 'failed' ? u : undefined;
    }, { timeoutMs: 60_000, what: 'the resumed validation to fail', intervalMs: 200 });
    await worker.settled();
    assert.match(failed.reason ?? '', /^validation: node (\d+) did not boot: .*boot-timeout 5 s/s);
    const booted = /^validation: node (\d+)/.exec(failed.reason ?? '')?.[1];
    assert.notEqual(booted, staleNode, 'a new node was booted');
    assert.match(failed.reason ?? '', /--- console tail ---\n[\s\S]*SeaBIOS/);
    assert.equal((await env.store.getNode(staleNode))?.state, 'deleting', 'the stale node is handed to the deleter');
    assert.equal(existsSync(path.join(env.imageDir, `${upload.externalId ?? 'none'}.qcow2`)), false, 'the image is deleted in the provider');
    assert.equal((await env.store.getLock(uploadValidationLock(upload.id)))?.live ?? false, false, 'the upload lock is released');
    await drain(deleter, upload.id);
    await stopAll();
  });

  it('fails the upload as timed out without booting when the deadline passed while nobody validated it', async () => {
    const { upload, staleNode } = await crashedValidation();
    // validate.timeout is 1 s, counted from entering validating, on the clock the worker reads (Date.now).
    await waitFor(() => Date.now() >= validationDeadline(upload.stateTime, { timeout: 1 }), { timeoutMs: 5000, what: 'the 1 s validation deadline to pass', intervalMs: 20 });
    const before = (await env.store.listNodes()).map((n) => n.id);
    const { worker, deleter } = await start(1);
    const failed = await waitFor(async () => {
      const u = await env.store.getUpload(upload.id);
      return u?.state === 'failed' ? u : undefined;
    }, { timeoutMs: 30_000, what: 'the timed-out validation to fail', intervalMs: 100 });
    await worker.settled();
    assert.equal(failed.reason, 'validation timed out: no validation node had passed at the 1 s deadline');
    assert.deepEqual((await env.store.listNodes()).map((n) => n.id), before, 'no node was booted');
    assert.equal((await env.store.getNode(staleNode))?.state, 'deleting');
    await drain(deleter, upload.id);
  });
});
