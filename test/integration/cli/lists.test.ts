import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Releasers } from '../../../lib/lifecycle.js';
import { openStore } from '../../../lib/store/open-store.js';
import type { Store } from '../../../lib/store/store.js';
import { runningProcesses } from '../../support/processes.js';
import { createCliEnv, diskimageStatus, startCli, targetStatus, type CliEnv } from './cli-env.js';

const DAY = 86_400_000;
const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

describe('nodepool dib-image-list, image-list and usage errors', () => {
  const releasers = new Releasers();
  afterEach(async () => {
    await releasers.releaseAll();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  async function setup(): Promise<{ env: CliEnv; old: Store }> {
    const env = await createCliEnv();
    releasers.add('cli env', () => env.close());
    // Records written through a store whose clock runs two days behind have a known age.
    const old = await openStore(env.config, { clock: () => Date.now() - 2 * DAY });
    releasers.add('old store', () => old.close());
    return { env, old };
  }

  /** ubuntu-jammy 1 ready, 2 failed, 3 lost; debian-bookworm 1 building. */
  async function sampleBuilds(old: Store): Promise<void> {
    const d1 = await old.createBuild({ diskimage: 'debian-bookworm', formats: ['qcow2'] });
    await old.updateBuild(d1.id, { builderHostname: 'builder2', progress: { numerator: 2, denominator: 5 } });
    const u1 = await old.createBuild({ diskimage: 'ubuntu-jammy', formats: ['qcow2', 'raw'] });
    await old.updateBuild(u1.id, { state: 'ready', builderHostname: 'builder1', files: [{ format: 'qcow2', size: 10, sha256: 'a' }, { format: 'raw', size: 20, sha256: 'b' }] });
    const u2 = await old.createBuild({ diskimage: 'ubuntu-jammy', formats: ['qcow2', 'raw'] });
    await old.updateBuild(u2.id, { state: 'failed', builderHostname: 'builder1', reason: 'disk-image-create exited 1' });
    const u3 = await old.createBuild({ diskimage: 'ubuntu-jammy', formats: ['qcow2', 'raw'] });
    await old.updateBuild(u3.id, { state: 'lost', builderHostname: 'builder3', reason: 'no builder advertises its files' });
  }

  it('dib-image-list prints builds by image then id with builder, formats, state and age, then what needs attention', async () => {
    const { env, old } = await setup();
    await sampleBuilds(old);
    await env.heartbeat();
    await env.lifecycleStatus([
      diskimageStatus('debian-bookworm', { paused: 'config' }),
      diskimageStatus('ubuntu-jammy', { failures: 1, lastFailure: 'disk-image-create exited 1', retryAt: Date.now() + 240_000, requested: true }),
    ]);
    const r = await env.run('dib-image-list');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, '');
    const lines = r.stdout.trimEnd().split('\n');
    assert.equal(lines[1], '| ID                         | Image           | Builder  | Formats   | State    | Age         |');
    const rows = lines.slice(3, 7).map((l) => l.split('|').slice(1, -1).map((c) => c.trim()));
    assert.deepEqual(rows.map((c) => c.slice(0, 5)), [
      ['debian-bookworm-0000000001', 'debian-bookworm', 'builder2', 'qcow2', 'building'],
      ['ubuntu-jammy-0000000001', 'ubuntu-jammy', 'builder1', 'qcow2,raw', 'ready'],
      ['ubuntu-jammy-0000000002', 'ubuntu-jammy', 'builder1', 'qcow2,raw', 'failed'],
      ['ubuntu-jammy-0000000003', 'ubuntu-jammy', 'builder3', 'qcow2,raw', 'lost'],
    ]);
    for (const c of rows) assert.match(c[5] as string, /^02:00:00:\d\d$/, 'age since the state changed, two days ago');
    assert.match(lines[7] as string, /^\+-+\+/);
    assert.deepEqual(lines.slice(8).map((l) => l.replace(/next attempt in [\d:]+/, 'next attempt in <t>')), [
      'debian-bookworm: builds paused by config (pause: true)',
      'ubuntu-jammy: 1 failed build, last: disk-image-create exited 1; next attempt in <t>; build requested',
      'ubuntu-jammy-0000000002 failed: disk-image-create exited 1',
      'ubuntu-jammy-0000000003 lost: no builder advertises its files',
    ]);
    assert.match(lines[9] as string, /next attempt in 00:00:0[34]:\d\d;/);
  });

  it('dib-image-list --json prints the stored records with their age in seconds and the diskimage status', async () => {
    const { env, old } = await setup();
    await sampleBuilds(old);
    await env.heartbeat();
    const status = [diskimageStatus('ubuntu-jammy', { waiting: 'no builder registers image-build:ubuntu-jammy' })];
    await env.lifecycleStatus(status);
    const r = await env.run('dib-image-list', '--json');
    assert.equal(r.code, 0, r.stderr);
    const doc = JSON.parse(r.stdout) as { builds: Array<Record<string, unknown>>; diskimages: unknown };
    assert.deepEqual(doc.builds.map((b) => b.id), ['debian-bookworm-0000000001', 'ubuntu-jammy-0000000001', 'ubuntu-jammy-0000000002', 'ubuntu-jammy-0000000003']);
    const stored = await env.store.getBuild('debian-bookworm-0000000001');
    const { age, pinned, revoked, ...record } = doc.builds[0] as { age: number; pinned: unknown; revoked: unknown };
    assert.deepEqual(record, stored, 'records as stored');
    assert.deepEqual([pinned, revoked], [[], null], 'not pinned, not revoked');
    assert.ok(age >= 2 * 86_400 && age < 2 * 86_400 + 60, `age ${age} s`);
    assert.deepEqual(doc.diskimages, status);
  });

  /** Build ubuntu-jammy-0000000001 with uploads to cloud-a (ready, then uploading) and cloud-b (failed). */
  async function sampleUploads(old: Store): Promise<void> {
    const b = await old.createBuild({ diskimage: 'ubuntu-jammy', formats: ['qcow2'] });
    await old.updateBuild(b.id, { state: 'ready', builderHostname: 'builder1' });
    const a1 = await old.createUpload({ buildId: b.id, provider: 'cloud-a', imageName: 'ubuntu-jammy', externalName: 'ubuntu-jammy-1700000000' });
    await old.updateUpload(a1.id, { state: 'ready', externalId: '6f1c2d8e-0000-4000-8000-000000000001', format: 'qcow2' });
    const b1 = await old.createUpload({ buildId: b.id, provider: 'cloud-b', imageName: 'ubuntu-jammy', externalName: 'ubuntu-jammy-1700000100' });
    await old.updateUpload(b1.id, { state: 'failed', reason: 'Glance answered 503' });
    const a2 = await old.createUpload({ buildId: b.id, provider: 'cloud-a', imageName: 'ubuntu-jammy', externalName: 'ubuntu-jammy-1700000200' });
    // As the server records it from the builder's WORK_STATUS: bytes sent and total, the rate, the sample's time.
    await old.updateUpload(a2.id, { progress: { numerator: 1.2 * GiB, denominator: 3.4 * GiB, rate: 180 * MiB, sampledAt: Date.now() } });
  }

  it('image-list prints uploads with the cloud name and id, then which targets need attention', async () => {
    const { env, old } = await setup();
    await sampleUploads(old);
    await env.heartbeat();
    await env.store.setPause('ubuntu-jammy', 'cloud-a', true, 'quota exhausted');
    await env.lifecycleStatus([], [
      targetStatus('ubuntu-jammy', 'cloud-a', { paused: 'operator' }),
      targetStatus('ubuntu-jammy', 'cloud-b', { failures: 2, lastFailure: 'Glance answered 503', retryAt: Date.now() + 120_000 }),
    ]);
    const r = await env.run('image-list');
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trimEnd().split('\n');
    // Nodepool's columns in their places, then Progress while an upload runs.
    assert.deepEqual(lines[1]?.split('|').slice(1, -1).map((c) => c.trim()),
      ['Build ID', 'Upload ID', 'Provider', 'Image', 'Provider Image Name', 'Provider Image ID', 'State', 'Age', 'Progress']);
    const rows = lines.slice(3, 6).map((l) => l.split('|').slice(1, -1).map((c) => c.trim()));
    assert.deepEqual(rows.map((c) => [...c.slice(0, 7), c[8]]), [
      ['ubuntu-jammy-0000000001', '0000000001', 'cloud-a', 'ubuntu-jammy', 'ubuntu-jammy-1700000000', '6f1c2d8e-0000-4000-8000-000000000001', 'ready', ''],
      ['ubuntu-jammy-0000000001', '0000000003', 'cloud-a', 'ubuntu-jammy', 'ubuntu-jammy-1700000200', '', 'uploading', '1.2/3.4 GiB 35% 180 MiB/s'],
      ['ubuntu-jammy-0000000001', '0000000002', 'cloud-b', 'ubuntu-jammy', 'ubuntu-jammy-1700000100', '', 'failed', ''],
    ]);
    for (const c of rows) assert.match(c[7] as string, /^02:00:00:\d\d$/);
    assert.deepEqual(lines.slice(7).map((l) => l.replace(/next attempt in [\d:]+/, 'next attempt in <t>')), [
      'ubuntu-jammy to cloud-a: uploads paused by operator (quota exhausted)',
      'ubuntu-jammy to cloud-b: 2 failed uploads, last: Glance answered 503; next attempt in <t>',
      'upload 0000000002 of ubuntu-jammy-0000000001 to cloud-b failed: Glance answered 503',
    ]);
  });

  it('image-list --json prints the stored uploads with their age in seconds and the target status', async () => {
    const { env, old } = await setup();
    await sampleUploads(old);
    await env.heartbeat();
    const targets = [targetStatus('ubuntu-jammy', 'cloud-b', { paused: 'config' })];
    await env.lifecycleStatus([], targets);
    const r = await env.run('image-list', '--json');
    assert.equal(r.code, 0, r.stderr);
    const doc = JSON.parse(r.stdout) as { uploads: Array<{ id: string; age: number; progress: unknown; transfer: unknown }>; targets: unknown };
    assert.deepEqual(doc.uploads.map((u) => u.id), ['0000000001', '0000000003', '0000000002']);
    const { age, transfer, rollout, launches, launchFailures, ...record } = doc.uploads[0] as unknown as { id: string; age: number; transfer: unknown; rollout: unknown; launches: number; launchFailures: number };
    const { rollout: _decision, launches: _launches, launchFailures: _failures, ...stored } = (await env.store.getUpload('0000000001'))!;
    assert.deepEqual(record, stored);
    assert.deepEqual([(rollout as { words: string }).words, launches, launchFailures], ['promoted', 0, 0], 'no rollout settings: promoted');
    assert.ok(age >= 2 * 86_400 && age < 2 * 86_400 + 60, `age ${age} s`);
    assert.equal(transfer, null, 'no transfer for a ready upload');
    // The running upload's numbers: as stored, and as bytes, percent, rate and time left.
    const running = doc.uploads[1];
    assert.deepEqual(running?.progress, (await env.store.getUpload('0000000003'))?.progress);
    assert.deepEqual(running?.transfer, {
      sentBytes: 1.2 * GiB, totalBytes: 3.4 * GiB, percent: 35, bytesPerSecond: 180 * MiB, etaSeconds: 13, stalledSeconds: null,
    });
    // Each target as the server reports it, with what the upload records say of its checks.
    assert.deepEqual(doc.targets, targets.map((t) => ({ ...t, validation: { validating: [], lastFailure: null } })));
  });

  it('warns on stderr when the server runs but a loop\'s passes fail', async () => {
    const { env } = await setup();
    const now = Date.now();
    await env.heartbeat(10, [
      { name: 'image-lifecycle', passes: 12, consecutiveFailures: 4, lastPass: now, lastSuccess: now - 60_000, lastError: 'reading builds: database disk image is malformed' },
      { name: 'deleter', passes: 30, consecutiveFailures: 0, lastPass: now, lastSuccess: now, lastError: null },
    ]);
    for (const cmd of ['dib-image-list', 'image-list']) {
      const r = await env.run(cmd);
      assert.equal(r.code, 0);
      assert.equal(r.stderr, 'warning: nodepool-server is running but its passes fail: image-lifecycle: 4 failed passes in a row (last: reading builds: database disk image is malformed); the status shown may be out of date\n', cmd);
    }
  });

  it('prints empty tables and warns on stderr when no server has published a heartbeat', async () => {
    const { env } = await setup();
    const builds = await env.run('dib-image-list');
    assert.equal(builds.code, 0);
    assert.equal(builds.stdout, [
      '+----+-------+---------+---------+-------+-----+',
      '| ID | Image | Builder | Formats | State | Age |',
      '+----+-------+---------+---------+-------+-----+',
      '+----+-------+---------+---------+-------+-----+',
      '',
    ].join('\n'));
    assert.equal(builds.stderr, 'warning: no nodepool-server is running (last seen: never); the status shown may be out of date\n');
    const uploads = await env.run('image-list', '--json');
    assert.equal(uploads.code, 0);
    assert.deepEqual(JSON.parse(uploads.stdout), { uploads: [], targets: [] });
    assert.match(uploads.stderr, /no nodepool-server is running/);
  });

  it('exits 2 and prints the help, with the exit codes, when no command is given', async () => {
    const r = await startCli(null, []).result;
    assert.equal(r.code, 2);
    assert.match(r.stderr, /Commands:[\s\S]*image-build <diskimage>/);
    assert.match(r.stderr, /Exit codes:\n {2}0 +success\n {2}1 +refused or failed/);
    assert.match(r.stderr, /Name a command/);
    const help = await startCli(null, ['--help']).result;
    assert.equal(help.code, 0);
    assert.match(help.stdout, /3 +unknown build, upload, diskimage or provider/);
  });

  it('exits 2 for an unknown command or option', async () => {
    const { env } = await setup();
    const cmd = await env.run('image-frobnicate');
    assert.equal(cmd.code, 2);
    assert.match(cmd.stderr, /Unknown argument: image-frobnicate/);
    const opt = await env.run('dib-image-list', '--detail');
    assert.equal(opt.code, 2);
    assert.match(opt.stderr, /Unknown argument: detail/);
  });

  it('exits 2 naming the file and key when nodepool.yaml is missing or invalid', async () => {
    const { env } = await setup();
    const missing = await startCli(path.join(env.dir, 'nope.yaml'), ['dib-image-list']).result;
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /nope\.yaml: cannot read/);
    const bad = path.join(env.dir, 'bad.yaml');
    await writeFile(bad, 'diskimages:\n  - name: x\n    rebuild-age: soon\n');
    const invalid = await startCli(bad, ['image-list']).result;
    assert.equal(invalid.code, 2);
    assert.match(invalid.stderr, /bad\.yaml: diskimages\[0\]\.rebuild-age: expected/);
  });

  it('config-validate still reports a valid file (exit 0) and an invalid one (exit 2, a config error)', async () => {
    const { env } = await setup();
    const ok = await env.run('config-validate');
    assert.equal(ok.code, 0);
    assert.match(ok.stdout, /valid \(2 diskimages, 2 providers, 1 labels\)/);
    const bad = path.join(env.dir, 'bad.yaml');
    await writeFile(bad, 'labels: 3\n');
    const invalid = await startCli(bad, ['config-validate']).result;
    assert.equal(invalid.code, 2);
    assert.match(invalid.stderr, /bad\.yaml: labels/);
  });
});
