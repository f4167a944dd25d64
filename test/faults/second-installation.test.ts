/**
 * Fault rows: a second installation on the same gearmand (and the same Glance), and a server
 * started on an empty store while a builder holds files and Glance holds images. Real gearmand,
 * fake-dib builds, the loopback Keystone+Glance, in-process servers with SQLite stores.
 * Nothing of the other installation (or of the store that was there before) may be deleted;
 * a build id both installations hand out is refused by the builder holding the other's files.
 */
import { after, afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { dibImageList } from '../../cli/commands/dib-image-list.js';
import type { ListedImage } from '../../lib/drivers/contract/image-service.js';
import { LIFECYCLE_STATUS_KEY, type LifecycleStatus } from '../../lib/status/lifecycle-status.js';
import { INSTALLATION_PROPERTY } from '../../lib/store/installation.js';
import { fakeDiskimage, glanceAdmin, loopbackProvider } from '../support/builder-env.js';
import { recordFault } from '../support/fault-report.js';
import { startGearmand, type GearmandHandle } from '../support/gearmand.js';
import { Installation } from '../support/installation-pair.js';
import { startLoopbackCloud, type LoopbackCloud } from '../support/openstack.js';
import { runningProcesses } from '../support/processes.js';

const diskimages = [fakeDiskimage('deb', { formats: ['qcow2'] }, { FAKE_DIB_DELAY: '0.1' })];
const providers = [loopbackProvider('cloud-a', ['deb'])];

/** What the audit found over every installation, builder and Glance. */
interface Audit {
  /** Ready records whose files (held for their installation) or Glance image are gone. */
  lost: string[];
  /** Glance images and builder files no installation's record accounts for. */
  leaked: string[];
  /** Image ids builders hold for more than one installation (collisions kept apart). */
  collisions: string[];
}

async function audit(installations: Installation[], cloud: LoopbackCloud): Promise<Audit> {
  const glance = await glanceAdmin(cloud);
  let images: ListedImage[];
  try {
    images = await glance.list({ properties: { nodepool_provider_name: 'cloud-a' } });
  } finally {
    glance.close();
  }
  // Every file any builder holds: id → installations it is held for.
  const held = new Map<string, Set<string | undefined>>();
  for (const inst of installations) {
    for (const b of inst.builders.values()) {
      for (const id of b.builder?.localImages() ?? []) {
        const sidecar = JSON.parse(await readFile(path.join(b.env.imagesDir, `${id}.json`), 'utf8')) as { installation?: string };
        const set = held.get(id) ?? new Set();
        set.add(sidecar.installation);
        held.set(id, set);
      }
    }
  }
  const result: Audit = { lost: [], leaked: [], collisions: [...held].filter(([, s]) => s.size > 1).map(([id]) => id) };
  const accountedImages = new Set<string>();
  const accountedFiles = new Set<string>();
  for (const inst of installations) {
    const mine = await inst.store.installationId();
    for (const b of await inst.store.listBuilds({ states: ['ready'] })) {
      accountedFiles.add(`${mine}/${b.id}`);
      if (!held.get(b.id)?.has(mine)) result.lost.push(`${inst.opts.name}: files of ${b.id}`);
    }
    for (const u of await inst.store.listUploads({ states: ['ready'] })) {
      const image = images.find((i) => i.externalId === u.externalId);
      accountedImages.add(u.externalId ?? '');
      if (!image || image.properties[INSTALLATION_PROPERTY] !== mine) result.lost.push(`${inst.opts.name}: image of upload ${u.id}`);
    }
  }
  for (const i of images) if (!accountedImages.has(i.externalId)) result.leaked.push(`image ${i.name}`);
  for (const [id, set] of held) for (const inst of set) if (!accountedFiles.has(`${inst}/${id}`)) result.leaked.push(`files of ${id} (${inst ?? 'no installation'})`);
  return result;
}

describe('faults: a second installation, a server on an empty store', () => {
  let gearmand: GearmandHandle | undefined;
  let cloud: LoopbackCloud | undefined;
  const installations: Installation[] = [];

  afterEach(async () => {
    for (const inst of installations.splice(0)) await inst.stop().catch(() => undefined);
    await gearmand?.stop();
    await cloud?.stop();
    gearmand = undefined;
    cloud = undefined;
  });
  after(() => assert.deepEqual(runningProcesses().map((p) => p.name), []));

  it('two installations on one gearmand and one Glance: neither deletes the other\'s builds or images; the colliding build id is refused, never adopted', async () => {
    [gearmand, cloud] = await Promise.all([startGearmand(), startLoopbackCloud()]);
    const common = { gearmand, cloud, diskimages, providers };
    const a = await Installation.create({ name: 'a', ...common });
    const b = await Installation.create({ name: 'b', ...common });
    installations.push(a, b);
    await a.startBuilder('1');
    await a.startServer();
    await a.waitForState('first build and upload ready', (s) => s.uploads.some((u) => u.state === 'ready'));
    // A's builder goes away for a while (its files stay): B, starting now, numbers its first build deb-0000000001 too.
    await a.stopBuilder('1');
    const t0 = Date.now();
    await b.startBuilder('1');
    await b.startServer();
    const bFirst = await b.waitForState('its own first build and upload ready', (s) => s.uploads.some((u) => u.state === 'ready'));
    const recoverMs = Date.now() - t0;
    const bBuild = bFirst.builds.find((x) => x.state === 'ready');
    assert.equal(bBuild?.id, 'deb-0000000001', 'the two stores hand out the same id');
    assert.equal(bBuild?.builderHostname, 'builder-b-1', 'built by B\'s own builder, not answered with A\'s files');
    // Both builders now hold deb-0000000001, for different installations; A builds again, and
    // that build may run on either builder: B sees an id it never heard of.
    await a.startBuilder('1');
    // While nobody advertised deb-0000000001 (A's builder away, B's first build not yet done: long
    // at load) A may have marked its first build lost and built again on its own; that build is
    // then A's second (a third would retire the first, and with it the collision this case is
    // about). Its builder back, A's first build is ready again.
    const back = await a.waitForState('its first build ready again', (s) => s.builds.some((x) => x.id === 'deb-0000000001' && x.state === 'ready'));
    if (!back.builds.some((x) => x.id !== 'deb-0000000001' && x.state !== 'failed')) await a.store.requestBuild('deb');
    await a.waitForState('a second build and upload ready', (s) => s.uploads.filter((u) => u.state === 'ready').length === 2);
    // Well past stray-grace (2 s) and many leak checks (every 1 s) of both servers.
    await Promise.all([a.passes(8), b.passes(8)]);
    const found = await audit([a, b], cloud);
    const bStatus = (await b.store.getStatus<LifecycleStatus>(LIFECYCLE_STATUS_KEY))?.value;
    recordFault({
      scenario: 'second installation on the same gearmand', runs: 1, recovered: found.lost.length === 0 ? 1 : 0,
      lost: found.lost.length, leaked: found.leaked.length, recoverMs,
      notes: `two stores, one gearmand, one Glance; colliding ids held apart: ${found.collisions.join(', ') || 'none'}; time = second installation to its first ready upload`,
    });
    assert.deepEqual(found.lost, []);
    assert.deepEqual(found.leaked, []);
    assert.deepEqual(found.collisions, ['deb-0000000001']);
    assert.deepEqual((await b.store.listBuilds()).map((x) => x.id), ['deb-0000000001'], 'B recorded nothing of A\'s');
    assert.ok(bStatus, 'B publishes its status');
  });

  it('a server on an empty store, beside a builder holding files and a Glance holding images: deletes nothing within or after the grace, and says why', async () => {
    [gearmand, cloud] = await Promise.all([startGearmand(), startLoopbackCloud()]);
    const common = { gearmand, cloud, diskimages, providers };
    const a = await Installation.create({ name: 'a', ...common });
    installations.push(a);
    await a.startBuilder('1');
    await a.startServer();
    await a.waitForState('build and upload ready', (s) => s.uploads.some((u) => u.state === 'ready'));
    await a.stopServer();
    // The operator starts a server with a wrong state-dir (new and empty); A's builder keeps running.
    const graceS = 4;
    const c = await Installation.create({ name: 'c', ...common, lifecycle: { 'stray-grace': graceS } });
    installations.push(c);
    const t0 = Date.now();
    await c.startServer();
    const served = await c.waitForState('its own build and upload ready', (s) => s.uploads.some((u) => u.state === 'ready'));
    const recoverMs = Date.now() - t0;
    assert.deepEqual(served.builds.map((x) => x.id), ['deb-0000000002'], 'the id the builder holds is skipped');
    while (Date.now() - t0 < 2 * graceS * 1000) await c.passes(1);
    await c.passes(3);
    const status = (await c.store.getStatus<LifecycleStatus>(LIFECYCLE_STATUS_KEY))?.value;
    const found = await audit([a, c], cloud);
    recordFault({
      scenario: 'server on an empty store', runs: 1, recovered: found.lost.length === 0 ? 1 : 0,
      lost: found.lost.length, leaked: found.leaked.length, recoverMs,
      notes: `the old store's files and Glance image kept past 2x stray-grace; status: ${status?.held?.length ?? 0} refusal(s); time = new server to its own ready upload`,
    });
    assert.deepEqual(found.lost, [], 'the old store\'s build files and image are all there');
    assert.deepEqual(found.leaked, []);
    assert.match(status?.held?.join('\n') ?? '', /1 image ids builders advertise were there before this store had any record of its own/);
    const listed = await dibImageList({ configFile: c.configPath });
    assert.equal(listed.exitCode, 0, listed.stderr);
    assert.match(listed.stdout, /deletion held: 1 image ids builders advertise were there before this store had any record of its own.*delete-unknown/);
  });
});
