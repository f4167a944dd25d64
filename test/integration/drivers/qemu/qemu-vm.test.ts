/**
 * A real DIB image (test/support/qemu-image.ts) booted by the qemu driver under real QEMU:
 * uploaded through the driver's image service, requested, key-scanned, logged into over SSH
 * with the provider's key and the recorded host key, re-adopted by a new provider after a
 * launcher restart, a leaked VM killed beside it, then released and deleted. One boot.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { waitFor } from '../../../../lib/lifecycle.js';
import { qemuDriver } from '../../../../lib/drivers/qemu/index.js';
import type { QemuProvider } from '../../../../lib/drivers/qemu/provider.js';
import type { NodeRecord, UploadRecord } from '../../../../lib/store/models.js';
import { bootableImage, QEMU_TEST_USER } from '../../../support/qemu-image.js';
import { QemuEnv } from './qemu-env.js';

/**
 * Runs `command` on the node over SSH, checking its host key against the node record. Bound 600 s:
 * the first login waits for cloud-init, which took 87-128 s in full local runs and over 180 s (the
 * old bound) in CI on 2026-12-02, the guest under TCG beside the other lanes.
 */
function sshRun(env: QemuEnv, node: NodeRecord, command: string, knownHosts: string): string {
  return execFileSync('ssh', [
    '-i', env.keyFile, '-p', String(node.connectionPort), '-o', 'BatchMode=yes', '-o', 'StrictHostKeyChecking=yes',
    '-o', `UserKnownHostsFile=${knownHosts}`, '-o', 'ConnectTimeout=30', `${node.username ?? QEMU_TEST_USER}@${node.interfaceIp ?? ''}`, command,
  ], { encoding: 'utf8', timeout: 600_000, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** `/proc/<pid>/status` and `stat` facts: parent pid, process group, session. */
async function procFacts(pid: number): Promise<{ ppid: number; pgrp: number; session: number }> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { ppid: Number(fields[1]), pgrp: Number(fields[2]), session: Number(fields[3]) };
}

void describe('qemu driver: a real DIB image booted under QEMU', { timeout: 2_400_000 }, () => {
  let env: QemuEnv;
  let provider: QemuProvider;
  let upload: UploadRecord;
  let node: NodeRecord;
  let knownHosts: string;
  const leaks: string[] = [];
  // boot-timeout 600: at load 8-10 (CI) a boot took 267-418 s (70-93 s quiet). Its guests run at
  // the default priority: ahead of the other lanes (ahead.ts) the VM files were faster, but the
  // files that need no cloud took 2,296 s instead of 1,320 s and the run 4,256 s instead of 3,644 s.
  const vmsConfig = async (): Promise<ReturnType<QemuEnv['config']>> => env.config({ accel: 'auto', bootTimeout: 600 });

  before(async () => {
    const image = await bootableImage();
    if (image.buildSeconds) console.log(`# bootable image built in ${image.buildSeconds} s`);
    env = await QemuEnv.create();
    upload = await env.readyUpload(image.path);
    const { config, provider: pc } = await vmsConfig();
    provider = qemuDriver.createProvider(pc, env.ctx(config, (r) => leaks.push(r))) as QemuProvider;
    await provider.start();
  });

  after(async () => {
    await provider?.stop();
    const left = await env?.qemuPids();
    await env?.close();
    assert.deepEqual(left, [], 'no QEMU of this test left running');
  });

  it('boots a requested node from the upload: key-scanned, reachable over SSH with its recorded host key', async () => {
    const request = await env.store.createRequest({ labels: ['vm'], requestor: 'qemu-test' });
    const handler = provider.getRequestHandler('main', request);
    assert.equal(await handler.imagesAvailable(), true);
    assert.equal(await handler.hasProviderQuota(['vm']), true);
    // The record names its upload, as a validation boot of exactly that upload does (the contract suite boots unpinned).
    const created = await env.store.createNode({ state: 'building', provider: 'vms', pool: 'main', labels: ['vm'], launcher: 'qemu-test', image: upload.id });
    const started = Date.now();
    handler.launch(created);
    await waitFor(() => handler.launchesComplete(), { timeoutMs: 660_000, what: 'the VM launch', intervalMs: 500 });
    const bootSeconds = (Date.now() - started) / 1000;
    const done = await env.store.getNode(created.id);
    assert.equal(done?.state, 'ready', `launch ended ${done?.state}: ${done?.reason}`);
    node = done;
    const accel = JSON.parse(await readFile(path.join(env.stateDir, 'accel-probe.json'), 'utf8')) as { accel: string };
    console.log(`# VM ready (SSH key scan answered) ${bootSeconds.toFixed(1)} s after launch, accel ${accel.accel}`);
    assert.equal(node.interfaceIp, '127.0.0.1');
    assert.ok(node.connectionPort > 1024);
    assert.equal(node.connectionType, 'ssh');
    assert.equal(node.username, 'debian');
    assert.equal(node.image, upload.id);
    assert.deepEqual(node.resources, { cores: 1, ram: 1024, instances: 1 });
    assert.ok(node.hostKeys.some((k) => k.startsWith('ssh-ed25519 ')), `host keys: ${node.hostKeys.join(', ')}`);
    knownHosts = path.join(env.dir, 'known_hosts');
    await writeFile(knownHosts, node.hostKeys.map((k) => `[127.0.0.1]:${node.connectionPort} ${k}\n`).join(''));
    const sshStarted = Date.now();
    const out = sshRun(env, node, 'hostname; cloud-init status --wait >/dev/null; echo cloud-init-done', knownHosts);
    console.log(`# first SSH login (cloud-init finished) took ${((Date.now() - sshStarted) / 1000).toFixed(1)} s`);
    assert.deepEqual(out.trim().split('\n'), [node.hostname, 'cloud-init-done']);
    const console_ = await readFile(path.join(env.stateDir, node.externalId ?? '', 'console.log'), 'utf8');
    assert.match(console_, /Linux version/);
    const listed = (await provider.listNodes()).find((n) => n.externalId === node.externalId);
    assert.deepEqual(listed && { nodeId: listed.nodeId, status: listed.status }, { nodeId: node.id, status: 'running' });
  });

  it('runs the VM in its own session, so it survives the launcher; a new provider re-adopts it', async () => {
    const id = node.externalId ?? '';
    const pid = await provider.vms.runningPid(id);
    assert.ok(pid);
    // -daemonize: fork, setsid, fork again; the VM is in a session and group of its own, and not our child.
    const [facts, ours] = await Promise.all([procFacts(pid), procFacts(process.pid)]);
    assert.equal(facts.pgrp, facts.session, 'QEMU is in the process group that started its own session');
    assert.notEqual(facts.session, ours.session, 'QEMU is not in the launcher\'s session');
    assert.notEqual(facts.pgrp, ours.pgrp, 'QEMU is not in the launcher\'s process group');
    assert.notEqual(facts.ppid, process.pid, 'QEMU is not a child of the launcher');
    await provider.stop(); // the launcher goes away
    const { config, provider: pc } = await vmsConfig();
    provider = qemuDriver.createProvider(pc, env.ctx(config, (r) => leaks.push(r))) as QemuProvider;
    await provider.start();
    assert.equal(await provider.vms.runningPid(id), pid);
    const listed = (await provider.listNodes()).find((n) => n.externalId === id);
    assert.equal(listed?.status, 'running');
    const handler = provider.getRequestHandler('main', await env.store.createRequest({ labels: ['vm'], requestor: 'qemu-test' }));
    assert.equal(await handler.checkReusableNode(node), true);
    await provider.cleanupLeakedResources();
    assert.equal(await provider.vms.runningPid(id), pid, 'a VM its record accounts for is not a leak');
    assert.equal(sshRun(env, node, 'echo still-here', knownHosts).trim(), 'still-here');
  });

  it('fails a launch pinned to an upload that is failed, another provider\'s or missing, and starts no VM', async () => {
    const failed = await env.store.createUpload({ buildId: upload.buildId, provider: 'vms', imageName: 'deb', externalName: 'deb-failed' });
    await env.store.updateUpload(failed.id, { state: 'failed', externalId: upload.externalId });
    const other = await env.store.createUpload({ buildId: upload.buildId, provider: 'elsewhere', imageName: 'deb', externalName: 'deb-other' });
    const handler = provider.getRequestHandler('main', await env.store.createRequest({ labels: ['vm', 'vm', 'vm'], requestor: 'qemu-test' }));
    const nodes = [];
    for (const image of [failed.id, other.id, '9999999999']) {
      const n = await env.store.createNode({ state: 'building', provider: 'vms', pool: 'main', labels: ['vm'], launcher: 'qemu-test', image });
      handler.launch(n);
      nodes.push(n);
    }
    await waitFor(() => handler.launchesComplete(), { timeoutMs: 30_000, what: 'the pinned launches to fail' });
    const reasons = await Promise.all(nodes.map(async (n) => { const r = await env.store.getNode(n.id); return `${r?.state}: ${r?.reason}`; }));
    assert.deepEqual(reasons, [
      `failed: upload ${failed.id} is failed`, `failed: upload ${other.id} belongs to provider elsewhere`, 'failed: upload 9999999999 does not exist',
    ]);
    assert.deepEqual((await provider.listNodes()).map((n) => n.nodeId), [node.id]);
    for (const n of nodes) await env.store.deleteNode(n.id);
  });

  it('kills a leaked VM (no record accounts for it) and leaves the others', async () => {
    const image = provider.images.imagePath(upload.externalId ?? '');
    const leaked = await provider.vms.create('9999999999-leak', {
      nodeId: '9999999999', pool: 'main', label: 'vm', image: upload.externalId ?? '', imagePath: image,
      hostname: 'leaked', accel: 'tcg', memory: 256, cpus: 1, authorizedKeys: [],
    });
    assert.ok(leaked.pid);
    await provider.cleanupLeakedResources();
    assert.equal(await provider.vms.runningPid('9999999999-leak'), null);
    assert.equal(existsSync(provider.vms.dir('9999999999-leak')), false);
    assert.deepEqual(leaks, ['vm']);
    assert.ok(await provider.vms.runningPid(node.externalId ?? ''), 'the node\'s VM still runs');
  });

  it('deletes a released node: the VM is stopped and its overlay removed', async () => {
    const id = node.externalId ?? '';
    await env.store.updateNode(node.id, { state: 'in-use' });
    await env.store.updateNode(node.id, { state: 'used' });
    await env.store.updateNode(node.id, { state: 'deleting' });
    await provider.cleanupNode(node);
    assert.equal(await provider.vms.runningPid(id), null);
    assert.equal(existsSync(provider.vms.dir(id)), false);
    await provider.cleanupNode(node); // already gone
    await env.store.deleteNode(node.id);
    assert.deepEqual(await provider.listNodes(), []);
    assert.ok(existsSync(provider.images.imagePath(upload.externalId ?? '')), 'the upload stays');
  });
});
