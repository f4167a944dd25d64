import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ago, bid, build, config, NOW, pin, planRow, revocation, table, uid, upload } from './planner-fixtures.js';

const A1 = bid('a', 1);
const A2 = bid('a', 2);
const deleteUpload = (n: number, reason: string) => ({ type: 'delete-upload' as const, uploadId: uid(n), reason });
const deleteBuild = (buildId: string, reason: string) => ({ type: 'delete-build' as const, buildId, reason });
const THREE = [build('a', 1, 'ready', { stateTime: ago(7200) }), build('a', 2), build('a', 3)];
const twoProviders = (p2: object[]) => config({ providers: [{ name: 'p1', cloud: 'c', diskimages: [{ name: 'a' }] }, { name: 'p2', cloud: 'c', diskimages: p2 }] });

table('rule 5: deletion and retention', [
  {
    name: 'keeps the two newest ready uploads per image-provider and deletes older ones',
    builds: [build('a', 1)], uploads: [upload(1, 'a', 1), upload(2, 'a', 1), upload(3, 'a', 1)],
    actions: [deleteUpload(1, 'retention')],
  },
  {
    name: 'deletes the uploads of a build beyond the two newest first; the build waits',
    builds: THREE, uploads: [upload(1, 'a', 1), upload(2, 'a', 2), upload(3, 'a', 3)],
    actions: [deleteUpload(1, 'retention')],
  },
  {
    name: 'deletes a build beyond the two newest once it has no uploads',
    builds: THREE, uploads: [upload(2, 'a', 2), upload(3, 'a', 3)],
    actions: [deleteBuild(A1, 'retention')],
  },
  {
    name: 'keeps an old build while one of its uploads is among the two newest',
    builds: THREE, uploads: [upload(1, 'a', 1), upload(2, 'a', 2, 'p1', 'failed', { stateTime: ago(2000) }), upload(3, 'a', 3)],
    actions: [deleteUpload(2, `failed, superseded by upload ${uid(3)}`)],
  },
  {
    name: 'deletes a failed upload older than the newest ready upload',
    builds: [build('a', 1)], uploads: [upload(1, 'a', 1, 'p1', 'failed'), upload(2, 'a', 1)],
    actions: [deleteUpload(1, `failed, superseded by upload ${uid(2)}`)],
  },
  {
    name: 'keeps failed uploads newer than the newest ready upload (they drive the backoff)',
    builds: [build('a', 1), build('a', 2)], uploads: [upload(1, 'a', 1), upload(2, 'a', 2, 'p1', 'failed', { stateTime: ago(30) })],
    actions: [],
  },
  {
    name: 'keeps the newest 7 failed uploads since the newest ready one and deletes older failures (they no longer change the backoff)',
    builds: [build('a', 1), build('a', 2)],
    uploads: [upload(1, 'a', 1), ...Array.from({ length: 9 }, (_, i) => upload(i + 2, 'a', 2, 'p1', 'failed', { stateTime: ago(100 - i) }))],
    actions: [deleteUpload(2, 'failed, older than the newest 7 failures'), deleteUpload(3, 'failed, older than the newest 7 failures')],
  },
  {
    name: 'keeps the newest 7 failed builds when none succeeded and deletes older ones',
    builds: Array.from({ length: 8 }, (_, i) => build('a', i + 1, 'failed', { stateTime: ago(100 - i) })),
    actions: [deleteBuild(A1, 'failed, older than the newest 7 failures')],
  },
  {
    name: 'deletes uploads to a provider that no longer lists the diskimage once the grace period is over',
    config: twoProviders([]), builds: [build('a', 1)], uploads: [upload(1, 'a', 1), upload(2, 'a', 1, 'p2')],
    removed: { 'diskimage a on provider p2': 600 },
    actions: [deleteUpload(2, 'provider p2 no longer lists a')],
  },
  {
    name: 'keeps uploads to a provider that no longer lists the diskimage during the grace period',
    config: twoProviders([]), builds: [build('a', 1)], uploads: [upload(1, 'a', 1), upload(2, 'a', 1, 'p2')],
    removed: { 'diskimage a on provider p2': 599 },
    actions: [],
  },
  {
    name: 'deletes uploads to a provider gone from the config once the grace period is over',
    builds: [build('a', 1)], uploads: [upload(1, 'a', 1), upload(2, 'a', 1, 'p9', 'failed')],
    removed: { 'diskimage a on provider p9': 601 },
    actions: [deleteUpload(2, 'provider p9 no longer lists a')],
  },
  {
    name: 'resumes deleting an upload in deleting state',
    builds: [build('a', 1)], uploads: [upload(1, 'a', 1), upload(2, 'a', 1, 'p1', 'deleting')],
    actions: [deleteUpload(2, 'resuming deletion')],
  },
  {
    name: 'does not ask again for an upload whose delete is in flight',
    builds: [build('a', 1)], uploads: [upload(1, 'a', 1), upload(2, 'a', 1, 'p1', 'deleting')], inFlight: { uploadDeletes: [uid(2)] },
    actions: [],
  },
  {
    name: 'deletes every upload of a deleting build, ready ones too, and keeps the older build\'s',
    builds: [build('a', 1), build('a', 2, 'deleting')],
    uploads: [upload(1, 'a', 1), upload(2, 'a', 2), upload(3, 'a', 2, 'p1', 'failed')],
    actions: [deleteUpload(2, 'build is being deleted'), deleteUpload(3, 'build is being deleted')],
  },
  {
    name: 'resumes deleting a deleting build without uploads',
    builds: [build('a', 1), build('a', 2, 'deleting')], uploads: [upload(1, 'a', 1)],
    actions: [deleteBuild(A2, 'resuming deletion')],
  },
  {
    name: 'does not ask again for a build whose delete is in flight',
    builds: [build('a', 1), build('a', 2, 'deleting')], uploads: [upload(1, 'a', 1)], inFlight: { buildDeletes: [A2] },
    actions: [],
  },
  {
    name: 'deletes a lost build without uploads once it has been lost for lost-grace',
    builds: [build('a', 1), build('a', 2, 'lost', { stateTime: ago(3600) })], uploads: [upload(1, 'a', 1)],
    actions: [deleteBuild(A2, 'lost and no longer needed')],
  },
  {
    name: 'keeps a lost build without uploads within lost-grace (its builder may come back)',
    builds: [build('a', 1), build('a', 2, 'lost', { stateTime: ago(3599) })], uploads: [upload(1, 'a', 1)],
    actions: [],
  },
  {
    name: 'honours a shorter lost-grace',
    config: config({ lifecycle: { 'lost-grace': 60 } }),
    builds: [build('a', 1), build('a', 2, 'lost', { stateTime: ago(60) })], uploads: [upload(1, 'a', 1)],
    actions: [deleteBuild(A2, 'lost and no longer needed')],
  },
  {
    name: 'keeps a lost build while its ready uploads are in use',
    builds: [build('a', 1), build('a', 2, 'lost')], uploads: [upload(1, 'a', 1), upload(2, 'a', 2)],
    actions: [],
  },
  {
    name: 'deletes the failed uploads of a lost build, newest failures too',
    builds: [build('a', 1), build('a', 2, 'lost', { stateTime: ago(3600) })], uploads: [upload(1, 'a', 1), upload(2, 'a', 2, 'p1', 'failed', { stateTime: ago(30) })],
    actions: [deleteUpload(2, `build ${A2} is deleted: lost and no longer needed`)],
  },
  {
    name: 'deletes a failed build older than the newest ready build',
    builds: [build('a', 1, 'failed'), build('a', 2)], uploads: [upload(1, 'a', 2)],
    actions: [deleteBuild(A1, `failed, superseded by ${A2}`)],
  },
  {
    name: 'keeps a failed build newer than the newest ready build (it drives the backoff)',
    builds: [build('a', 1), build('a', 2, 'failed', { stateTime: ago(30) })], uploads: [upload(1, 'a', 1)],
    actions: [], diskimage: { failures: 1 },
  },
  {
    name: 'keeps the builds and uploads of a diskimage gone from the config during the grace period, but resumes a deletion',
    builds: [build('a', 1), build('gone', 1), build('gone', 2, 'failed'), build('gone', 3, 'deleting')],
    uploads: [upload(1, 'a', 1), upload(2, 'gone', 1)],
    removed: { 'diskimage gone': 10 },
    actions: [deleteBuild(bid('gone', 3), 'resuming deletion')],
  },
  {
    name: 'deletes the builds and uploads of a diskimage no longer configured after the grace period, uploads first',
    builds: [build('a', 1), build('gone', 1), build('gone', 2, 'failed'), build('gone', 3, 'deleting')],
    uploads: [upload(1, 'a', 1), upload(2, 'gone', 1)],
    removed: { 'diskimage gone': 600 },
    actions: [
      deleteUpload(2, 'diskimage no longer configured'),
      deleteBuild(bid('gone', 2), 'diskimage no longer configured'),
      deleteBuild(bid('gone', 3), 'diskimage no longer configured'),
    ],
  },
  {
    name: 'never deletes an uploading upload; its build waits',
    builds: THREE, uploads: [upload(1, 'a', 1, 'p1', 'uploading'), upload(2, 'a', 2), upload(3, 'a', 3)], inFlight: { uploads: [uid(1)] },
    actions: [],
  },
  {
    name: 'never deletes a building build',
    builds: [...THREE, build('a', 4, 'building')], uploads: [upload(2, 'a', 2), upload(3, 'a', 3)], inFlight: { builds: [bid('a', 4)] },
    actions: [deleteBuild(A1, 'retention')],
  },
  {
    name: 'deletes uploads whose build record is gone once they are not kept',
    builds: [build('a', 2)], uploads: [upload(1, 'a', 1, 'p1', 'failed', { stateTime: ago(10) }), upload(2, 'a', 2, 'p1', 'uploading')],
    inFlight: { uploads: [uid(2)] },
    actions: [deleteUpload(1, `build ${A1} no longer exists`)],
  },
]);

const A3 = bid('a', 3);
const FOUR = [build('a', 1, 'ready', { stateTime: ago(9000) }), ...THREE.slice(1), build('a', 4, 'ready', { stateTime: ago(1800) })];
const OVER_P1_P2 = [upload(1, 'a', 1), upload(2, 'a', 1, 'p2'), upload(3, 'a', 2), upload(4, 'a', 2, 'p2'), upload(5, 'a', 3), upload(6, 'a', 3, 'p2')];
/** A start-build because the newest ready build is revoked (rule 2), beside the retention rows' actions. */
const rebuild = { type: 'start-build' as const, diskimage: 'a', formats: ['qcow2'], reason: 'revoked' as const };

table('rule 5 with pins and revocations (issue 24)', [
  {
    name: 'keeps a diskimage-wide pinned build and its upload beyond the two newest',
    builds: THREE, uploads: [upload(1, 'a', 1), upload(2, 'a', 2), upload(3, 'a', 3)], pins: [pin('a', 1)],
    actions: [],
  },
  {
    name: 'keeps a pinned build without uploads beyond the two newest',
    builds: THREE, uploads: [upload(2, 'a', 2), upload(3, 'a', 3)], pins: [pin('a', 1)],
    actions: [],
  },
  {
    name: 'keeps the pinned provider\'s upload and the build, and deletes the same build\'s upload to another provider',
    config: twoProviders([{ name: 'a' }]), builds: THREE, uploads: OVER_P1_P2, pins: [pin('a', 1, 'p1')],
    actions: [deleteUpload(2, 'retention')],
  },
  {
    name: 'keeps the uploads to every provider of a diskimage-wide pinned build',
    config: twoProviders([{ name: 'a' }]), builds: THREE, uploads: OVER_P1_P2, pins: [pin('a', 1)],
    actions: [],
  },
  {
    name: 'keeps a pinned build\'s upload to a provider that no longer lists the diskimage',
    config: twoProviders([]), builds: [build('a', 1)], uploads: [upload(1, 'a', 1), upload(2, 'a', 1, 'p2')], pins: [pin('a', 1)],
    removed: { 'diskimage a on provider p2': 600 },
    actions: [],
  },
  {
    name: 'still deletes the failed uploads of a pinned build',
    builds: THREE, uploads: [upload(1, 'a', 1, 'p1', 'failed'), upload(2, 'a', 2), upload(3, 'a', 3)], pins: [pin('a', 1)],
    actions: [deleteUpload(1, `failed, superseded by upload ${uid(3)}`)],
  },
  {
    name: 'ignores a pin naming a build of another diskimage',
    builds: THREE, uploads: [upload(2, 'a', 2), upload(3, 'a', 3)], pins: [{ ...pin('a', 1), diskimage: 'b' }],
    actions: [deleteBuild(A1, 'retention')],
  },
  {
    name: 'keeps the two newest good builds and uploads besides a revoked newest one (builds anew)',
    builds: FOUR, uploads: [upload(1, 'a', 1), upload(2, 'a', 2), upload(3, 'a', 3), upload(4, 'a', 4)], revocations: [revocation('a', 4)],
    actions: [rebuild, deleteUpload(1, 'retention')],
    diskimage: { revoked: `newest build ${bid('a', 4)} revoked: kernel panics on boot` },
  },
  {
    name: 'keeps a revoked build while fewer than two good builds are newer',
    builds: THREE, uploads: [upload(1, 'a', 1), upload(2, 'a', 2), upload(3, 'a', 3)], revocations: [revocation('a', 2)],
    actions: [],
  },
  {
    name: 'deletes a revoked build as an ordinary old one once two good builds are newer, uploads first',
    builds: FOUR, uploads: [upload(2, 'a', 2), upload(3, 'a', 3), upload(4, 'a', 4)], revocations: [revocation('a', 2)],
    actions: [deleteUpload(2, 'retention'), deleteBuild(A1, 'retention')],
  },
  {
    name: 'does not count an upload whose canary was revoked among the two kept',
    builds: [build('a', 1)],
    uploads: [upload(1, 'a', 1), upload(2, 'a', 1), upload(3, 'a', 1, 'p1', 'ready', { rollout: { state: 'revoked', time: ago(60), reason: 'canary aborted: 3 launch failures' } })],
    actions: [],
  },
  {
    name: 'keeps a pinned revoked build and the two good builds before it (the pin wins; the diskimage still builds anew)',
    builds: FOUR, uploads: [upload(2, 'a', 2), upload(3, 'a', 3), upload(4, 'a', 4)], pins: [pin('a', 4)], revocations: [revocation('a', 4)],
    actions: [rebuild, deleteBuild(A1, 'retention')],
  },
]);

describe('pins over passes', () => {
  it('deletes what a pin held on the first pass after the unpin', () => {
    const s = { builds: THREE, uploads: [upload(1, 'a', 1), upload(2, 'a', 2), upload(3, 'a', 3)] };
    assert.deepEqual(planRow({ ...s, pins: [pin('a', 1)] }).actions, []);
    assert.deepEqual(planRow(s).actions, [deleteUpload(1, 'retention')]);
    assert.deepEqual(planRow({ ...s, uploads: s.uploads.slice(1) }).actions, [deleteBuild(A1, 'retention')]);
  });

  it('deletes a revoked build only after two good builds newer than it are ready', () => {
    const revoked = { revocations: [revocation('a', 3)] };
    const uploads = [upload(2, 'a', 2), upload(3, 'a', 3)];
    assert.deepEqual(planRow({ ...revoked, builds: THREE.slice(1), uploads }).actions, [rebuild]);
    const one = planRow({ ...revoked, builds: [...THREE.slice(1), build('a', 4, 'ready', { stateTime: ago(60) })], uploads: [...uploads, upload(4, 'a', 4)] });
    assert.deepEqual(one.actions, [], 'one good newer build: the revoked and the previous good one stay');
    const two = planRow({
      ...revoked, builds: [...THREE.slice(1), build('a', 4, 'ready', { stateTime: ago(60) }), build('a', 5, 'ready', { stateTime: ago(30) })],
      uploads: [...uploads, upload(4, 'a', 4), upload(5, 'a', 5)],
    });
    assert.deepEqual(two.actions, [deleteUpload(2, 'retention'), deleteUpload(3, 'retention')], 'uploads first; the builds wait for them');
    const gone = planRow({ ...revoked, builds: [...THREE.slice(1), build('a', 4, 'ready', { stateTime: ago(60) }), build('a', 5, 'ready', { stateTime: ago(30) })],
      uploads: [upload(4, 'a', 4), upload(5, 'a', 5)] });
    assert.deepEqual(gone.actions, [deleteBuild(A2, 'retention'), deleteBuild(A3, 'retention')]);
  });
});

describe('config removal grace', () => {
  it('notes a removal when first seen, keeps its start across passes and forgets what came back', () => {
    const uploads = [upload(1, 'a', 1), upload(2, 'gone', 1)];
    const first = planRow({ builds: [build('a', 1), build('gone', 1)], uploads });
    assert.deepEqual(first.actions, []);
    assert.deepEqual([...first.removals], [['diskimage gone', NOW]]);
    const later = planRow({ builds: [build('a', 1), build('gone', 1)], uploads, removed: { 'diskimage gone': 300 } });
    assert.deepEqual([...later.removals], [['diskimage gone', ago(300)]]);
    const back = planRow({ builds: [build('a', 1)], uploads: [upload(1, 'a', 1)], removed: { 'diskimage gone': 300 } });
    assert.deepEqual([...back.removals], []);
  });

  it('deletes at once with config-removal-grace 0', () => {
    const p = planRow({ config: config({ lifecycle: { 'config-removal-grace': 0 } }), builds: [build('a', 1), build('gone', 1)], uploads: [upload(1, 'a', 1)] });
    assert.deepEqual(p.actions, [deleteBuild(bid('gone', 1), 'diskimage no longer configured')]);
  });
});

