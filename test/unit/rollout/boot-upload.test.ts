import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { bootUpload, uploadsByAge, type BootChoice } from '../../../lib/rollout/boot-upload.js';
import { launchShare } from '../../../lib/rollout/canary-policy.js';
import type { RolloutSettings, RolloutView } from '../../../lib/rollout/rollout-policy.js';
import type { PinRecord, RevocationRecord, UploadRecord } from '../../../lib/store/models.js';

const upload = (id: string, over: Partial<UploadRecord> = {}): UploadRecord => ({
  id, buildId: 'deb-0000000001', diskimage: 'deb', provider: 'vms', imageName: 'deb', state: 'ready',
  stateTime: 0, created: 0, externalId: `img-${id}`, externalName: 'deb-1', format: 'qcow2', reason: null, progress: null, ...over,
});

const HEX_A = 'aa2657399a21406d90f7885e5dd3bbad';
const HEX_B = '132bf8e868c24d46b039030c071ea3ed';
const vms: BootChoice = { provider: 'vms', diskimage: 'deb' };

/** [what, the uploads the store lists, the choice, the id booted (undefined: none)]. */
const TABLE: Array<[string, UploadRecord[], BootChoice, string | undefined]> = [
  ['nothing uploaded', [], vms, undefined],
  ['the only ready upload', [upload('0000000001')], vms, '0000000001'],
  ['the newest by sequence, whatever the clocks said', [upload('0000000002', { created: 5 }), upload('0000000009', { created: 1 })], vms, '0000000009'],
  ['never one still uploading or validating', [upload('0000000001'), upload('0000000002', { state: 'uploading' }), upload('0000000003', { state: 'validating' })], vms, '0000000001'],
  ['never a failed or deleting one', [upload('0000000001'), upload('0000000004', { state: 'failed' }), upload('0000000005', { state: 'deleting' })], vms, '0000000001'],
  ['never one without its image in the provider', [upload('0000000001'), upload('0000000002', { externalId: null }), upload('0000000003', { externalId: '' })], vms, '0000000001'],
  ['only this provider\'s', [upload('0000000001'), upload('0000000002', { provider: 'cloud' })], vms, '0000000001'],
  ['only this diskimage\'s', [upload('0000000001'), upload('0000000002', { diskimage: 'fed' })], vms, '0000000001'],
  ['Nodepool 11 uploads by creation time, not by their random hex',
    [upload(`${HEX_B}-vms-0000000001`, { created: 3000 }), upload(`${HEX_A}-vms-0000000001`, { created: 2000 })], vms, `${HEX_B}-vms-0000000001`],
  ['an upload of ours beside adopted ones: by creation time',
    [upload(`${HEX_A}-vms-0000000001`, { created: 2000 }), upload('0000000001', { created: 9000 })], vms, '0000000001'],
  ['equal times: the id decides, so every launcher answers the same',
    [upload(`${HEX_A}-vms-0000000001`, { created: 1 }), upload(`${HEX_B}-vms-0000000001`, { created: 1 })], vms, `${HEX_A}-vms-0000000001`],
  ['the newest the driver can use (its file is gone from the newest)',
    [upload('0000000001'), upload('0000000002')], { ...vms, usable: (u) => u.id !== '0000000002' }, '0000000001'],
  ['none the driver can use', [upload('0000000001')], { ...vms, usable: () => false }, undefined],
];

describe('bootUpload: the upload a label boots', () => {
  for (const [what, uploads, choice, want] of TABLE) {
    it(what, () => {
      assert.equal(bootUpload(uploads, choice)?.id, want);
      assert.equal(bootUpload([...uploads].reverse(), choice)?.id, want, 'the store\'s listing order does not matter');
    });
  }

  it('ranks oldest first without touching its input', () => {
    const list = [upload('0000000003'), upload('0000000001'), upload('0000000002')];
    assert.deepEqual(uploadsByAge(list).map((u) => u.id), ['0000000001', '0000000002', '0000000003']);
    assert.deepEqual(list.map((u) => u.id), ['0000000003', '0000000001', '0000000002']);
  });
});

/** Two builds of deb on vms (1 older, 2 newer) and the rollout view around them. */
const b1 = (over: Partial<UploadRecord> = {}): UploadRecord => upload('0000000001', { buildId: 'deb-0000000001', ...over });
const b2 = (over: Partial<UploadRecord> = {}): UploadRecord => upload('0000000002', { buildId: 'deb-0000000002', ...over });
const pin = (provider: string | null, buildId: string): PinRecord => ({ diskimage: 'deb', provider, buildId, since: 1, reason: null });
const revocation = (buildId: string): RevocationRecord => ({ diskimage: 'deb', buildId, since: 1, reason: 'bad' });
const canary = (percent: number, abort = 0): RolloutSettings => ({ canary: percent, promoteAfter: { launches: 10, ageMs: 0 }, abortOn: { launchFailures: abort } });
const view = (over: Partial<RolloutView> = {}): RolloutView => ({ pins: [], revocations: [], now: 0, ...over });
/** Node ids whose launch share is inside (below 50) and outside a 50 % canary. */
const KEYS = Array.from({ length: 40 }, (_, i) => String(i + 1).padStart(10, '0'));
const INSIDE = KEYS.find((k) => launchShare(k) < 50) as string;
const OUTSIDE = KEYS.find((k) => launchShare(k) >= 50) as string;

/** [what, uploads, the choice, the id booted]. */
const ROLLOUT: Array<[string, UploadRecord[], BootChoice, string | undefined]> = [
  ['no pins, no revocations, no settings: the newest', [b1(), b2()], { ...vms, rollout: view(), key: OUTSIDE }, '0000000002'],
  ['a pin wins over a newer upload', [b1(), b2()], { ...vms, rollout: view({ pins: [pin(null, 'deb-0000000001')] }) }, '0000000001'],
  ['the provider\'s pin wins over the diskimage-wide one',
    [b1(), b2()], { ...vms, rollout: view({ pins: [pin(null, 'deb-0000000001'), pin('vms', 'deb-0000000002')] }) }, '0000000002'],
  ['another provider\'s pin does not hold here', [b1(), b2()], { ...vms, rollout: view({ pins: [pin('cloud', 'deb-0000000001')] }) }, '0000000002'],
  ['a pin whose build this provider lacks: falls back to the newest',
    [b1(), b2()], { ...vms, rollout: view({ pins: [pin(null, 'deb-0000000009')] }) }, '0000000002'],
  ['a pin whose upload the driver cannot use: falls back',
    [b1(), b2()], { ...vms, usable: (u) => u.id !== '0000000001', rollout: view({ pins: [pin(null, 'deb-0000000001')] }) }, '0000000002'],
  ['a revoked build is skipped: the previous serves', [b1(), b2()], { ...vms, rollout: view({ revocations: [revocation('deb-0000000002')] }) }, '0000000001'],
  ['a pinned build that is revoked is not booted', [b1(), b2()],
    { ...vms, rollout: view({ pins: [pin(null, 'deb-0000000001')], revocations: [revocation('deb-0000000001')] }) }, '0000000002'],
  ['every build revoked: nothing', [b1(), b2()], { ...vms, rollout: view({ revocations: [revocation('deb-0000000001'), revocation('deb-0000000002')] }) }, undefined],
  ['an upload auto-revoked by its failures (not yet written) is skipped',
    [b1({ rollout: { state: 'promoted', time: 0, reason: null } }), b2({ launchFailures: 3 })], { ...vms, rollout: view({ settings: canary(50, 3) }), key: INSIDE }, '0000000001'],
  ['an upload whose revocation is written is skipped',
    [b1(), b2({ rollout: { state: 'revoked', time: 0, reason: 'canary aborted: 3 launch failures' } })], { ...vms, rollout: view() }, '0000000001'],
  ['a canary serves a launch inside its share', [b1(), b2()], { ...vms, rollout: view({ settings: canary(50) }), key: INSIDE }, '0000000002'],
  ['outside its share the previous serves', [b1(), b2()], { ...vms, rollout: view({ settings: canary(50) }), key: OUTSIDE }, '0000000001'],
  ['a canary without a previous upload serves every launch', [b2()], { ...vms, rollout: view({ settings: canary(50) }), key: OUTSIDE }, '0000000002'],
  ['no key (an availability check): the newest, canary or not', [b1(), b2()], { ...vms, rollout: view({ settings: canary(50) }) }, '0000000002'],
  ['a promoted newest serves every launch',
    [b1(), b2({ rollout: { state: 'promoted', time: 0, reason: null } })], { ...vms, rollout: view({ settings: canary(50) }), key: OUTSIDE }, '0000000002'],
  ['canary 100: every launch', [b1(), b2()], { ...vms, rollout: view({ settings: canary(100) }), key: OUTSIDE }, '0000000002'],
  ['two canaries in a row: outside the newest\'s share, the last promoted one serves, not the older canary',
    [upload('0000000000', { buildId: 'deb-0000000000', rollout: { state: 'promoted', time: 0, reason: null } }), b1(), b2()],
    { ...vms, rollout: view({ settings: canary(50) }), key: OUTSIDE }, '0000000000'],
];

describe('bootUpload: pins, revocations and canaries', () => {
  for (const [what, uploads, choice, want] of ROLLOUT) {
    it(what, () => {
      assert.equal(bootUpload(uploads, choice)?.id, want);
      assert.equal(bootUpload([...uploads].reverse(), choice)?.id, want, 'the store\'s listing order does not matter');
    });
  }

  it('a 50 % canary takes about half of 2,000 launches, the previous upload the rest', () => {
    const choice = { ...vms, rollout: view({ settings: canary(50) }) };
    const keys = Array.from({ length: 2000 }, (_, i) => String(i + 1).padStart(10, '0'));
    const toCanary = keys.filter((key) => bootUpload([b1(), b2()], { ...choice, key })?.id === '0000000002').length;
    assert.ok(toCanary >= 900 && toCanary <= 1100, `${toCanary} of 2000 to the canary`);
  });
});
