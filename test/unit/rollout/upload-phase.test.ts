import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { abortReason, launchShare } from '../../../lib/rollout/canary-policy.js';
import { pinFor } from '../../../lib/rollout/pin-policy.js';
import { decisionAfterLaunch, phaseWords, uploadPhase } from '../../../lib/rollout/upload-phase.js';
import type { RolloutSettings, UploadPhase } from '../../../lib/rollout/rollout-policy.js';
import type { PinRecord, RevocationRecord, UploadRecord, UploadRollout } from '../../../lib/store/models.js';

const READY_AT = 1_000_000;
const upload = (over: Partial<UploadRecord> = {}): UploadRecord => ({
  id: '0000000002', buildId: 'deb-0000000002', diskimage: 'deb', provider: 'vms', imageName: 'deb', state: 'ready',
  stateTime: READY_AT, created: READY_AT - 60_000, externalId: 'img-2', externalName: 'deb-2', format: 'qcow2', reason: null, progress: null, ...over,
});
const settings = (over: Partial<RolloutSettings> = {}): RolloutSettings => ({
  canary: 10, promoteAfter: { launches: 5, ageMs: 60_000 }, abortOn: { launchFailures: 3 }, ...over,
});
const revoked = (buildId: string, diskimage = 'deb'): RevocationRecord => ({ diskimage, buildId, since: 42, reason: 'bad kernel' });
const decided = (state: UploadRollout['state'], reason: string | null = null): UploadRollout => ({ state, time: 77, reason });
const LATER = READY_AT + 60_000;

/** [what, upload, revocations, settings, now, the phase]. */
const PHASES: Array<[string, UploadRecord, RevocationRecord[], RolloutSettings | undefined, number, UploadPhase]> = [
  ['a revoked build revokes its upload, whatever was written', upload({ rollout: decided('promoted') }), [revoked('deb-0000000002')], settings(), LATER,
    { state: 'revoked', since: 42, reason: 'bad kernel', derived: false }],
  ['another diskimage\'s revocation of the same build id does not', upload(), [revoked('deb-0000000002', 'fed')], undefined, LATER,
    { state: 'promoted', since: READY_AT, reason: null, derived: true }],
  ['a written promotion stands, whatever the failures since', upload({ launchFailures: 9, rollout: decided('promoted') }), [], settings(), READY_AT,
    { state: 'promoted', since: 77, reason: null, derived: false }],
  ['a written revocation stands', upload({ rollout: decided('revoked', 'canary aborted: 3 launch failures') }), [], undefined, LATER,
    { state: 'revoked', since: 77, reason: 'canary aborted: 3 launch failures', derived: false }],
  ['no settings: promoted once ready', upload(), [], undefined, READY_AT, { state: 'promoted', since: READY_AT, reason: null, derived: true }],
  ['a new upload is a canary', upload(), [], settings(), READY_AT, { state: 'canary', since: READY_AT, reason: null, derived: true }],
  ['enough launches, too young: still a canary', upload({ launches: 5 }), [], settings(), LATER - 1, { state: 'canary', since: READY_AT, reason: null, derived: true }],
  ['old enough, too few launches: still a canary', upload({ launches: 4 }), [], settings(), LATER + 1e6, { state: 'canary', since: READY_AT, reason: null, derived: true }],
  ['enough launches and old enough: promoted', upload({ launches: 5 }), [], settings(), LATER, { state: 'promoted', since: LATER, reason: 'after 5 launches', derived: true }],
  ['promote-after 0/0: promoted at once', upload(), [], settings({ promoteAfter: { launches: 0, ageMs: 0 } }), READY_AT,
    { state: 'promoted', since: READY_AT, reason: 'after 0 launches', derived: true }],
  ['K failures: revoked with the reason', upload({ launches: 5, launchFailures: 3 }), [], settings(), LATER, { state: 'revoked', since: LATER, reason: abortReason(3), derived: true }],
  ['fewer than K failures: still a canary', upload({ launchFailures: 2 }), [], settings(), READY_AT, { state: 'canary', since: READY_AT, reason: null, derived: true }],
  ['abort-on 0: failures never revoke', upload({ launchFailures: 50 }), [], settings({ abortOn: { launchFailures: 0 } }), READY_AT,
    { state: 'canary', since: READY_AT, reason: null, derived: true }],
  ['a written canary counts its age from the decision', upload({ launches: 5, rollout: { state: 'canary', time: READY_AT + 30_000, reason: 'restarted' } }), [], settings(), LATER,
    { state: 'canary', since: READY_AT + 30_000, reason: 'restarted', derived: false }],
];

describe('uploadPhase: where an upload stands', () => {
  for (const [what, u, revocations, s, now, want] of PHASES) {
    it(what, () => assert.deepEqual(uploadPhase(u, revocations, s, now), want));
  }
});

/** [what, upload (counts after the launch), revocations, settings, the decision to write]. */
const DECISIONS: Array<[string, UploadRecord, RevocationRecord[], RolloutSettings | undefined, UploadRollout | undefined]> = [
  ['no settings: nothing to write', upload({ launches: 1 }), [], undefined, undefined],
  ['still a canary: nothing', upload({ launches: 1 }), [], settings(), undefined],
  ['the Nth success when old enough: promote', upload({ launches: 5 }), [], settings(), { state: 'promoted', time: LATER, reason: 'after 5 launches' }],
  ['the Kth failure: revoke with the reason', upload({ launchFailures: 3 }), [], settings(), { state: 'revoked', time: LATER, reason: 'canary aborted: 3 launch failures' }],
  ['already promoted: nothing again', upload({ launches: 9, rollout: decided('promoted') }), [], settings(), undefined],
  ['already revoked: nothing again', upload({ launchFailures: 9, rollout: decided('revoked') }), [], settings(), undefined],
  ['a revoked build: the operator decided, nothing written', upload({ launches: 9 }), [revoked('deb-0000000002')], settings(), undefined],
];

describe('decisionAfterLaunch: what a counted launch decides', () => {
  for (const [what, u, revocations, s, want] of DECISIONS) {
    it(what, () => assert.deepEqual(decisionAfterLaunch(u, revocations, s, LATER), want));
  }
});

describe('launchShare: a launch\'s place in [0, 100)', () => {
  it('is the same for the same key, and within range', () => {
    assert.equal(launchShare('0000000042'), launchShare('0000000042'));
    for (const k of ['', 'a', '0000000001', 'x'.repeat(500)]) {
      const v = launchShare(k);
      assert.ok(v >= 0 && v < 100, `${k}: ${v}`);
    }
  });

  it('spreads node ids evenly: share < 50 for 45–55 % of 2,000 keys, < 10 for 7–13 %', () => {
    const keys = Array.from({ length: 2000 }, (_, i) => String(i + 1).padStart(10, '0'));
    const below = (p: number): number => keys.filter((k) => launchShare(k) < p).length / keys.length;
    const half = below(50);
    const tenth = below(10);
    assert.ok(half >= 0.45 && half <= 0.55, `share < 50: ${(half * 100).toFixed(1)} %`);
    assert.ok(tenth >= 0.07 && tenth <= 0.13, `share < 10: ${(tenth * 100).toFixed(1)} %`);
    assert.equal(below(100), 1, 'canary 100 takes every launch');
  });
});

describe('pinFor and phaseWords', () => {
  const pin = (provider: string | null, buildId: string, diskimage = 'deb'): PinRecord => ({ diskimage, provider, buildId, since: 1, reason: null });
  it('takes the provider\'s own pin over the diskimage-wide one', () => {
    const pins = [pin(null, 'deb-1'), pin('vms', 'deb-2'), pin('cloud', 'deb-3'), pin(null, 'fed-1', 'fed')];
    assert.equal(pinFor(pins, 'deb', 'vms')?.buildId, 'deb-2');
    assert.equal(pinFor(pins, 'deb', 'other')?.buildId, 'deb-1');
    assert.equal(pinFor(pins, 'fed', 'vms')?.buildId, 'fed-1');
    assert.equal(pinFor(pins, 'ubu', 'vms'), undefined);
  });

  it('words each phase as the CLI shows it', () => {
    const u = upload({ launches: 7 });
    const s = settings({ promoteAfter: { launches: 20, ageMs: 0 } });
    assert.equal(phaseWords(uploadPhase(u, [], s, READY_AT), u, s), 'canary 10% 7/20 launches');
    assert.equal(phaseWords(uploadPhase(u, [], undefined, READY_AT), u, undefined), 'promoted');
    assert.equal(phaseWords(uploadPhase(u, [revoked(u.buildId)], s, READY_AT), u, s), 'revoked: bad kernel');
    assert.equal(phaseWords({ state: 'revoked', since: 1, reason: null, derived: false }, u, s), 'revoked');
  });
});
