/**
 * The store contract for image rollout (issue 24): pins (diskimage-wide and per provider),
 * revoked builds, each upload's launch counts and written rollout decision, and recordLaunch
 * counting every launch once however many handles count at the same time. Part of
 * storeContract in store.contract.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { countLaunch } from '../../lib/rollout/count-launch.js';
import { StateConflictError } from '../../lib/errors.js';
import { abortReason } from '../../lib/rollout/canary-policy.js';
import { rolloutSnapshot } from '../../lib/store/rollout-snapshot.js';
import { silentLogger } from '../../lib/log.js';
import type { UploadRecord } from '../../lib/store/models.js';
import type { Spoil } from './spoil.js';
import { storeError, T0, type StoreHarness } from './store-helpers.js';

/** Registers the rollout cases; `spoil()` is the current test's spoiler. */
export function rolloutStoreContract(h: StoreHarness, spoil: () => Spoil): void {
  const upload = async (diskimage = 'debian', provider = 'cloud-a'): Promise<UploadRecord> => {
    const b = await h.store.createBuild({ diskimage, formats: ['qcow2'] });
    return h.store.createUpload({ buildId: b.id, provider, imageName: diskimage, externalName: null });
  };

  void describe('rollout: pins', () => {
    void it('pins a diskimage to a build, replaces build, reason and since when pinned again, and unpins', async () => {
      const s = h.store;
      assert.deepEqual(await s.listPins(), []);
      await s.setPin('debian', null, 'debian-0000000001', 'bad mirror in 2');
      assert.deepEqual(await s.listPins(), [{ diskimage: 'debian', provider: null, buildId: 'debian-0000000001', since: T0, reason: 'bad mirror in 2' }]);
      h.now = T0 + 500;
      await s.setPin('debian', null, 'debian-0000000003');
      assert.deepEqual(await s.listPins(), [{ diskimage: 'debian', provider: null, buildId: 'debian-0000000003', since: T0 + 500, reason: null }]);
      await s.setPin('debian', null, null);
      assert.deepEqual(await s.listPins(), []);
      await s.setPin('debian', null, null);
      assert.deepEqual(await s.listPins(), [], 'unpinning what is not pinned is fine');
    });

    void it('keeps a provider pin beside the diskimage-wide one, lists by diskimage then provider (diskimage-wide first), and unpins each alone', async () => {
      const s = h.store;
      await s.setPin('ubuntu', 'cloud-b', 'ubuntu-0000000002');
      await s.setPin('debian', 'cloud-b', 'debian-0000000002', 'cloud-b needs the old kernel');
      await s.setPin('debian', null, 'debian-0000000001');
      await s.setPin('debian', 'cloud-a', 'debian-0000000003');
      const key = (p: { diskimage: string; provider: string | null; buildId: string }): string[] => [p.diskimage, p.provider ?? '*', p.buildId];
      assert.deepEqual((await s.listPins()).map(key), [
        ['debian', '*', 'debian-0000000001'], ['debian', 'cloud-a', 'debian-0000000003'], ['debian', 'cloud-b', 'debian-0000000002'],
        ['ubuntu', 'cloud-b', 'ubuntu-0000000002'],
      ]);
      await s.setPin('debian', null, null);
      assert.deepEqual((await s.listPins()).map(key), [
        ['debian', 'cloud-a', 'debian-0000000003'], ['debian', 'cloud-b', 'debian-0000000002'], ['ubuntu', 'cloud-b', 'ubuntu-0000000002'],
      ]);
      await s.setPin('debian', 'cloud-a', null);
      assert.deepEqual((await s.listPins()).map(key), [['debian', 'cloud-b', 'debian-0000000002'], ['ubuntu', 'cloud-b', 'ubuntu-0000000002']]);
      assert.equal((await s.listPins())[0]?.reason, 'cloud-b needs the old kernel');
    });

    void it('refuses a build id of another diskimage, a malformed one, and an empty provider', async () => {
      await storeError(h.store.setPin('debian', null, 'ubuntu-0000000001'));
      await storeError(h.store.setPin('debian', null, '../0000000001'));
      await storeError(h.store.setPin('debian', '', 'debian-0000000001'));
      assert.deepEqual(await h.store.listPins(), []);
    });
  });

  void describe('rollout: revocations', () => {
    void it('revokes a build, keeps since when revoked again, takes a new reason (keeps the old without one), and unrevokes', async () => {
      const s = h.store;
      await s.setRevocation('debian', 'debian-0000000002', true, 'kernel panics');
      await s.setRevocation('centos', 'centos-0000000001', true);
      h.now = T0 + 100;
      await s.setRevocation('debian', 'debian-0000000001', true, 'older too');
      assert.deepEqual(await s.listRevocations(), [
        { diskimage: 'centos', buildId: 'centos-0000000001', since: T0, reason: null },
        { diskimage: 'debian', buildId: 'debian-0000000001', since: T0 + 100, reason: 'older too' },
        { diskimage: 'debian', buildId: 'debian-0000000002', since: T0, reason: 'kernel panics' },
      ]);
      h.now = T0 + 200;
      await s.setRevocation('debian', 'debian-0000000002', true, 'kernel panics on cloud-a');
      await s.setRevocation('debian', 'debian-0000000001', true);
      const debian = (await s.listRevocations()).filter((r) => r.diskimage === 'debian');
      assert.deepEqual(debian.map((r) => [r.buildId, r.since, r.reason]), [
        ['debian-0000000001', T0 + 100, 'older too'], ['debian-0000000002', T0, 'kernel panics on cloud-a'],
      ]);
      await s.setRevocation('debian', 'debian-0000000002', false);
      await s.setRevocation('debian', 'debian-0000000009', false);
      assert.deepEqual((await s.listRevocations()).map((r) => r.buildId), ['centos-0000000001', 'debian-0000000001']);
    });

    void it('refuses a build id that is not one of the diskimage', async () => {
      await storeError(h.store.setRevocation('debian', 'ubuntu-0000000001', true));
      await storeError(h.store.setRevocation('debian', 'debian-0000000001/x', true));
      assert.deepEqual(await h.store.listRevocations(), []);
    });

    void it('keeps a corrupt revocation revoking (reason says corrupt), names it, and removes it on unrevoke', async () => {
      const s = h.store;
      await s.setRevocation('debian', 'debian-0000000001', true, 'bad');
      await s.setRevocation('debian', 'debian-0000000002', true, 'worse');
      await spoil()({ kind: 'revocation', diskimage: 'debian', buildId: 'debian-0000000001' }, 'no-time');
      const listed = await s.listRevocations();
      assert.deepEqual(listed.map((r) => r.buildId), ['debian-0000000001', 'debian-0000000002']);
      assert.match(listed[0]?.reason ?? '', /corrupt revocation record/);
      assert.equal(listed[1]?.reason, 'worse');
      assert.deepEqual((await s.listCorrupt()).map((c) => [c.kind, c.id, c.diskimage]), [['revocation', 'debian-0000000001', 'debian']]);
      await s.setRevocation('debian', 'debian-0000000001', false);
      assert.deepEqual(await s.listCorrupt(), []);
      assert.deepEqual((await s.listRevocations()).map((r) => r.buildId), ['debian-0000000002']);
    });

    void it('leaves a corrupt pin out of listPins, names it, and a new pin or an unpin replaces it', async () => {
      const s = h.store;
      await s.setPin('debian', null, 'debian-0000000001');
      await s.setPin('debian', 'cloud-a', 'debian-0000000002');
      await spoil()({ kind: 'pin', diskimage: 'debian', provider: 'cloud-a' }, 'no-time');
      assert.deepEqual((await s.listPins()).map((p) => p.provider), [null]);
      assert.deepEqual((await s.listCorrupt()).map((c) => [c.kind, c.id, c.provider]), [['pin', 'debian/cloud-a', 'cloud-a']]);
      await s.setPin('debian', 'cloud-a', 'debian-0000000003');
      assert.deepEqual(await s.listCorrupt(), []);
      assert.deepEqual((await s.listPins()).map((p) => p.buildId), ['debian-0000000001', 'debian-0000000003']);
      await spoil()({ kind: 'pin', diskimage: 'debian', provider: null }, 'garbage');
      assert.deepEqual((await s.listCorrupt()).map((c) => [c.kind, c.id]), [['pin', 'debian']]);
      await s.setPin('debian', null, null);
      assert.deepEqual(await s.listCorrupt(), []);
      assert.deepEqual((await s.listPins()).map((p) => p.provider), ['cloud-a']);
    });
  });

  void describe('rollout: upload launch counts and decisions', () => {
    void it('reads an upload with nothing counted or decided as launches 0 and no rollout', async () => {
      const u = await upload();
      for (const got of [u, await h.store.getUpload(u.id), (await h.store.listUploads())[0]]) {
        assert.equal(got?.launches ?? 0, 0);
        assert.equal(got?.launchFailures ?? 0, 0);
        assert.equal(got?.rollout ?? null, null);
      }
    });

    void it('round-trips a rollout decision and the counts through update, get and list, and clears the decision with null', async () => {
      const u = await upload();
      h.now = T0 + 50;
      const canary = { state: 'canary' as const, time: T0 + 40, reason: null };
      const updated = await h.store.updateUpload(u.id, { rollout: canary, launches: 7, launchFailures: 1 });
      for (const got of [updated, await h.store.getUpload(u.id), (await h.store.listUploads())[0]]) {
        assert.deepEqual([got?.rollout, got?.launches, got?.launchFailures], [canary, 7, 1]);
        assert.equal(got?.stateTime, T0, 'a rollout decision is not a state change');
      }
      const revoked = { state: 'revoked' as const, time: T0 + 60, reason: '3 failed launches' };
      await h.store.updateUpload(u.id, { rollout: revoked });
      assert.deepEqual((await h.store.getUpload(u.id))?.rollout, revoked);
      assert.equal((await h.store.getUpload(u.id))?.launches, 7, 'counts stay when only the decision changes');
      const cleared = await h.store.updateUpload(u.id, { rollout: null, launches: 0, launchFailures: 0 });
      for (const got of [cleared, await h.store.getUpload(u.id)]) {
        assert.equal(got?.rollout ?? null, null);
        assert.equal(got?.launches ?? 0, 0);
        assert.equal(got?.launchFailures ?? 0, 0);
      }
    });

    void it('refuses a rollout state no version knows and a negative count', async () => {
      const u = await upload();
      await storeError(h.store.updateUpload(u.id, { rollout: { state: 'exploded' as 'canary', time: T0, reason: null } }));
      await storeError(h.store.updateUpload(u.id, { launches: -1 }));
      assert.equal((await h.store.getUpload(u.id))?.rollout ?? null, null);
    });

    void it('counts launches and failures with recordLaunch, and answers undefined for an upload that is gone', async () => {
      const u = await upload();
      assert.equal((await h.store.recordLaunch(u.id, 'success'))?.launches, 1);
      const second = await h.store.recordLaunch(u.id, 'success');
      assert.deepEqual([second?.launches, second?.launchFailures ?? 0], [2, 0]);
      const failed = await h.store.recordLaunch(u.id, 'failure');
      assert.deepEqual([failed?.launches, failed?.launchFailures], [2, 1]);
      assert.equal(failed?.state, 'uploading');
      assert.deepEqual([(await h.store.getUpload(u.id))?.launches, (await h.store.getUpload(u.id))?.launchFailures], [2, 1]);
      assert.equal(await h.store.deleteUpload(u.id), true);
      assert.equal(await h.store.recordLaunch(u.id, 'success'), undefined);
      assert.equal(await h.store.recordLaunch('0000009999', 'failure'), undefined);
    });

    void it('loses no count when two handles record 50 launches at the same time', async () => {
      const u = await upload();
      const other = await h.openAnother();
      const results = await Promise.all(Array.from({ length: 50 }, (_, i) => (i % 2 === 0 ? h.store : other)
        .recordLaunch(u.id, i % 5 === 0 ? 'failure' : 'success')));
      assert.ok(results.every((r) => r !== undefined));
      const got = await h.store.getUpload(u.id);
      assert.deepEqual([got?.launches, got?.launchFailures], [40, 10]);
      assert.equal((await other.getUpload(u.id))?.launches, 40);
      // Each call saw its own count: the successes' answers are 40 distinct counts.
      const seen = results.filter((_, i) => i % 5 !== 0).map((r) => r?.launches);
      assert.equal(new Set(seen).size, 40);
    });

    void it('writes a rollout decision only from the counts and decision it was taken from: a promotion from a stale snapshot loses', async () => {
      const s = h.store;
      const u = await upload();
      const stale = await s.recordLaunch(u.id, 'success');
      const fresh = await s.recordLaunch(u.id, 'failure');
      assert.ok(stale && fresh);
      const revoked = { state: 'revoked' as const, time: T0 + 1, reason: abortReason(1) };
      const promoted = { state: 'promoted' as const, time: T0 + 1, reason: 'after 1 launches' };
      // Before anyone decided: the promotion from before the failure was counted loses already.
      await storeError(s.updateUpload(u.id, { rollout: promoted }, { expectRollout: rolloutSnapshot(stale) }), StateConflictError);
      assert.equal((await s.getUpload(u.id))?.rollout ?? null, null);
      assert.equal((await s.updateUpload(u.id, { rollout: revoked }, { expectRollout: rolloutSnapshot(fresh) }))?.rollout?.state, 'revoked');
      // After the abort: neither the stale promotion nor one from the counts before the abort is written.
      await storeError(s.updateUpload(u.id, { rollout: promoted }, { expectRollout: rolloutSnapshot(stale) }), StateConflictError);
      await storeError(s.updateUpload(u.id, { rollout: promoted }, { expectRollout: rolloutSnapshot(fresh) }), StateConflictError);
      const got = await s.getUpload(u.id);
      assert.deepEqual([got?.rollout, got?.launches, got?.launchFailures], [revoked, 1, 1]);
    });

    void it('never promotes a canary that reached abort-on when two launchers count at once (countLaunch, two handles)', async () => {
      const settings = { canary: 50, promoteAfter: { launches: 1, ageMs: 0 }, abortOn: { launchFailures: 1 } };
      const u = await upload();
      await h.store.updateUpload(u.id, { state: 'ready' });
      const other = await h.openAnother();
      // Launcher B counts a success (promote-after reached, no failure yet), then stalls before
      // deciding until launcher A has counted a failure and written its abort.
      let stalled!: () => void;
      const bStalled = new Promise<void>((resolve) => { stalled = resolve; });
      let release!: () => void;
      const aDone = new Promise<void>((resolve) => { release = resolve; });
      let held = false;
      const launcherB = new Proxy(other, {
        get(target, prop, receiver) {
          const v: unknown = Reflect.get(target, prop, receiver);
          if (prop === 'listRevocations' && !held) {
            held = true;
            return async () => { stalled(); await aDone; return target.listRevocations(); };
          }
          return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
        },
      });
      const clock = (): number => h.now;
      const b = countLaunch(launcherB, { uploadId: u.id, settings }, 'success', clock, silentLogger());
      await bStalled;
      await countLaunch(h.store, { uploadId: u.id, settings }, 'failure', clock, silentLogger());
      assert.equal((await h.store.getUpload(u.id))?.rollout?.state, 'revoked', 'launcher A aborted the canary');
      release();
      await b;
      const got = await h.store.getUpload(u.id);
      assert.deepEqual([got?.rollout?.state, got?.rollout?.reason, got?.launches, got?.launchFailures], ['revoked', abortReason(1), 1, 1],
        'the promotion launcher B decided from its stale count lost');
    });

    void it('holds a canary\'s promotion outside its promote-window and writes it at the first launch counted inside (countLaunch)', async () => {
      const hourMs = 3_600_000;
      const hour = new Date(h.now).getUTCHours();
      // The window opens two hours from now, for an hour: now is outside it, now + 2 h inside.
      const promoteWindow = { fromHour: (hour + 2) % 24, toHour: (hour + 3) % 24 };
      const settings = { canary: 50, promoteAfter: { launches: 1, ageMs: 0 }, abortOn: { launchFailures: 0 }, promoteWindow };
      const u = await upload();
      await h.store.updateUpload(u.id, { state: 'ready' });
      await countLaunch(h.store, { uploadId: u.id, settings }, 'success', () => h.now, silentLogger());
      const held = await h.store.getUpload(u.id);
      assert.deepEqual([held?.rollout ?? null, held?.launches], [null, 1], 'promote-after reached outside the window: still a canary');
      const inside = h.now + 2 * hourMs;
      await countLaunch(h.store, { uploadId: u.id, settings }, 'success', () => inside, silentLogger());
      const got = await h.store.getUpload(u.id);
      assert.deepEqual([got?.rollout, got?.launches], [{ state: 'promoted', time: inside, reason: 'after 2 launches' }, 2]);
    });
  });
}
