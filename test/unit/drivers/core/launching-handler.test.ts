import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { bootUpload } from '../../../../lib/rollout/boot-upload.js';
import { LaunchingHandler } from '../../../../lib/drivers/core/launching-handler.js';
import type { CountedUpload } from '../../../../lib/rollout/count-launch.js';
import { LaunchError, QuotaExceededError } from '../../../../lib/errors.js';
import type { RolloutSettings } from '../../../../lib/rollout/rollout-policy.js';
import { waitFor } from '../../../../lib/lifecycle.js';
import { createRootLogger } from '../../../../lib/log.js';
import type { NodePatch, NodeRecord, UploadRecord } from '../../../../lib/store/models.js';
import { SqliteStore } from '../../../../lib/store/sqlite/sqlite-store.js';
import type { Store } from '../../../../lib/store/store.js';

/** How a scripted launch ends after the driver chose its upload. */
type Script = { upload: CountedUpload | null; end: 'ready' | 'fail' | 'quota'; abandoned?: boolean };

/** A driver whose launch boots what its script says: the hook under test is the real one. */
class ScriptedHandler extends LaunchingHandler {
  abandoned = false;
  constructor(store: Store, log: ReturnType<typeof createRootLogger>, private readonly scripts: Map<string, Script>) {
    super({ store, log, pool: { name: 'main', maxServers: 10, labels: ['small'], nodeAttributes: {} }, request: REQUEST, clock: () => NOW });
  }

  protected override launchAbandoned(): boolean {
    return this.abandoned;
  }

  protected launchNode(node: NodeRecord): Promise<NodePatch> {
    const s = this.scripts.get(node.id);
    if (!s) throw new Error(`no script for ${node.id}`);
    this.bootsUpload(node, s.upload);
    this.abandoned = s.abandoned ?? false;
    if (s.end === 'quota') return Promise.reject(new QuotaExceededError('over quota'));
    if (s.end === 'fail') return Promise.reject(new LaunchError('host key scan failed'));
    return Promise.resolve({ externalId: `vm-${node.id}`, interfaceIp: '127.0.0.1' });
  }
}

/** After every record the test makes (their times are the store's clock). */
const NOW = Date.now() + 60_000;
let REQUEST: Awaited<ReturnType<Store['createRequest']>>;
const settings: RolloutSettings = { canary: 50, promoteAfter: { launches: 2, ageMs: 0 }, abortOn: { launchFailures: 3 } };

void describe('LaunchingHandler: launch outcomes counted on their upload', () => {
  let dir: string;
  let store: SqliteStore;
  const lines: string[] = [];
  const stream = new PassThrough();
  stream.on('data', (b: Buffer) => lines.push(...b.toString().split('\n').filter(Boolean)));
  const log = createRootLogger({ level: 'info', format: 'json', stream });
  const scripts = new Map<string, Script>();

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'launching-handler-'));
    store = await SqliteStore.open(path.join(dir, 'nodepool.db'));
    REQUEST = await store.createRequest({ labels: ['small'], requestor: 'zuul' });
  });
  after(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  const newUpload = async (): Promise<UploadRecord> => {
    const b = await store.createBuild({ diskimage: 'deb', formats: ['qcow2'] });
    const u = await store.createUpload({ buildId: b.id, provider: 'vms', imageName: 'deb', externalName: null });
    return (await store.updateUpload(u.id, { state: 'ready', externalId: `img-${u.id}` })) as UploadRecord;
  };
  /** Launches one node per script with a fresh handler and waits until every outcome is written. */
  const launch = async (list: Script[], handlerStore: Store = store): Promise<NodeRecord[]> => {
    const h = new ScriptedHandler(handlerStore, log, scripts);
    const nodes: NodeRecord[] = [];
    for (const s of list) {
      const n = await store.createNode({ state: 'building', provider: 'vms', pool: 'main', labels: ['small'] });
      scripts.set(n.id, s);
      nodes.push(n);
      h.launch(n);
    }
    await waitFor(() => h.launchesComplete(), { timeoutMs: 10_000, what: 'launches complete' });
    return nodes;
  };
  const counts = async (id: string): Promise<[number, number]> => {
    const u = await store.getUpload(id);
    return [u?.launches ?? 0, u?.launchFailures ?? 0];
  };
  const countsBecome = (id: string, want: [number, number]): Promise<unknown> =>
    waitFor(async () => JSON.stringify(await counts(id)) === JSON.stringify(want), { timeoutMs: 10_000, what: `counts ${want.join('/')} on ${id}` });

  void it('counts a success and a failure after the choice; quota aborts, abandoned launches and no upload count nothing', async () => {
    const u = await newUpload();
    const on = { uploadId: u.id, settings: undefined };
    const nodes = await launch([
      { upload: on, end: 'quota' }, { upload: on, end: 'fail', abandoned: true }, { upload: null, end: 'ready' },
    ]);
    assert.deepEqual((await Promise.all(nodes.map((n) => store.getNode(n.id)))).map((n) => n?.state), ['aborted', 'failed', 'ready']);
    await launch([{ upload: on, end: 'ready' }, { upload: on, end: 'fail' }]);
    await countsBecome(u.id, [1, 1]);
    assert.equal((await store.getUpload(u.id))?.rollout ?? null, null, 'no settings: no decision written');
  });

  void it('never counts a validation boot', async () => {
    const u = await newUpload();
    const on = { uploadId: u.id, settings };
    const h = new ScriptedHandler(store, log, scripts);
    const v = await store.createNode({ state: 'building', provider: 'vms', pool: 'main', labels: ['small'], validatesUpload: u.id });
    scripts.set(v.id, { upload: on, end: 'fail' });
    h.launch(v);
    await waitFor(() => h.launchesComplete(), { timeoutMs: 10_000, what: 'validation launch complete' });
    await launch([{ upload: on, end: 'ready' }]);
    await countsBecome(u.id, [1, 0]);
  });

  void it('revokes a canary at its K-th failure, logs why, and the previous upload serves again', async () => {
    const old = await newUpload();
    await store.updateUpload(old.id, { rollout: { state: 'promoted', time: 1, reason: null } });
    const u = await newUpload();
    await launch([1, 2, 3].map(() => ({ upload: { uploadId: u.id, settings }, end: 'fail' as const })));
    await countsBecome(u.id, [0, 3]);
    const revoked = await waitFor(async () => ((await store.getUpload(u.id))?.rollout?.state === 'revoked' ? store.getUpload(u.id) : undefined),
      { timeoutMs: 10_000, what: 'revocation written' });
    assert.deepEqual(revoked.rollout, { state: 'revoked', time: NOW, reason: 'canary aborted: 3 launch failures' });
    const warn = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.level === 'warn' && l.upload === u.id);
    assert.equal(warn?.message, 'upload revoked: canary aborted: 3 launch failures');
    const listed = await store.listUploads({ provider: 'vms', diskimage: 'deb', states: ['ready'] });
    const view = { pins: [], revocations: await store.listRevocations(), settings, now: NOW };
    assert.equal(bootUpload(listed.filter((x) => x.id === old.id || x.id === u.id), { provider: 'vms', diskimage: 'deb', rollout: view, key: '0000000001' })?.id, old.id);
  });

  void it('promotes a canary after N successes and logs it', async () => {
    const u = await newUpload();
    await launch([{ upload: { uploadId: u.id, settings }, end: 'ready' }, { upload: { uploadId: u.id, settings }, end: 'ready' }]);
    const promoted = await waitFor(async () => ((await store.getUpload(u.id))?.rollout?.state === 'promoted' ? store.getUpload(u.id) : undefined),
      { timeoutMs: 10_000, what: 'promotion written' });
    assert.deepEqual(promoted.rollout, { state: 'promoted', time: NOW, reason: 'after 2 launches' });
    assert.ok(lines.some((l) => { const j = JSON.parse(l) as Record<string, unknown>; return j.level === 'info' && j.message === 'upload promoted' && j.upload === u.id; }));
  });

  void it('a store that fails or hangs on counting neither fails nor delays the launch', async () => {
    const u = await newUpload();
    let hang = true;
    const away = new Proxy(store, {
      get(target, prop, receiver) {
        if (prop === 'recordLaunch') {
          return (id: string) => (hang ? new Promise(() => undefined) : Promise.reject(new Error(`store away while counting ${id}`)));
        }
        const v = Reflect.get(target, prop, receiver) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const [hung] = await launch([{ upload: { uploadId: u.id, settings }, end: 'ready' }], away);
    assert.equal((await store.getNode(hung?.id ?? ''))?.state, 'ready', 'the outcome is written while the count hangs');
    hang = false;
    const [failed] = await launch([{ upload: { uploadId: u.id, settings }, end: 'ready' }], away);
    assert.equal((await store.getNode(failed?.id ?? ''))?.state, 'ready');
    await waitFor(() => lines.some((l) => l.includes('could not count the launch on its upload') && l.includes(u.id)), { timeoutMs: 10_000, what: 'the lost count logged' });
    assert.deepEqual(await counts(u.id), [0, 0]);
  });
});
