import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { plan } from '../../../../server/image-lifecycle/planner.js';
import { ago, B1, bid, build, config, NOW, pin, planRow, revocation, snapshot, table, upload } from './planner-fixtures.js';

const A1 = bid('a', 1);
const A2 = bid('a', 2);
/** Diskimage a built an hour ago and uploaded to p1: nothing to do. */
const HEALTHY = { builds: [build('a', 1)], uploads: [upload(1, 'a', 1)] };
const building = (over: Parameters<typeof build>[3] = {}) => build('a', 2, 'building', over);

table('rule 1: building builds', [
  {
    name: 'fails an in-flight build past build-timeout plus grace',
    builds: [build('a', 1), building({ stateTime: ago(3901) })], uploads: HEALTHY.uploads, inFlight: { builds: [A2] },
    actions: [{ type: 'fail-build', buildId: A2, reason: 'timed out after 3900 s' }],
  },
  {
    name: 'leaves an in-flight build within its timeout',
    builds: [build('a', 1), building({ stateTime: ago(3899) })], uploads: HEALTHY.uploads, inFlight: { builds: [A2] },
    actions: [],
  },
  {
    name: 'fails an in-flight build whose builder disappeared from gearmand',
    builds: [build('a', 1), building({ builderHostname: 'h2', builderId: 'B2' })], uploads: HEALTHY.uploads, inFlight: { builds: [A2] },
    actions: [{ type: 'fail-build', buildId: A2, reason: 'builder h2 disappeared during the build' }],
  },
  {
    name: 'fails an in-flight build when no builder registers image-build any more',
    builds: [build('a', 1), building()], uploads: HEALTHY.uploads, inFlight: { builds: [A2] }, gearman: { 'image-build:a': [] },
    actions: [{ type: 'fail-build', buildId: A2, reason: 'no builder registers image-build:a any more' }],
  },
  {
    name: 'leaves an in-flight build alone while gearmand admin is unreachable',
    builds: [build('a', 1), building({ builderHostname: 'h2', builderId: 'B2' })], uploads: HEALTHY.uploads, inFlight: { builds: [A2] }, gearman: null,
    actions: [],
  },
  {
    name: 'still times out an in-flight build while gearmand admin is unreachable',
    builds: [build('a', 1), building({ stateTime: ago(4000) })], uploads: HEALTHY.uploads, inFlight: { builds: [A2] }, gearman: null,
    actions: [{ type: 'fail-build', buildId: A2, reason: 'timed out after 3900 s' }],
  },
  {
    name: 'fails a build of a diskimage that is no longer configured',
    builds: [...HEALTHY.builds, build('gone', 1, 'building')], uploads: HEALTHY.uploads,
    actions: [{ type: 'fail-build', buildId: bid('gone', 1), reason: 'diskimage gone is no longer configured' }],
  },
  {
    name: 'fails a build without a job here once past its timeout',
    builds: [build('a', 1), building({ stateTime: ago(3901) })], uploads: HEALTHY.uploads,
    actions: [{ type: 'fail-build', buildId: A2, reason: 'timed out after 3900 s' }],
  },
  {
    name: 'fails a build without a job here when no builder could resume it',
    builds: [build('a', 1), building()], uploads: HEALTHY.uploads, gearman: { 'image-build:a': [] },
    actions: [{ type: 'fail-build', buildId: A2, reason: 'cannot resume: no builder registers image-build:a' }],
  },
  {
    name: 'leaves a build without a job here alone while gearmand admin is unreachable',
    builds: [build('a', 1), building()], uploads: HEALTHY.uploads, gearman: null,
    actions: [],
  },
  {
    name: 'resumes a build without a job here (server or gearmand restarted)',
    builds: [build('a', 1), building()], uploads: HEALTHY.uploads,
    actions: [{ type: 'resume-build', buildId: A2 }],
  },
  {
    name: 'starts no second build while one is building',
    builds: [build('a', 1, 'building')], inFlight: { builds: [A1] },
    actions: [],
  },
]);

const startA = (reason: 'missing' | 'revoked' | 'age' | 'format' | 'request', formats = ['qcow2']) =>
  ({ type: 'start-build' as const, diskimage: 'a', formats, reason });
const failed = (seq: number, secondsAgo: number) => build('a', seq, 'failed', { stateTime: ago(secondsAgo) });
const withB = (b: object) => config({ diskimages: [{ name: 'a' }, b], providers: [{ name: 'p1', cloud: 'c', diskimages: [{ name: 'a' }] }] });

table('rule 2: new builds and requests', [
  {
    name: 'builds a diskimage that has no ready build',
    actions: [startA('missing')],
    diskimage: { rebuildAt: null, failures: 0, retryAt: null, waiting: null },
  },
  {
    name: 'rebuilds when the newest ready build reaches rebuild-age',
    builds: [build('a', 1, 'ready', { stateTime: ago(86400) })], uploads: HEALTHY.uploads,
    actions: [startA('age')], diskimage: { rebuildAt: NOW },
  },
  {
    name: 'does not rebuild a second before rebuild-age',
    builds: [build('a', 1, 'ready', { stateTime: ago(86399) })], uploads: HEALTHY.uploads,
    actions: [], diskimage: { rebuildAt: NOW + 1000 },
  },
  {
    name: 'rebuilds when the newest ready build lacks a needed format',
    config: config({ diskimages: [{ name: 'a', formats: ['qcow2', 'raw'] }] }), ...HEALTHY,
    actions: [startA('format', ['qcow2', 'raw'])],
  },
  {
    name: 'builds the formats providers need (vhd comes from conversion, so raw is built)',
    config: config({ providers: [{ name: 'p1', cloud: 'c', 'image-format': 'vhd', diskimages: [{ name: 'a' }] }] }),
    builds: [build('a', 1, 'ready', { formats: ['qcow2'] })], uploads: HEALTHY.uploads,
    actions: [startA('format', ['raw'])],
  },
  {
    name: 'builds every format the providers listing the diskimage need',
    config: config({ providers: [
      { name: 'p1', cloud: 'c', diskimages: [{ name: 'a' }] },
      { name: 'p2', cloud: 'c', 'image-format': 'raw', diskimages: [] },
      { name: 'p3', cloud: 'c', 'image-format': 'raw', diskimages: [{ name: 'a' }] },
    ] }),
    ...HEALTHY,
    actions: [startA('format', ['qcow2', 'raw']), { type: 'start-upload', buildId: A1, provider: 'p3', imageName: 'a' }],
  },
  {
    name: 'builds on an operator request made after the newest build',
    ...HEALTHY, requests: [{ diskimage: 'a', requested: ago(10) }],
    actions: [{ ...startA('request'), servesRequestsUpTo: ago(10) }], diskimage: { requested: true },
  },
  {
    name: 'clears a request that a ready build created after it has served',
    ...HEALTHY, requests: [{ diskimage: 'a', requested: ago(7200) }],
    actions: [{ type: 'clear-request', diskimage: 'a', requested: ago(7200) }], diskimage: { requested: false },
  },
  {
    name: 'clears a request for a diskimage that is not configured',
    ...HEALTHY, requests: [{ diskimage: 'gone', requested: ago(10) }],
    actions: [{ type: 'clear-request', diskimage: 'gone', requested: ago(10) }],
  },
  {
    name: 'does not build a diskimage paused in the config; its request stays pending',
    config: config({ diskimages: [{ name: 'a', pause: true }] }), requests: [{ diskimage: 'a', requested: ago(10) }],
    actions: [], diskimage: { paused: 'config', requested: true, waiting: null },
  },
  {
    name: 'does not build a diskimage the operator paused',
    pauses: [{ diskimage: 'a', provider: null, since: ago(100), reason: 'broken mirror' }],
    actions: [], diskimage: { paused: 'operator' },
  },
  {
    name: 'does not build a diskimage no provider lists and without formats',
    config: withB({ name: 'b' }), ...HEALTHY,
    actions: [], diskimageName: 'b', diskimage: { waiting: null },
  },
  {
    name: 'says why a request for a diskimage nobody needs waits',
    config: withB({ name: 'b' }), ...HEALTHY, requests: [{ diskimage: 'b', requested: ago(10) }],
    actions: [], diskimageName: 'b', diskimage: { requested: true, waiting: 'not needed: no provider lists b and it has no formats' },
  },
  {
    name: 'builds a diskimage no provider lists when it has explicit formats',
    config: withB({ name: 'b', formats: ['tar'] }), ...HEALTHY,
    actions: [{ type: 'start-build', diskimage: 'b', formats: ['tar'], reason: 'missing' }],
  },
  {
    name: 'waits out the retry delay after a failed build',
    builds: [failed(1, 30)],
    actions: [], diskimage: { failures: 1, retryAt: ago(30) + 60_000, lastFailure: 'dib exited 1', waiting: null },
  },
  {
    name: 'retries a failed build once the retry delay has passed',
    builds: [failed(1, 60)],
    actions: [startA('missing')], diskimage: { failures: 1, retryAt: NOW },
  },
  {
    name: 'doubles the retry delay per consecutive failure',
    builds: [failed(1, 1000), failed(2, 500), failed(3, 200)],
    actions: [], diskimage: { failures: 3, retryAt: ago(200) + 240_000 },
  },
  {
    name: 'caps the retry delay at max-retry-delay, and deletes the failures beyond the newest 7 (older ones would not change the delay)',
    builds: Array.from({ length: 10 }, (_, i) => failed(i + 1, 3599 + 9 - i)),
    actions: [1, 2, 3].map((n) => ({ type: 'delete-build' as const, buildId: bid('a', n), reason: 'failed, older than the newest 7 failures' })),
    diskimage: { failures: 10, retryAt: ago(3599) + 3_600_000 },
  },
  {
    name: 'an operator request made after the newest failure bypasses the backoff',
    builds: [failed(1, 30)], requests: [{ diskimage: 'a', requested: ago(10) }],
    actions: [{ ...startA('missing'), servesRequestsUpTo: ago(10) }],
  },
  {
    name: 'a request made before the newest failure waits out the backoff',
    builds: [failed(1, 30)], requests: [{ diskimage: 'a', requested: ago(40) }],
    actions: [], diskimage: { requested: true, failures: 1 },
  },
  {
    name: 'counts only failures newer than the newest ready build (older ones are deleted)',
    builds: [failed(1, 90000), build('a', 2, 'ready', { stateTime: ago(86400) })], uploads: [upload(1, 'a', 2)],
    actions: [startA('age'), { type: 'delete-build', buildId: A1, reason: `failed, superseded by ${A2}` }],
    diskimage: { failures: 0, retryAt: null, lastFailure: 'dib exited 1' },
  },
  {
    name: 'stops counting failures at a build that was ready before it was lost',
    builds: [build('a', 1), failed(2, 5000), build('a', 3, 'lost', { stateTime: ago(100) }), failed(4, 30)],
    uploads: [upload(1, 'a', 1), upload(2, 'a', 3)],
    actions: [], diskimage: { failures: 1, retryAt: ago(30) + 60_000 },
  },
  {
    name: 'does not count a lost build as ready: builds a replacement',
    builds: [build('a', 1, 'lost')], uploads: HEALTHY.uploads,
    actions: [startA('missing')],
  },
  {
    name: 'waits when no builder registers image-build for the diskimage',
    gearman: { 'image-build:a': [] },
    actions: [], diskimage: { waiting: 'no builder registers image-build:a' },
  },
  {
    name: 'starts no build while gearmand admin is unreachable',
    gearman: null,
    actions: [], diskimage: { waiting: 'gearmand admin not reachable' },
  },
  {
    name: 'does not retry a build it failed in the same pass',
    builds: [build('a', 1, 'building', { stateTime: ago(3901) })], inFlight: { builds: [A1] },
    actions: [{ type: 'fail-build', buildId: A1, reason: 'timed out after 3900 s' }],
    diskimage: { failures: 1, retryAt: NOW + 60_000, lastFailure: 'timed out after 3900 s' },
  },
]);

const REVOKED_A2 = `newest build ${A2} revoked: kernel panics on boot`;
const twoProviders = config({ providers: [{ name: 'p1', cloud: 'c', diskimages: [{ name: 'a' }] }, { name: 'p2', cloud: 'c', diskimages: [{ name: 'a' }] }] });

table('rule 2 with revocations (issue 24)', [
  {
    name: 'builds anew when the newest ready build is revoked, and says why',
    builds: [build('a', 1), build('a', 2)], uploads: [upload(1, 'a', 1), upload(2, 'a', 2)], revocations: [revocation('a', 2)],
    actions: [startA('revoked')], diskimage: { revoked: REVOKED_A2, waiting: null },
  },
  {
    name: 'builds anew when the only ready build is revoked',
    ...HEALTHY, revocations: [revocation('a', 1, null)],
    actions: [startA('revoked')], diskimage: { revoked: `newest build ${A1} revoked` },
  },
  {
    name: 'does not build a paused diskimage whose newest build is revoked; the status still says why',
    builds: [build('a', 1), build('a', 2)], uploads: [upload(1, 'a', 1), upload(2, 'a', 2)], revocations: [revocation('a', 2)],
    pauses: [{ diskimage: 'a', provider: null, since: ago(100), reason: 'broken mirror' }],
    actions: [], diskimage: { paused: 'operator', revoked: REVOKED_A2 },
  },
  {
    name: 'does not build a diskimage paused in the config whose newest build is revoked',
    config: config({ diskimages: [{ name: 'a', pause: true }] }), ...HEALTHY, revocations: [revocation('a', 1)],
    actions: [], diskimage: { paused: 'config' },
  },
  {
    name: 'waits out the retry delay after a failed rebuild of a revoked build',
    builds: [build('a', 1), build('a', 2), failed(3, 30)], uploads: [upload(1, 'a', 1), upload(2, 'a', 2)], revocations: [revocation('a', 2)],
    actions: [], diskimage: { failures: 1, retryAt: ago(30) + 60_000, revoked: REVOKED_A2 },
  },
  {
    name: 'starts no second build while the replacement of a revoked build is building',
    builds: [build('a', 1), build('a', 2), build('a', 3, 'building')], uploads: [upload(1, 'a', 1), upload(2, 'a', 2)],
    revocations: [revocation('a', 2)], inFlight: { builds: [bid('a', 3)] },
    actions: [], diskimage: { revoked: REVOKED_A2 },
  },
  {
    name: 'is up to date again once a build newer than the revoked one is ready',
    builds: [build('a', 1), build('a', 2), build('a', 3)], uploads: [upload(1, 'a', 1), upload(2, 'a', 2), upload(3, 'a', 3)],
    revocations: [revocation('a', 2)],
    actions: [], diskimage: { revoked: null },
  },
  {
    name: 'does not upload a revoked build to a provider; the newest good build goes there instead',
    config: twoProviders, builds: [build('a', 1), build('a', 2)], uploads: [upload(1, 'a', 1), upload(2, 'a', 2)], revocations: [revocation('a', 2)],
    actions: [startA('revoked'), { type: 'start-upload', buildId: A1, provider: 'p2', imageName: 'a' }],
  },
  {
    name: 'still builds when the newest build is revoked and pinned',
    builds: [build('a', 1), build('a', 2)], uploads: [upload(1, 'a', 1), upload(2, 'a', 2)], revocations: [revocation('a', 2)], pins: [pin('a', 2)],
    actions: [startA('revoked')],
  },
]);

describe('status', () => {
  it('reports every field of a diskimage status', () => {
    const p = planRow({ ...HEALTHY, requests: [{ diskimage: 'a', requested: ago(60) }] });
    assert.deepEqual(p.diskimages, [{
      diskimage: 'a', paused: null, waiting: null, failures: 0, lastFailure: null, retryAt: null, rebuildAt: ago(3600) + 86_400_000, requested: true, revoked: null,
    }]);
  });

  it('reports one target per openstack provider diskimage and none for static providers', () => {
    const cfg = config({
      diskimages: [{ name: 'a' }, { name: 'b' }],
      providers: [
        { name: 'p1', cloud: 'c', diskimages: [{ name: 'a' }, { name: 'b', pause: true }] },
        { name: 's1', driver: 'static', pools: [] },
        { name: 'p2', cloud: 'c', diskimages: [{ name: 'a' }] },
      ],
    });
    const p = planRow({ config: cfg, builds: [build('a', 1), build('b', 1)], uploads: [upload(1, 'a', 1)] });
    assert.deepEqual(p.targets.map((t) => [t.diskimage, t.provider, t.paused]), [['a', 'p1', null], ['b', 'p1', 'config'], ['a', 'p2', null]]);
    assert.deepEqual(p.actions, [{ type: 'start-upload', buildId: A1, provider: 'p2', imageName: 'a' }]);
  });
});

describe('determinism', () => {
  it('gives the same plan whatever order the store lists records in', () => {
    const s = {
      builds: [build('a', 1), build('a', 2), build('a', 3), build('a', 4, 'failed'), build('gone', 1), build('a', 5, 'building')],
      uploads: [upload(1, 'a', 1), upload(2, 'a', 2), upload(3, 'a', 3), upload(4, 'a', 1), upload(5, 'gone', 1)],
      requests: [{ diskimage: 'gone', requested: ago(5) }, { diskimage: 'gone', requested: ago(10) }],
      gearman: { 'image-upload:zz-0000000002': [B1], 'image-upload:zz-0000000001': [B1] },
      unknown: { 'zz-0000000002': 3600, 'zz-0000000001': 3600 },
    };
    const forward = plan(snapshot(s));
    const backward = plan(snapshot({ ...s, builds: [...s.builds].reverse(), uploads: [...s.uploads].reverse(), requests: [...s.requests].reverse() }));
    assert.deepEqual(backward, forward);
    assert.ok(forward.actions.length >= 6, JSON.stringify(forward.actions));
  });
});
