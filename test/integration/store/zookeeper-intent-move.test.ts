/**
 * Issue 31: this project's intents (pauses per provider, pins, revocations, upload retries) sat
 * under `/nodepool/images/<image>/<dir>/<key>`, the depth at which a Nodepool 11 launcher's image
 * cache takes any znode for a build. They now live under `/nodepool/image-intents`; a tree an
 * older version wrote is read in both places by a read-only open and moved by a writing one.
 * Nodepool 11's reading is mirrored by test/fixtures/nodepool11_read.py (Debian's python3-kazoo).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import { ZooKeeperStore } from '../../../lib/store/zookeeper/zookeeper-store.js';
import { ReadCounter, ZkClient } from '../../../lib/store/zookeeper/zk-client.js';
import { runningProcesses } from '../../support/processes.js';
import { startZooKeeper, type ZooKeeperHandle } from '../../support/zookeeper.js';

const run = promisify(execFile);
const nodepool11Read = fileURLToPath(new URL('../../fixtures/nodepool11_read.py', import.meta.url));
const T0 = 1_750_000_000;

/** What an older version wrote, by path under the chroot. */
const OLD: Record<string, unknown> = {
  '/nodepool/images/deb/pin': { build_id: 'deb-0000000001', since: T0, reason: 'known good' },
  '/nodepool/images/deb/provider-pins/cloud-a': { build_id: 'deb-0000000001', since: T0 + 1, reason: null },
  '/nodepool/images/deb/provider-pauses/cloud-a': { since: T0 + 2, reason: 'maintenance' },
  '/nodepool/images/deb/provider-pauses/cloud-b': { since: T0 + 3, reason: null },
  '/nodepool/images/deb/revocations/deb-0000000002': { since: T0 + 4, reason: 'kernel panics' },
  '/nodepool/images/deb/upload-retries/cloud-b': { requested: T0 + 5 },
};

let zk: ZooKeeperHandle;

before(async () => {
  zk = await startZooKeeper();
});

after(async () => {
  await zk.stop();
  assert.deepEqual(runningProcesses().map((p) => p.name), []);
});

void describe("the ZooKeeper store's intents outside Nodepool's image tree", () => {
  let chroot: string;
  let raw: ZkClient;
  const opened: ZooKeeperStore[] = [];
  const open = async (readOnly = false): Promise<ZooKeeperStore> => {
    const s = await ZooKeeperStore.open({ servers: [{ host: '127.0.0.1', port: zk.port, chroot }], readOnly });
    opened.push(s);
    return s;
  };

  beforeEach(async () => {
    chroot = `/intent-move-${randomUUID()}`;
    raw = await ZkClient.connect({ hosts: `127.0.0.1:${zk.port}`, sessionTimeoutMs: 10_000, reads: new ReadCounter() });
  });
  afterEach(async () => {
    for (const s of opened.splice(0)) await s.close();
    await raw.close();
  });

  /** Writes the tree an older version left: a Nodepool build and our intents beside it. */
  async function oldTree(): Promise<void> {
    await raw.mkdirp(`${chroot}/nodepool/images/deb/builds`);
    await raw.create(`${chroot}/nodepool/images/deb/builds/0000000001`,
      Buffer.from(JSON.stringify({ state: 'ready', state_time: T0, builder: 'nb01', formats: 'qcow2', username: 'zuul', python_path: 'auto', shell_type: null })));
    for (const [path, json] of Object.entries(OLD)) {
      await raw.mkdirp(`${chroot}${path.slice(0, path.lastIndexOf('/'))}`);
      await raw.create(`${chroot}${path}`, Buffer.from(JSON.stringify(json)));
    }
  }

  /** What Nodepool 11 makes of the tree (test/fixtures/nodepool11_read.py): its exit code and report. */
  async function nodepool11(): Promise<{ code: number; records: Record<string, number>; errors: string[] }> {
    const got = await run('/usr/bin/python3', [nodepool11Read, `127.0.0.1:${zk.port}${chroot}`], { timeout: 30_000 })
      .then((r) => ({ code: 0, stdout: r.stdout }))
      .catch((err: { code?: number; stdout?: string }) => ({ code: err.code ?? -1, stdout: err.stdout ?? '' }));
    const read = JSON.parse(got.stdout) as { records: Record<string, number>; errors: string[] };
    return { code: got.code, records: read.records, errors: read.errors };
  }

  /** Every intent as the store lists it. */
  async function intents(s: ZooKeeperStore): Promise<unknown> {
    return {
      pauses: (await s.listPauses()).map((p) => [p.provider, p.since, p.reason]),
      pins: (await s.listPins()).map((p) => [p.provider, p.buildId, p.since, p.reason]),
      revocations: (await s.listRevocations()).map((r) => [r.buildId, r.since, r.reason]),
      retries: (await s.listUploadRetries()).map((r) => [r.provider, r.requested]),
    };
  }
  const EXPECTED = {
    pauses: [['cloud-a', (T0 + 2) * 1000, 'maintenance'], ['cloud-b', (T0 + 3) * 1000, null]],
    pins: [[null, 'deb-0000000001', T0 * 1000, 'known good'], ['cloud-a', 'deb-0000000001', (T0 + 1) * 1000, null]],
    revocations: [['deb-0000000002', (T0 + 4) * 1000, 'kernel panics']],
    retries: [['cloud-b', (T0 + 5) * 1000]],
  };

  const present = async (path: string): Promise<boolean> => (await raw.exists(`${chroot}${path}`)) !== undefined;
  const moved = (path: string): string => path.replace('/nodepool/images/', '/nodepool/image-intents/');

  void it('Nodepool 11 reads the old places as builds; a read-only open reads them there and leaves them', async () => {
    await oldTree();
    const before = await nodepool11();
    assert.equal(before.code, 3);
    assert.deepEqual(before.errors.filter((e) => e.includes('not a build, but read as one by its depth')).length, 5, before.errors.join('\n'));
    assert.ok(before.errors.some((e) => e.includes("TypeError: int() argument must be a string, a bytes-like object or a real number, not 'NoneType'")), before.errors.join('\n'));

    const ro = await open(true);
    assert.deepEqual(await intents(ro), EXPECTED);
    for (const path of Object.keys(OLD)) {
      assert.ok(await present(path), `${path} left as it was`);
      assert.equal(await present(moved(path)), false);
    }
  });

  void it('a writing open moves them out of /nodepool/images, once, keeping each record, and Nodepool 11 then reads every record', async () => {
    await oldTree();
    // One written in its new place meanwhile (by this version) wins over its old copy.
    await raw.mkdirp(`${chroot}/nodepool/image-intents/deb/provider-pauses`);
    await raw.create(`${chroot}/nodepool/image-intents/deb/provider-pauses/cloud-b`, Buffer.from(JSON.stringify({ since: T0 + 9, reason: 'newer' })));

    const s = await open();
    const expected = { ...EXPECTED, pauses: [EXPECTED.pauses[0], ['cloud-b', (T0 + 9) * 1000, 'newer']] };
    assert.deepEqual(await intents(s), expected);
    for (const path of Object.keys(OLD)) {
      assert.equal(await present(path), false, `${path} moved away`);
      assert.ok(await present(moved(path)), `${moved(path)} there`);
    }
    for (const dir of ['provider-pins', 'provider-pauses', 'revocations', 'upload-retries']) assert.equal(await present(`/nodepool/images/deb/${dir}`), false);
    assert.deepEqual(JSON.parse((await raw.getData(`${chroot}/nodepool/image-intents/deb/revocations/deb-0000000002`))?.data.toString() ?? ''), OLD['/nodepool/images/deb/revocations/deb-0000000002']);
    assert.deepEqual((await raw.getChildren(`${chroot}/nodepool/images/deb`))?.sort(), ['builds']);
    assert.deepEqual(await nodepool11(), { code: 0, records: { build: 1 }, errors: [] });

    // Opening again moves nothing and reads the same; a read-only open reads the new places.
    assert.deepEqual(await intents(await open()), expected);
    assert.deepEqual(await intents(await open(true)), expected);

    // Written now: a pause per provider, a pin, a revocation and an upload retry; Nodepool 11 still reads every record.
    for (const p of ['cloud-a', 'cloud-b', 'cloud-c']) await s.setPause('deb', p, true, `pause of ${p}`);
    await s.setPin('deb', 'cloud-c', 'deb-0000000001', 'hold back');
    await s.setRevocation('deb', 'deb-0000000003', true);
    await s.requestUploadRetry('deb', 'cloud-c');
    assert.deepEqual(await nodepool11(), { code: 0, records: { build: 1 }, errors: [] });
    assert.deepEqual((await s.listPauses()).map((p) => [p.provider, p.reason]), [['cloud-a', 'pause of cloud-a'], ['cloud-b', 'pause of cloud-b'], ['cloud-c', 'pause of cloud-c']]);
    assert.deepEqual((await s.listUploadRetries()).map((r) => r.provider), ['cloud-b', 'cloud-c']);
  });
});
