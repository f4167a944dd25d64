/**
 * The qemu driver's config and image capability, with the real loader and the real qemu-img:
 * uploads copied or converted into image-dir and checked, corrupt and backed files refused,
 * aborts leaving nothing, list and delete; the accelerator choice and its per-host cache; the
 * NoCloud seed and the leak rule (a VM on a blank disk kept for its corrupt record). No VM boots
 * an operating system here (see qemu-vm.test.ts).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseConfig } from '../../../../lib/config/load.js';
import { AbortedError, CloudError, ConfigError } from '../../../../lib/errors.js';
import { resolveAccel } from '../../../../lib/drivers/qemu/accel.js';
import { qemuDriver } from '../../../../lib/drivers/qemu/index.js';
import { QemuImageService } from '../../../../lib/drivers/qemu/image-store.js';
import { vmHostname } from '../../../../lib/drivers/qemu/handler.js';
import { vmCoverage, type QemuProvider } from '../../../../lib/drivers/qemu/provider.js';
import { makeSeedIso, parseAuthorizedKeys } from '../../../../lib/drivers/qemu/seed.js';
import type { FoundVm } from '../../../../lib/drivers/qemu/vm-host.js';
import { imageTargets } from '../../../../lib/drivers/config-registry.js';
import { sqliteSpoiler } from '../../../contract/spoil.js';
import { testLogger } from '../../../support/test-log.js';
import { QemuEnv } from './qemu-env.js';

/** The config problems of `yaml` as `path: message` lines. */
function problems(yaml: string): string[] {
  try {
    parseConfig(yaml, '/etc/nodepool/nodepool.yaml');
  } catch (err) {
    if (err instanceof ConfigError) return err.problems.map((p) => `${p.path}: ${p.message}`);
    throw err;
  }
  return [];
}

void describe('qemu driver: config', () => {
  let env: QemuEnv;
  before(async () => { env = await QemuEnv.create(); });
  after(async () => { await env.close(); });

  it('loads a provider with the documented defaults and qcow2 image targets', () => {
    const { provider } = env.config({ extra: { 'boot-timeout': undefined, accel: undefined, 'state-dir': undefined } });
    assert.equal(provider.accel, 'auto');
    assert.equal(provider.bootTimeout, 300);
    assert.equal(provider.stateDir, path.join(env.imageDir, 'vms'));
    assert.equal(provider.hostKeyChecking, true);
    assert.equal(provider.pools[0]?.hostKeyChecking, true);
    assert.deepEqual(provider.pools[0]?.labels[0], { name: 'vm', diskimage: 'deb', memory: 1024, cpus: 1 });
    assert.deepEqual(imageTargets(provider).map((t) => [t.diskimage, t.format]), [['deb', 'qcow2']]);
    assert.deepEqual(qemuDriver.pools(provider), [{ name: 'main', maxServers: 2, labels: ['vm'], nodeAttributes: {} }]);
  });

  it('names the file and key path of every problem', () => {
    const yaml = env.yaml({ accel: 'hvf' as 'kvm', memory: 16, extra: { 'image-dir': 'images', 'boot-timeout': 'soon' } });
    const got = problems(yaml);
    const at = 'providers[0]';
    for (const want of [`${at}.image-dir: expected an absolute path`, `${at}.accel: expected one of`, `${at}.boot-timeout:`, `${at}.pools[0].labels[0].memory:`]) {
      assert.ok(got.some((l) => l.startsWith(want)), `a problem starting ${want} in:\n${got.join('\n')}`);
    }
    assert.throws(() => parseConfig(yaml, '/etc/nodepool/nodepool.yaml'), /nodepool\.yaml/);
    assert.deepEqual(problems(env.yaml().replace('"diskimage":"deb"', '"diskimage":"nope"')),
      [`${at}.pools[0].labels[0].diskimage: diskimage "nope" is not listed in ${at}.diskimages`]);
  });
});

void describe('qemu driver: images in image-dir', () => {
  let env: QemuEnv;
  let svc: QemuImageService;
  let qcow2: string;
  let raw: string;
  const props = { nodepool_provider_name: 'vms', nodepool_upload_id: '0000000001' };

  before(async () => {
    env = await QemuEnv.create();
    svc = new QemuImageService({ imageDir: env.imageDir, log: testLogger() });
    raw = path.join(env.dir, 'src.raw');
    await writeFile(raw, Buffer.concat([randomBytes(4 << 20), Buffer.alloc(4 << 20)]));
    qcow2 = path.join(env.dir, 'src.qcow2');
    execFileSync('qemu-img', ['convert', '-f', 'raw', '-O', 'qcow2', raw, qcow2]);
  });
  after(async () => { await env.close(); });

  /** Files in image-dir (complete or not). */
  const files = async (): Promise<string[]> => (await readdir(env.imageDir).catch(() => [] as string[])).sort();

  it('streams a qcow2 in with progress, lists it with its properties and deletes it', async () => {
    const seen: Array<[number, number]> = [];
    const up = await svc.upload({ name: 'deb-1', format: 'qcow2', filePath: qcow2, properties: props, onProgress: (s, t) => seen.push([s, t]) });
    assert.equal(up.externalName, 'deb-1');
    assert.match(up.externalId, /^deb-1-[0-9a-f]{8}$/);
    const size = (await readFile(qcow2)).length;
    assert.deepEqual(seen.at(-1), [size, size]);
    assert.deepEqual(await readFile(svc.imagePath(up.externalId)), await readFile(qcow2));
    assert.deepEqual(await files(), [`${up.externalId}.json`, `${up.externalId}.qcow2`]);
    const listed = await svc.list({ properties: { nodepool_provider_name: 'vms' } });
    assert.deepEqual(listed, [{ externalId: up.externalId, name: 'deb-1', status: 'active', properties: props }]);
    assert.deepEqual(await svc.list({ properties: { nodepool_provider_name: 'other' } }), []);
    await svc.delete(up.externalId);
    await svc.delete(up.externalId); // already gone
    assert.deepEqual(await files(), []);
  });

  it('hands every byte of a qcow2 to onData in order, and fails the upload when onData throws', async () => {
    const h = createHash('sha256');
    let next = 0;
    const up = await svc.upload({
      name: 'deb-tap', format: 'qcow2', filePath: qcow2, properties: props,
      onData: (chunk, offset) => { assert.equal(offset, next); next += chunk.length; h.update(chunk); },
    });
    assert.equal(h.digest('hex'), createHash('sha256').update(await readFile(qcow2)).digest('hex'));
    await svc.delete(up.externalId);
    await assert.rejects(svc.upload({
      name: 'deb-changed', format: 'qcow2', filePath: qcow2, properties: props, onData: () => { throw new Error('the file changed on disk'); },
    }), /the file changed on disk/);
    assert.deepEqual(await files(), []);
  });

  it('converts a raw file to qcow2 with qemu-img', async () => {
    const seen: number[] = [];
    const up = await svc.upload({ name: 'deb-raw', format: 'raw', filePath: raw, properties: props, onProgress: (s) => seen.push(s) });
    const info = JSON.parse(execFileSync('qemu-img', ['info', '--output=json', svc.imagePath(up.externalId)], { encoding: 'utf8' })) as { format: string; 'virtual-size': number };
    assert.equal(info.format, 'qcow2');
    assert.equal(info['virtual-size'], 8 << 20);
    execFileSync('qemu-img', ['compare', '-f', 'raw', '-F', 'qcow2', raw, svc.imagePath(up.externalId)]);
    assert.ok(seen.length > 0, 'progress reported');
    await svc.delete(up.externalId);
  });

  it('refuses a corrupted qcow2 (qemu-img check) and keeps nothing of it', async () => {
    const bad = path.join(env.dir, 'bad.qcow2');
    const bytes = await readFile(qcow2);
    const l1 = Number(bytes.readBigUInt64BE(40)); // the L1 table offset in the qcow2 header
    bytes.fill(0xff, l1, l1 + 8);
    await writeFile(bad, bytes);
    await assert.rejects(svc.upload({ name: 'deb-bad', format: 'qcow2', filePath: bad, properties: props }), (err: Error) => {
      assert.ok(err instanceof CloudError, err.message);
      assert.equal(err.status, 400);
      assert.match(err.message, /refused: qemu-img check found the qcow2 image damaged/);
      return true;
    });
    const truncated = path.join(env.dir, 'truncated.qcow2');
    await writeFile(truncated, (await readFile(qcow2)).subarray(0, 300_000));
    await assert.rejects(svc.upload({ name: 'deb-short', format: 'qcow2', filePath: truncated, properties: props }), /refused/);
    const notQcow2 = path.join(env.dir, 'text.qcow2');
    await writeFile(notQcow2, 'not an image\n');
    await assert.rejects(svc.upload({ name: 'deb-text', format: 'qcow2', filePath: notQcow2, properties: props }), /refused: not a readable qcow2 image/);
    assert.deepEqual(await files(), []);
  });

  it('refuses a qcow2 with a backing file (an upload must not make a VM read other files)', async () => {
    const backed = path.join(env.dir, 'backed.qcow2');
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', '-b', qcow2, '-F', 'qcow2', backed]);
    await assert.rejects(svc.upload({ name: 'deb-backed', format: 'qcow2', filePath: backed, properties: props }), /refused: qcow2 image has a backing file/);
    assert.deepEqual(await files(), []);
  });

  it('stops an aborted upload and removes the partial file', async () => {
    const ac = new AbortController();
    const big = path.join(env.dir, 'big.qcow2');
    await writeFile(big, Buffer.concat([await readFile(qcow2), randomBytes(64 << 20)]));
    await assert.rejects(svc.upload({
      name: 'deb-abort', format: 'qcow2', filePath: big, properties: props, signal: ac.signal, onProgress: () => ac.abort(new Error('stop')),
    }), AbortedError);
    assert.deepEqual(await files(), []);
  });

  it('lists a qcow2 put in image-dir by hand as an image without properties (alien)', async () => {
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', path.join(env.imageDir, 'by-hand.qcow2'), '1M']);
    assert.deepEqual(await svc.list(), [{ externalId: 'by-hand', name: 'by-hand', status: 'active', properties: {} }]);
    assert.deepEqual(await svc.list({ properties: { nodepool_provider_name: 'vms' } }), []);
    await svc.delete('by-hand');
    assert.deepEqual(await files(), []);
  });
});

void describe('qemu driver: accelerator', () => {
  let env: QemuEnv;
  before(async () => { env = await QemuEnv.create(); });
  after(async () => { await env.close(); });

  it('uses kvm or tcg as configured without probing', async () => {
    const opts = { qemu: 'qemu-system-x86_64', stateDir: env.stateDir, log: testLogger() };
    assert.equal(await resolveAccel('tcg', opts), 'tcg');
    assert.equal(await resolveAccel('kvm', opts), 'kvm');
    assert.deepEqual(await readdir(env.dir).then((d) => d.includes('state')), false);
  });

  it('probes auto once per host and caches the verdict in the state dir', async () => {
    const opts = { qemu: 'qemu-system-x86_64', stateDir: env.stateDir, log: testLogger() };
    const started = Date.now();
    const accel = await resolveAccel('auto', opts);
    const probeMs = Date.now() - started;
    const verdict = JSON.parse(await readFile(path.join(env.stateDir, 'accel-probe.json'), 'utf8')) as { accel: string; reason: string };
    console.log(`# accel auto → ${accel} in ${probeMs} ms: ${verdict.reason}`);
    assert.equal(verdict.accel, accel);
    assert.ok(verdict.reason.length > 0);
    // A changed verdict in the cache is believed: the probe does not run again.
    await writeFile(path.join(env.stateDir, 'accel-probe.json'), JSON.stringify({ ...verdict, accel: accel === 'kvm' ? 'tcg' : 'kvm' }));
    assert.equal(await resolveAccel('auto', opts), accel === 'kvm' ? 'tcg' : 'kvm');
  });
});

void describe('qemu driver: seeds and leak coverage (no boot)', () => {
  let env: QemuEnv;
  before(async () => { env = await QemuEnv.create(); });
  after(async () => { await env.close(); });

  it('writes a NoCloud seed ISO (volume cidata) with the hostname and the authorized keys', async () => {
    const keys = parseAuthorizedKeys(`# comment\n${await readFile(`${env.keyFile}.pub`, 'utf8')}\n\n`);
    assert.equal(keys.length, 1);
    const iso = path.join(env.dir, 'seed.iso');
    await makeSeedIso(env.dir, iso, { instanceId: '0000000007-abcdef', hostname: 'vm-0000000007', authorizedKeys: keys });
    assert.match(execFileSync('isoinfo', ['-d', '-i', iso], { encoding: 'utf8' }), /Volume id: cidata/);
    const user = execFileSync('isoinfo', ['-R', '-i', iso, '-x', '/user-data'], { encoding: 'utf8' });
    assert.equal(user, `#cloud-config\nhostname: "vm-0000000007"\nmanage_etc_hosts: true\nssh_authorized_keys:\n  - ${JSON.stringify(keys[0])}\n`);
    const meta = execFileSync('isoinfo', ['-R', '-i', iso, '-x', '/meta-data'], { encoding: 'utf8' });
    assert.equal(meta, 'instance-id: "0000000007-abcdef"\nlocal-hostname: "vm-0000000007"\n');
  });

  it('keeps the VM of a node whose record does not validate through a leak pass, and kills it once the record is gone', async () => {
    // A blank disk: QEMU runs (in its firmware) without booting anything, which is all a leak pass looks at.
    const blank = path.join(env.dir, 'blank.qcow2');
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', blank, '16M']);
    const upload = await env.readyUpload(blank);
    const leaks: string[] = [];
    const { config, provider: pc } = env.config({ accel: 'tcg' });
    const provider = qemuDriver.createProvider(pc, env.ctx(config, (r) => leaks.push(r))) as QemuProvider;
    await provider.start();
    const vm = async (nodeId: string, id: string): Promise<FoundVm> => provider.vms.create(id, {
      nodeId, pool: 'main', label: 'vm', image: upload.externalId ?? '', imagePath: blank, hostname: `vm-${nodeId}`,
      accel: 'tcg', memory: 64, cpus: 1, authorizedKeys: [],
    });
    try {
      const node = await env.store.createNode({ state: 'in-use', provider: 'vms', pool: 'main', labels: ['vm'] });
      const kept = await vm(node.id, `${node.id}-kept01`);
      await env.store.updateNode(node.id, { externalId: kept.record.id });
      // As Zuul writing the record in a form this version does not know: a state it has never heard of.
      await sqliteSpoiler(path.join(env.dir, 'nodepool.db'))({ kind: 'node', id: node.id }, 'unknown-state');
      assert.deepEqual((await env.store.listNodes()).map((n) => n.id), [], 'the store refuses the record');
      const leaked = await vm('9999999998', '9999999998-leak01');
      await provider.cleanupLeakedResources();
      assert.equal(await provider.vms.runningPid(leaked.record.id), null, 'the pass ran: the VM no record names is killed');
      assert.ok(await provider.vms.runningPid(kept.record.id), 'the VM of the corrupt record still runs');
      assert.deepEqual(leaks, ['vm']);
      assert.equal(await env.store.deleteNode(node.id), true);
      await provider.cleanupLeakedResources();
      assert.equal(await provider.vms.runningPid(kept.record.id), null, 'once the record is deleted its VM is a leak');
      assert.deepEqual(leaks, ['vm', 'vm']);
    } finally {
      await provider.stop();
    }
  });

  it('counts a VM as accounted for by its node record, or by a launch that has not named a VM yet', () => {
    const vm = (id: string, nodeId: string): FoundVm => ({ record: { id, nodeId } as FoundVm['record'], pid: 1 });
    const covered = vmCoverage([{ id: '1', externalId: '1-aaaaaa' }, { id: '2', externalId: null }, { id: '3', externalId: '3-bbbbbb' }]);
    assert.equal(covered(vm('1-aaaaaa', '1')), true);
    assert.equal(covered(vm('2-cccccc', '2')), true, 'launch in progress');
    assert.equal(covered(vm('3-dddddd', '3')), false, 'an earlier attempt of node 3');
    assert.equal(covered(vm('4-eeeeee', '4')), false, 'no record');
    const past = vmCoverage([], [{ id: '5', externalId: null }, { id: '6', externalId: '7-ffffff' }]);
    assert.equal(past(vm('5-aaaaaa', '5')), true, 'a corrupt record covers every VM of its node id');
    assert.equal(past(vm('7-ffffff', '7')), true, 'and the VM its external id names');
    assert.equal(past(vm('8-aaaaaa', '8')), false);
    assert.equal(vmHostname('Debian_VM', '0000000012'), 'debian-vm-0000000012');
  });
});
