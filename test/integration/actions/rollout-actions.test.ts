/**
 * The image rollout operator actions (lib/actions: pinImage, unpinImage, revokeBuild,
 * unrevokeBuild, promoteBuild) on both stores, a real SQLite file and a real ZooKeeper (a chroot
 * per test): each effect on the store, each typed refusal, and that a refusal changed nothing.
 */
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { deleteBuild, deleteUpload } from '../../../lib/actions/image-delete.js';
import { pinImage, unpinImage } from '../../../lib/actions/image-pin.js';
import { promoteBuild, PROMOTED_REASON } from '../../../lib/actions/image-promote.js';
import { revokeBuild, unrevokeBuild, UNREVOKED_REASON } from '../../../lib/actions/image-revoke.js';
import type { RolloutActionContext } from '../../../lib/actions/rollout-context.js';
import { Releasers } from '../../../lib/lifecycle.js';
import { nodeLock } from '../../../lib/store/lock-names.js';
import type { BuildRecord, NewNode, UploadRecord } from '../../../lib/store/models.js';
import type { Store } from '../../../lib/store/store.js';
import { startZooKeeper, type ZooKeeperHandle } from '../../support/zookeeper.js';
import { CLI_TEST_CONFIG, createCliEnv, type CliEnv } from '../cli/cli-env.js';

const NOW = 1_800_000_000_000;

/**
 * `store`, except that its `nth` call of `method` waits, before it reaches the store, until
 * `release` is called; `reached` resolves once that call is waiting. One action is held between
 * two of its steps while another runs whole: a deterministic interleaving.
 */
function pausing(store: Store, method: keyof Store, nth: number): { store: Store; reached: Promise<void>; release: () => void } {
  let calls = 0;
  let reachedIt!: () => void;
  let release!: () => void;
  const reached = new Promise<void>((resolve) => { reachedIt = resolve; });
  const gate = new Promise<void>((resolve) => { release = resolve; });
  const proxy = new Proxy(store, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      const fn = value as (...args: unknown[]) => unknown;
      if (prop !== method) return fn.bind(target);
      return async (...args: unknown[]) => {
        if (++calls === nth) {
          reachedIt();
          await gate;
        }
        return fn.apply(target, args);
      };
    },
  });
  return { store: proxy, reached, release };
}

for (const backend of ['sqlite', 'zookeeper'] as const) {
  describe(`image rollout actions on ${backend}`, () => {
    const releasers = new Releasers();
    let zk: ZooKeeperHandle | undefined;
    let chroots = 0;
    before(async () => {
      if (backend === 'zookeeper') zk = await startZooKeeper();
    });
    after(async () => {
      await zk?.stop();
    });
    afterEach(() => releasers.releaseAll());

    async function setup(): Promise<{ env: CliEnv; ctx: RolloutActionContext }> {
      const zkLine = zk ? `\nzookeeper-servers: [{host: 127.0.0.1, port: ${zk.port}, chroot: /rollout-actions-${++chroots}}]\n` : '';
      const env = await createCliEnv((stateDir) => CLI_TEST_CONFIG(stateDir) + zkLine);
      releasers.add('env', () => env.close());
      return { env, ctx: { store: env.store, config: env.config, now: () => NOW } };
    }

    /** A ready build of `diskimage` with a ready upload to each of `providers`. */
    async function readyBuild(env: CliEnv, providers: string[], diskimage = 'ubuntu-jammy'): Promise<{ build: BuildRecord; uploads: UploadRecord[] }> {
      const build = await env.store.createBuild({ diskimage, formats: ['qcow2'] });
      await env.store.updateBuild(build.id, { state: 'ready', files: [{ format: 'qcow2', size: 1, sha256: 'a'.repeat(64) }] });
      const uploads: UploadRecord[] = [];
      for (const provider of providers) {
        const u = await env.store.createUpload({ buildId: build.id, provider, imageName: diskimage, externalName: `${build.id}-${provider}` });
        uploads.push((await env.store.updateUpload(u.id, { state: 'ready', externalId: `img-${u.id}`, format: 'qcow2' }))!);
      }
      return { build, uploads };
    }

    it('pins a diskimage to a build everywhere or on one provider, and refuses what could not serve', async () => {
      const { env, ctx } = await setup();
      const { build: old } = await readyBuild(env, ['cloud-a']);
      const { build: debian } = await readyBuild(env, ['cloud-b'], 'debian-bookworm');
      const uploading = await env.store.createBuild({ diskimage: 'ubuntu-jammy', formats: ['qcow2'] });
      await env.store.updateBuild(uploading.id, { state: 'ready' });
      await env.store.createUpload({ buildId: uploading.id, provider: 'cloud-a', imageName: 'ubuntu-jammy', externalName: 'x' });
      const refusals: Array<[Parameters<typeof pinImage>[1], string, string]> = [
        [{ diskimage: 'centos', buildId: old.id }, 'unknown-diskimage', `Diskimage centos not found in ${env.configFile}`],
        [{ diskimage: 'ubuntu-jammy', buildId: old.id, provider: 'cloud-z' }, 'unknown-provider', `Provider cloud-z not found in ${env.configFile}`],
        [{ diskimage: 'debian-bookworm', buildId: debian.id, provider: 'cloud-a' }, 'unknown-provider', 'Provider cloud-a does not list diskimage debian-bookworm'],
        [{ diskimage: 'ubuntu-jammy', buildId: 'ubuntu-jammy-0000009999' }, 'unknown-build', 'Build ubuntu-jammy-0000009999 not found'],
        [{ diskimage: 'ubuntu-jammy', buildId: debian.id }, 'unknown-build', `Build ${debian.id} is a build of debian-bookworm, not of ubuntu-jammy`],
        [{ diskimage: 'ubuntu-jammy', buildId: uploading.id }, 'wrong-state', `Build ${uploading.id} has no ready upload; nothing to pin to`],
        [{ diskimage: 'ubuntu-jammy', buildId: old.id, provider: 'cloud-b' }, 'wrong-state', `Build ${old.id} has no ready upload on cloud-b; nothing to pin to`],
      ];
      for (const [args, refusal, message] of refusals) {
        assert.deepEqual(await pinImage(ctx, args), { ok: false, refusal, message }, JSON.stringify(args));
      }
      await env.store.setRevocation('ubuntu-jammy', uploading.id, true);
      const revoked = await pinImage(ctx, { diskimage: 'ubuntu-jammy', buildId: uploading.id });
      assert.deepEqual(revoked, { ok: false, refusal: 'wrong-state', message: `Build ${uploading.id} is revoked; nodepool image-unrevoke ${uploading.id} before pinning it` });
      assert.deepEqual(await env.store.listPins(), [], 'no refusal pinned anything');

      const pinned = await pinImage(ctx, { diskimage: 'ubuntu-jammy', buildId: old.id, reason: 'new kernel panics' });
      assert.ok(pinned.ok, pinned.message);
      assert.equal(pinned.message, `Launches of ubuntu-jammy on every provider pinned to ${old.id} (new kernel panics)`);
      // cloud-b takes ubuntu-jammy but has no ready upload of the build: the pin cannot decide there.
      assert.deepEqual(pinned.warnings, [`cloud-b has no ready upload of ${old.id}; its launches of ubuntu-jammy boot its newest upload`]);
      assert.deepEqual([pinned.pin.diskimage, pinned.pin.provider, pinned.pin.buildId, pinned.pin.reason, pinned.replaced], ['ubuntu-jammy', null, old.id, 'new kernel panics', null]);
      assert.deepEqual(pinned.uploads.map((u) => u.provider), ['cloud-a']);

      const { build: newer } = await readyBuild(env, ['cloud-a']);
      const onA = await pinImage(ctx, { diskimage: 'ubuntu-jammy', buildId: newer.id, provider: 'cloud-a' });
      assert.ok(onA.ok, onA.message);
      assert.deepEqual([onA.message, onA.warnings], [`Launches of ubuntu-jammy on cloud-a pinned to ${newer.id}`, []]);
      const again = await pinImage(ctx, { diskimage: 'ubuntu-jammy', buildId: old.id, provider: 'cloud-a' });
      assert.ok(again.ok, again.message);
      assert.equal(again.message, `Launches of ubuntu-jammy on cloud-a pinned to ${old.id} (was ${newer.id})`);
      assert.equal(again.replaced?.buildId, newer.id);
      assert.deepEqual((await env.store.listPins()).map((p) => [p.provider, p.buildId]), [[null, old.id], ['cloud-a', old.id]]);
    });

    it('unpins one provider or the whole diskimage, says when nothing was pinned, and removes a pin the config forgot', async () => {
      const { env, ctx } = await setup();
      const { build } = await readyBuild(env, ['cloud-a']);
      await env.store.setPin('ubuntu-jammy', null, build.id, 'hold back');
      await env.store.setPin('ubuntu-jammy', 'cloud-a', build.id);
      assert.deepEqual(await unpinImage(ctx, { diskimage: 'centos' }), { ok: false, refusal: 'unknown-diskimage', message: `Diskimage centos not found in ${env.configFile}` });
      assert.deepEqual(await unpinImage(ctx, { diskimage: 'ubuntu-jammy', provider: 'cloud-z' }),
        { ok: false, refusal: 'unknown-provider', message: `Provider cloud-z not found in ${env.configFile}` });

      const wide = await unpinImage(ctx, { diskimage: 'ubuntu-jammy' });
      assert.ok(wide.ok, wide.message);
      assert.deepEqual([wide.message, wide.removed?.reason, wide.warnings], [
        `Launches of ubuntu-jammy on every provider unpinned (were pinned to ${build.id})`, 'hold back',
        [`cloud-a's own pin to ${build.id} stays (nodepool image-unpin ubuntu-jammy --provider cloud-a)`],
      ]);
      assert.deepEqual((await env.store.listPins()).map((p) => p.provider), ['cloud-a']);
      const onA = await unpinImage(ctx, { diskimage: 'ubuntu-jammy', provider: 'cloud-a' });
      assert.deepEqual(onA.ok && [onA.message, onA.warnings], [`Launches of ubuntu-jammy on cloud-a unpinned (were pinned to ${build.id})`, []]);
      assert.deepEqual(await env.store.listPins(), []);
      const nothing = await unpinImage(ctx, { diskimage: 'ubuntu-jammy', provider: 'cloud-a' });
      assert.deepEqual(nothing, {
        ok: true, diskimage: 'ubuntu-jammy', provider: 'cloud-a', removed: null, warnings: [],
        message: 'Launches of ubuntu-jammy on cloud-a were not pinned; nothing to unpin',
      });

      // A pin of a diskimage the config no longer names is still removable.
      await env.store.setPin('centos', null, 'centos-0000000001');
      const stale = await unpinImage(ctx, { diskimage: 'centos' });
      assert.deepEqual(stale.ok && [stale.removed?.buildId, stale.message], ['centos-0000000001', 'Launches of centos on every provider unpinned (were pinned to centos-0000000001)']);
      assert.deepEqual(await env.store.listPins(), []);
    });

    it('revokes a build (again: the reason is replaced), warning of its pins, and keeps its nodes by default', async () => {
      const { env, ctx } = await setup();
      const { build, uploads } = await readyBuild(env, ['cloud-a']);
      const node = await env.store.createNode({ state: 'ready', provider: 'cloud-a', pool: 'main', labels: ['small'], image: uploads[0]!.id });
      assert.deepEqual(await revokeBuild(ctx, { buildId: 'ubuntu-jammy-0000009999' }), { ok: false, refusal: 'unknown-build', message: 'Build ubuntu-jammy-0000009999 not found' });
      assert.deepEqual(await env.store.listRevocations(), []);
      await env.store.setPin('ubuntu-jammy', 'cloud-a', build.id);

      const revoked = await revokeBuild(ctx, { buildId: build.id, reason: 'kernel panic on boot' });
      assert.ok(revoked.ok, revoked.message);
      assert.equal(revoked.message, `Build ${build.id} revoked (kernel panic on boot): no launch boots its uploads`);
      assert.deepEqual([revoked.wasRevoked, revoked.deletedNodes, revoked.skippedNodes], [false, [], []]);
      assert.deepEqual(revoked.warnings, [`ubuntu-jammy on cloud-a is pinned to ${build.id}, which serves no launch while revoked (nodepool image-unpin ubuntu-jammy --provider cloud-a)`]);
      assert.deepEqual((await env.store.listRevocations()).map((r) => [r.diskimage, r.buildId, r.reason]), [['ubuntu-jammy', build.id, 'kernel panic on boot']]);
      assert.equal((await env.store.getNode(node.id))?.state, 'ready', 'nodes kept');

      const again = await revokeBuild(ctx, { buildId: build.id, reason: 'also slow' });
      assert.ok(again.ok, again.message);
      assert.deepEqual([again.wasRevoked, again.message], [true, `Build ${build.id} was already revoked (also slow): no launch boots its uploads`]);
      assert.deepEqual([again.revocation.reason, again.revocation.since], ['also slow', revoked.revocation.since]);
    });

    it('with delete-ready, marks the idle ready nodes of the build deleting and keeps allocated, locked and other nodes', async () => {
      const { env, ctx } = await setup();
      const { build, uploads } = await readyBuild(env, ['cloud-a']);
      const { uploads: [other] } = await readyBuild(env, ['cloud-a']);
      const image = uploads[0]!.id;
      const mk = (over: Partial<NewNode>) => env.store.createNode({ state: 'ready', provider: 'cloud-a', pool: 'main', labels: ['small'], image, ...over });
      const idle1 = await mk({});
      const idle2 = await mk({});
      const allocated = await mk({ allocatedTo: '100-0000000001' });
      const locked = await mk({});
      const inUse = await mk({ state: 'in-use' });
      const otherBuild = await mk({ image: other!.id });
      const session = await env.store.openSession({ owner: 'test launcher', hostname: 'np-test', pid: process.pid, ttlMs: 60_000 });
      assert.equal(await env.store.tryLock(nodeLock(locked.id), session.id), true);

      const r = await revokeBuild(ctx, { buildId: build.id, nodes: 'delete-ready' });
      assert.ok(r.ok, r.message);
      assert.deepEqual(r.deletedNodes, [idle1.id, idle2.id]);
      assert.deepEqual(r.skippedNodes, [{ nodeId: allocated.id, why: 'allocated to request 100-0000000001' }, { nodeId: locked.id, why: 'locked' }]);
      assert.equal(r.message, `Build ${build.id} revoked: no launch boots its uploads; 2 ready node(s) marked for deletion, 2 kept because busy (${allocated.id}, ${locked.id})`);
      const states = await Promise.all([idle1, idle2, allocated, locked, inUse, otherBuild].map(async (n) => (await env.store.getNode(n.id))?.state));
      assert.deepEqual(states, ['deleting', 'deleting', 'ready', 'ready', 'in-use', 'ready']);
      assert.equal((await env.store.getLock(nodeLock(idle1.id)))?.live ?? false, false, 'the delete let go of the lock');
      await env.store.closeSession(session.id);
    });

    it('unrevokes an operator revocation and resets the uploads a failed canary revoked; refuses when nothing was revoked', async () => {
      const { env, ctx } = await setup();
      const { build, uploads: [onA] } = await readyBuild(env, ['cloud-a']);
      const { build: canary, uploads: [aborted, fine] } = await readyBuild(env, ['cloud-a', 'cloud-b']);
      assert.deepEqual(await unrevokeBuild(ctx, { buildId: 'ubuntu-jammy-0000009999' }), { ok: false, refusal: 'unknown-build', message: 'Build ubuntu-jammy-0000009999 not found' });
      assert.deepEqual(await unrevokeBuild(ctx, { buildId: build.id }),
        { ok: false, refusal: 'wrong-state', message: `Build ${build.id} is not revoked, nor any upload of it; nothing to unrevoke` });

      await env.store.setRevocation('ubuntu-jammy', build.id, true, 'bad');
      const un = await unrevokeBuild(ctx, { buildId: build.id });
      assert.ok(un.ok, un.message);
      assert.deepEqual([un.message, un.removed?.reason, un.resetUploads], [`Build ${build.id} unrevoked: its uploads serve launches again`, 'bad', []]);
      assert.deepEqual(await env.store.listRevocations(), []);
      assert.equal((await env.store.getUpload(onA!.id))?.rollout ?? null, null, 'an upload with no decision is left alone');

      // A canary aborted on cloud-a after 3 failures; cloud-b's upload of the same build is promoted.
      await env.store.updateUpload(aborted!.id, { rollout: { state: 'revoked', time: NOW - 5000, reason: 'canary aborted: 3 launch failures' }, launches: 2, launchFailures: 3 });
      await env.store.updateUpload(fine!.id, { rollout: { state: 'promoted', time: NOW - 5000, reason: 'after 20 launches' }, launches: 20 });
      const reset = await unrevokeBuild(ctx, { buildId: canary.id });
      assert.ok(reset.ok, reset.message);
      assert.deepEqual([reset.removed, reset.resetUploads], [null, [aborted!.id]]);
      assert.equal(reset.message, `Build ${canary.id} was not revoked by an operator; upload(s) ${aborted!.id} revoked by a failed canary start a new canary`);
      const a = await env.store.getUpload(aborted!.id);
      assert.deepEqual([a?.rollout, a?.launches ?? 0, a?.launchFailures ?? 0], [{ state: 'canary', time: NOW, reason: UNREVOKED_REASON }, 0, 0]);
      const b = await env.store.getUpload(fine!.id);
      assert.deepEqual([b?.rollout?.state, b?.launches], ['promoted', 20], 'the promoted upload is left alone');
      const twice = await unrevokeBuild(ctx, { buildId: canary.id });
      assert.equal(twice.ok ? null : twice.refusal, 'wrong-state');
    });

    it("promotes a build's ready uploads, and refuses an unknown or revoked build and one with no ready upload", async () => {
      const { env, ctx } = await setup();
      const { build, uploads: [onA, onB] } = await readyBuild(env, ['cloud-a', 'cloud-b']);
      const pending = await env.store.createBuild({ diskimage: 'ubuntu-jammy', formats: ['qcow2'] });
      assert.deepEqual(await promoteBuild(ctx, { buildId: 'ubuntu-jammy-0000009999' }), { ok: false, refusal: 'unknown-build', message: 'Build ubuntu-jammy-0000009999 not found' });
      assert.deepEqual(await promoteBuild(ctx, { buildId: pending.id }), { ok: false, refusal: 'wrong-state', message: `Build ${pending.id} has no ready upload; nothing to promote` });
      await env.store.setRevocation('ubuntu-jammy', build.id, true);
      assert.deepEqual(await promoteBuild(ctx, { buildId: build.id }),
        { ok: false, refusal: 'wrong-state', message: `Build ${build.id} is revoked; nodepool image-unrevoke ${build.id} first` });
      await env.store.setRevocation('ubuntu-jammy', build.id, false);
      assert.equal((await env.store.getUpload(onA!.id))?.rollout ?? null, null, 'refusals wrote nothing');

      // cloud-b's canary was aborted: it stays revoked, cloud-a's is promoted.
      await env.store.updateUpload(onB!.id, { rollout: { state: 'revoked', time: NOW - 1, reason: 'canary aborted: 2 launch failures' }, launchFailures: 2 });
      const r = await promoteBuild(ctx, { buildId: build.id });
      assert.ok(r.ok, r.message);
      assert.equal(r.message, `Build ${build.id} promoted on cloud-a (upload ${onA!.id}): it serves every launch`);
      assert.deepEqual(r.warnings, [`upload ${onB!.id} on cloud-b stays revoked (canary aborted: 2 launch failures); nodepool image-unrevoke ${build.id} resets it`]);
      assert.deepEqual((await env.store.getUpload(onA!.id))?.rollout, { state: 'promoted', time: NOW, reason: PROMOTED_REASON });
      assert.equal((await env.store.getUpload(onB!.id))?.rollout?.state, 'revoked');

      await env.store.updateUpload(onA!.id, { rollout: { state: 'revoked', time: NOW, reason: 'canary aborted: 3 launch failures' } });
      const none = await promoteBuild(ctx, { buildId: build.id });
      assert.deepEqual(none, { ok: false, refusal: 'wrong-state', message: `Every ready upload of build ${build.id} was revoked by a failed canary; nodepool image-unrevoke ${build.id} first` });
    });

    it('of two pins at once, exactly one says it replaced the pin before them, and the other the first one', async () => {
      const { env, ctx } = await setup();
      const builds = [];
      for (let i = 0; i < 3; i++) builds.push((await readyBuild(env, ['cloud-a'])).build);
      const [b0, b1, b2] = builds as [BuildRecord, BuildRecord, BuildRecord];
      for (let round = 0; round < 5; round++) {
        assert.ok((await pinImage(ctx, { diskimage: 'ubuntu-jammy', buildId: b0.id })).ok);
        const both = await Promise.all([b1, b2].map((b) => pinImage(ctx, { diskimage: 'ubuntu-jammy', buildId: b.id })));
        const replaced = both.map((r) => (r.ok ? r.replaced?.buildId ?? null : r.message));
        const last = (await env.store.listPins())[0]?.buildId;
        const first = last === b1.id ? b2.id : b1.id;
        // The one written first replaced b0's pin, the last one replaced the first's.
        assert.deepEqual(replaced.slice().sort(), [b0.id, first].sort(), `round ${round}: ${JSON.stringify(replaced)}`);
        assert.equal(replaced.filter((id) => id === b0.id).length, 1, `round ${round}: exactly one replaced ${b0.id}`);
      }
    });

    it('says a failed build failed, refuses to promote or unrevoke a build being deleted, and refuses a blank reason', async () => {
      const { env, ctx } = await setup();
      const failed = await env.store.createBuild({ diskimage: 'ubuntu-jammy', formats: ['qcow2'] });
      await env.store.updateBuild(failed.id, { state: 'failed', reason: 'dib exited 1' });
      const saysFailed = (verb: string) => ({ ok: false, refusal: 'wrong-state', message: `Build ${failed.id} failed (dib exited 1); a failed build has no upload to ${verb}` });
      assert.deepEqual(await pinImage(ctx, { diskimage: 'ubuntu-jammy', buildId: failed.id }), saysFailed('pin'));
      assert.deepEqual(await promoteBuild(ctx, { buildId: failed.id }), saysFailed('promote'));
      assert.deepEqual(await revokeBuild(ctx, { buildId: failed.id }), saysFailed('revoke'));
      assert.deepEqual(await unrevokeBuild(ctx, { buildId: failed.id }), saysFailed('unrevoke'));

      const { build: gone, uploads: [upload] } = await readyBuild(env, ['cloud-a']);
      await env.store.setRevocation('ubuntu-jammy', gone.id, true, 'bad');
      await env.store.updateBuild(gone.id, { state: 'deleting', reason: 'deleted by operator' });
      assert.deepEqual(await promoteBuild(ctx, { buildId: gone.id }), { ok: false, refusal: 'wrong-state', message: `Build ${gone.id} is being deleted; it cannot be promoted` });
      assert.deepEqual(await unrevokeBuild(ctx, { buildId: gone.id }), { ok: false, refusal: 'wrong-state', message: `Build ${gone.id} is being deleted; it cannot be unrevoked` });
      assert.equal((await env.store.getUpload(upload!.id))?.rollout ?? null, null, 'nothing promoted');
      assert.deepEqual((await env.store.listRevocations()).map((r) => r.buildId), [gone.id], 'the revocation stays');

      const { build } = await readyBuild(env, ['cloud-a']);
      const blank = { ok: false, refusal: 'invalid-argument', message: 'The reason must not be empty or blank; leave it out to give none' };
      for (const reason of ['', '   ', '\t']) {
        assert.deepEqual(await pinImage(ctx, { diskimage: 'ubuntu-jammy', buildId: build.id, reason }), blank);
        assert.deepEqual(await revokeBuild(ctx, { buildId: build.id, reason }), blank);
      }
      assert.deepEqual([await env.store.listPins(), (await env.store.listRevocations()).length], [[], 1], 'blank reasons wrote nothing');
    });

    /** Neither a pin naming a build being deleted, nor a pin serving an upload being deleted. */
    async function assertNoPinOnDeleting(env: CliEnv): Promise<void> {
      for (const p of await env.store.listPins()) {
        assert.notEqual((await env.store.getBuild(p.buildId))?.state, 'deleting', `pin ${JSON.stringify(p)} names a build being deleted`);
        const served = (await env.store.listUploads({ buildId: p.buildId })).filter((u) => p.provider === null || u.provider === p.provider);
        assert.ok(served.some((u) => u.state === 'ready'), `pin ${JSON.stringify(p)} serves no ready upload: ${JSON.stringify(served.map((u) => u.state))}`);
      }
    }

    it('a pin written while a delete of its build is between its pin check and its write: the delete refuses', async () => {
      const { env, ctx } = await setup();
      const { build } = await readyBuild(env, ['cloud-a']);
      await env.store.updateBuild(build.id, { reason: 'local files deleted after upload' });
      // The delete has read the pins (none) and waits before its first write.
      const held = pausing(env.store, 'updateBuild', 1);
      const deleting = deleteBuild(held.store, { buildId: build.id });
      await held.reached;
      const pinned = await pinImage(ctx, { diskimage: 'ubuntu-jammy', buildId: build.id });
      assert.ok(pinned.ok, pinned.message);
      held.release();
      const deleted = await deleting;
      assert.equal(deleted.ok ? deleted.outcome : deleted.refusal, 'wrong-state', deleted.message);
      assert.match(deleted.message, /is pinned \(ubuntu-jammy on every provider\); unpin it first/);
      const after = await env.store.getBuild(build.id);
      assert.deepEqual([after?.state, after?.reason], ['ready', 'local files deleted after upload'], 'the build is as it was');
      assert.deepEqual((await env.store.listPins()).map((p) => p.buildId), [build.id]);
      await assertNoPinOnDeleting(env);
    });

    it('a delete run while a pin is between its build check and its write: the pin takes itself back and puts back the pin it replaced', async () => {
      const { env, ctx } = await setup();
      const { build: older } = await readyBuild(env, ['cloud-a']);
      const { build } = await readyBuild(env, ['cloud-a']);
      await env.store.setPin('ubuntu-jammy', null, older.id, 'hold back');
      const held = pausing(env.store, 'setPin', 1);
      const pinning = pinImage({ ...ctx, store: held.store }, { diskimage: 'ubuntu-jammy', buildId: build.id });
      await held.reached;
      const deleted = await deleteBuild(env.store, { buildId: build.id });
      assert.ok(deleted.ok && deleted.outcome === 'marked', deleted.message);
      held.release();
      const pinned = await pinning;
      assert.deepEqual(pinned, { ok: false, refusal: 'wrong-state', message: `Build ${build.id} is being deleted; it cannot be pinned` });
      assert.deepEqual((await env.store.listPins()).map((p) => [p.buildId, p.reason]), [[older.id, 'hold back']], 'the pin before it is back');
      assert.equal((await env.store.getBuild(build.id))?.state, 'deleting');
      await assertNoPinOnDeleting(env);
    });

    it('a pin run while a delete has noted itself and not yet read the pins again: the pin sees the note and takes itself back, the delete goes on', async () => {
      const { env, ctx } = await setup();
      const { build } = await readyBuild(env, ['cloud-a']);
      await env.store.updateBuild(build.id, { reason: 'local files deleted after upload' });
      const held = pausing(env.store, 'listPins', 2);
      const deleting = deleteBuild(held.store, { buildId: build.id });
      const first = await Promise.race([held.reached.then(() => 'held'), deleting.then((r) => `finished: ${r.message}`)]);
      assert.equal(first, 'held', 'the delete reads the pins again after its first write');
      // The note follows the reason the build had (the planner reads notes in it).
      assert.match((await env.store.getBuild(build.id))?.reason ?? '', /^local files deleted after upload \(deletion requested by operator; checking pins since \d+\)$/);
      const pinned = await pinImage(ctx, { diskimage: 'ubuntu-jammy', buildId: build.id });
      assert.deepEqual(pinned, { ok: false, refusal: 'wrong-state', message: `Build ${build.id} is being deleted; it cannot be pinned` });
      held.release();
      const deleted = await deleting;
      assert.ok(deleted.ok && deleted.outcome === 'marked', deleted.message);
      assert.deepEqual(await env.store.listPins(), []);
      await assertNoPinOnDeleting(env);
    });

    it('an upload delete and a pin on its provider at once, both orders: never a pin serving an upload being deleted', async () => {
      const { env, ctx } = await setup();
      // The delete waits before its first write; the pin runs whole: the delete refuses.
      const { build: first, uploads: [up1] } = await readyBuild(env, ['cloud-a']);
      const name = (u: UploadRecord) => ({ provider: 'cloud-a', image: 'ubuntu-jammy', buildId: u.buildId, uploadId: u.id });
      const held = pausing(env.store, 'updateUpload', 1);
      const deleting = deleteUpload(held.store, name(up1!));
      await held.reached;
      const pinned = await pinImage(ctx, { diskimage: 'ubuntu-jammy', buildId: first.id, provider: 'cloud-a' });
      assert.ok(pinned.ok, pinned.message);
      held.release();
      const deleted = await deleting;
      assert.equal(deleted.ok ? deleted.outcome : deleted.refusal, 'wrong-state', deleted.message);
      assert.deepEqual([(await env.store.getUpload(up1!.id))?.state, (await env.store.getUpload(up1!.id))?.reason], ['ready', null]);
      await assertNoPinOnDeleting(env);
      assert.ok((await unpinImage(ctx, { diskimage: 'ubuntu-jammy', provider: 'cloud-a' })).ok);

      // The pin waits before its write; the delete runs whole: the pin takes itself back.
      const { build: second, uploads: [up2] } = await readyBuild(env, ['cloud-a']);
      const heldPin = pausing(env.store, 'setPin', 1);
      const pinning = pinImage({ ...ctx, store: heldPin.store }, { diskimage: 'ubuntu-jammy', buildId: second.id, provider: 'cloud-a' });
      await heldPin.reached;
      const gone = await deleteUpload(env.store, name(up2!));
      assert.ok(gone.ok && gone.outcome === 'marked', gone.message);
      heldPin.release();
      assert.deepEqual(await pinning, {
        ok: false, refusal: 'wrong-state', message: `Upload ${up2!.id} of build ${second.id} to cloud-a is being deleted; the build cannot be pinned`,
      });
      assert.deepEqual(await env.store.listPins(), []);
      await assertNoPinOnDeleting(env);
    });
  });
}
