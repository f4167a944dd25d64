import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { RolloutSettings } from '../../../lib/rollout/rollout-policy.js';
import { BUILD_COLUMNS, buildTable } from '../../../lib/status/builds.js';
import { IMAGE_STATUS_COLUMNS, imageStatusAttention, imageStatuses, imageStatusTable } from '../../../lib/status/image-status.js';
import { nodepoolText } from '../../../lib/status/nodepool-format.js';
import { dibImageList, imageList, imageStatus } from '../../../lib/status/nodepool-lists.js';
import { buildPinned, uploadRollout, type UploadRolloutInput } from '../../../lib/status/rollout-status.js';
import { imageListJson, UPLOAD_COLUMNS, uploadTable } from '../../../lib/status/uploads.js';
import type { BuildRecord, PinRecord, RevocationRecord, UploadRecord } from '../../../lib/store/models.js';

const NOW = Date.UTC(2026, 10, 27, 3, 0, 0);
const S = Math.trunc(NOW / 1000);
const HOUR = 3_600_000;
const SETTINGS: RolloutSettings = { canary: 10, promoteAfter: { launches: 20, ageMs: HOUR }, abortOn: { launchFailures: 3 } };

function build(seq: string, patch: Partial<BuildRecord> = {}): BuildRecord {
  return {
    id: `deb-${seq}`, diskimage: 'deb', state: 'ready', stateTime: NOW - HOUR, created: NOW - HOUR, builderHostname: 'b1', builderId: 'b-1',
    formats: ['qcow2'], files: [], reason: null, progress: null, ...patch,
  };
}

function upload(id: string, buildId: string, patch: Partial<UploadRecord> = {}): UploadRecord {
  return {
    id, buildId, diskimage: 'deb', provider: 'cloud-a', imageName: 'deb', state: 'ready', stateTime: NOW - 60_000, created: NOW - 60_000,
    externalId: `img-${id}`, externalName: `deb-${id}`, format: 'qcow2', reason: null, progress: null, ...patch,
  };
}

const pins: PinRecord[] = [
  { diskimage: 'deb', provider: 'cloud-b', buildId: 'deb-0000000001', since: NOW - HOUR, reason: null },
  { diskimage: 'deb', provider: null, buildId: 'deb-0000000001', since: NOW - 2 * HOUR, reason: 'known good' },
];
const revocations: RevocationRecord[] = [{ diskimage: 'deb', buildId: 'deb-0000000003', since: NOW - 60_000, reason: 'kernel panics' }];

/** cloud-a has `rollout:` settings, cloud-b none. */
const input: UploadRolloutInput = { revocations, settingsFor: (provider) => (provider === 'cloud-a' ? SETTINGS : undefined), now: NOW };

describe('rollout in the build lists (dib-image-list)', () => {
  const builds = [build('0000000003'), build('0000000001'), build('0000000002')];

  it('a pinned build says where (all first, then providers), a revoked one says why; no columns without either', () => {
    assert.deepEqual(buildPinned(pins, builds[1]!), ['all', 'cloud-b']);
    const table = buildTable(builds, NOW, { pins, revocations });
    assert.deepEqual(table.columns, [...BUILD_COLUMNS, 'Pinned', 'Revoked']);
    assert.deepEqual(table.rows.map((r) => [r[0], ...r.slice(6)]), [
      ['deb-0000000001', 'all,cloud-b', ''],
      ['deb-0000000002', '', ''],
      ['deb-0000000003', '', 'revoked: kernel panics'],
    ]);
    assert.deepEqual(buildTable(builds, NOW, { pins: [], revocations: [] }).columns, [...BUILD_COLUMNS]);
  });

  it("Nodepool 11's rows keep their fields and add pinned and revoked; the table adds its columns at the end", () => {
    const list = dibImageList(builds, new Set(), { pins, revocations });
    assert.deepEqual(list.rows[0], {
      id: 'deb-0000000001', image: 'deb', builder: 'b1', formats: ['qcow2'], state: 'ready', age: S - 3600, pinned: ['all', 'cloud-b'], revoked: null,
    });
    assert.deepEqual(list.rows[2]?.revoked, { since: S - 60, reason: 'kernel panics' });
    assert.deepEqual(list.columns.map(([k]) => k), ['id', 'image', 'builder', 'formats', 'state', 'age', 'pinned', 'revoked']);
    const lines = nodepoolText(list, null, NOW).split('\n');
    assert.match(lines[1]!, /^\| ID +\| Image \| Builder \| Formats \| State \| Age +\| Pinned +\| Revoked +\|$/);
    assert.match(lines[3]!, /\| deb-0000000001 .*\| all,cloud-b \| +\|$/);
    assert.match(lines[5]!, /\| deb-0000000003 .*\| +\| revoked: kernel panics \|$/);
    assert.deepEqual(dibImageList(builds, new Set()).columns.length, 6, 'no pins, no revocations: Nodepool\'s columns only');
  });
});

describe('rollout in the upload lists (image-list)', () => {
  const canary = upload('0000000004', 'deb-0000000002', { launches: 7, launchFailures: 1 });
  const promoted = upload('0000000002', 'deb-0000000001', { launches: 40, rollout: { state: 'promoted', time: NOW - HOUR, reason: 'after 20 launches' } });
  const revoked = upload('0000000005', 'deb-0000000003', { launches: 2, launchFailures: 2 });
  const plain = upload('0000000003', 'deb-0000000002', { provider: 'cloud-b' });
  const uploading = upload('0000000006', 'deb-0000000002', { provider: 'cloud-b', state: 'uploading', externalId: null });
  const uploads = [canary, promoted, revoked, plain, uploading];

  it('each upload says where it stands in words, with its launches and failures', () => {
    assert.deepEqual(uploadRollout(canary, input), { state: 'canary', words: 'canary 10% 7/20 launches', since: canary.stateTime, reason: null, derived: true, pinned: false });
    assert.equal(uploadRollout(promoted, input)?.words, 'promoted');
    assert.equal(uploadRollout(revoked, input)?.words, 'revoked: kernel panics');
    assert.equal(uploadRollout(plain, input)?.words, 'promoted', 'no rollout settings: promoted once ready');
    assert.equal(uploadRollout(uploading, input), null, 'not ready: no rollout');
    const table = uploadTable(uploads, NOW, input);
    assert.deepEqual(table.columns, [...UPLOAD_COLUMNS, 'Progress', 'Rollout', 'Launches', 'Launch Failures']);
    assert.deepEqual(table.rows.map((r) => [r[1], ...r.slice(9)]), [
      ['0000000002', 'promoted', '40', '0'],
      ['0000000004', 'canary 10% 7/20 launches', '7', '1'],
      ['0000000005', 'revoked: kernel panics', '2', '2'],
      ['0000000003', 'promoted', '0', '0'],
      ['0000000006', '', '0', '0'],
    ]);
    assert.deepEqual(uploadTable([plain], NOW, input).columns, [...UPLOAD_COLUMNS], 'nothing to say about rollout: no rollout columns');
  });

  it('an upload whose build the pin for its provider names says pinned (its own pin over the diskimage-wide one); the columns show for a pin alone', () => {
    const pin = (provider: string | null, buildId: string): PinRecord => ({ diskimage: 'deb', provider, buildId, since: NOW - HOUR, reason: null });
    const pinned = { ...input, pins: [pin(null, 'deb-0000000001'), pin('cloud-b', 'deb-0000000002')] };
    assert.equal(uploadRollout(promoted, pinned)?.words, 'pinned; promoted', 'cloud-a: the diskimage-wide pin names its build');
    assert.equal(uploadRollout(promoted, pinned)?.pinned, true);
    assert.equal(uploadRollout(canary, pinned)?.pinned, false, 'cloud-a boots the pinned build, not this one');
    assert.equal(uploadRollout(plain, pinned)?.words, 'pinned; promoted', "cloud-b's own pin holds there");
    assert.deepEqual(uploadTable([plain], NOW, pinned).columns, [...UPLOAD_COLUMNS, 'Rollout', 'Launches', 'Launch Failures']);
    assert.equal(imageList([plain], pinned).rows[0]?.pinned, true);
  });

  it('image-list --json: rollout, launches and launchFailures beside the record', () => {
    const json = imageListJson([canary], [], NOW, input);
    const { age, transfer, rollout, launches, launchFailures, ...rest } = json.uploads[0]!;
    const { rollout: _stored, launches: _l, launchFailures: _f, ...record } = canary;
    assert.deepEqual(rest, record);
    assert.deepEqual([age, transfer, rollout?.words, rollout?.state, launches, launchFailures], [60, null, 'canary 10% 7/20 launches', 'canary', 7, 1]);
  });

  it("Nodepool 11's rows keep their fields and add rollout, launches and launch_failures", () => {
    const list = imageList([canary, uploading], input);
    assert.deepEqual(list.rows[0], {
      id: '0000000002', upload_id: '0000000004', provider: 'cloud-a', image: 'deb', external_name: 'deb-0000000004', external_id: 'img-0000000004',
      state: 'ready', age: S - 60, rollout: { state: 'canary', words: 'canary 10% 7/20 launches' }, launches: 7, launch_failures: 1, pinned: false,
    });
    assert.equal(list.rows[1]?.rollout, null);
    const text = nodepoolText(list, 'upload_id,rollout,launches,launch_failures', NOW);
    assert.match(text, /\| 0000000004 \| canary 10% 7\/20 launches \| 7 +\| 1 +\|/);
  });
});

describe('pins and revocations in image-status', () => {
  it('each diskimage lists its pins and revoked builds; lines say since when and why', () => {
    const statuses = imageStatuses({ diskimages: [{ name: 'deb', pause: false }, { name: 'fedora', pause: false }], builtDiskimages: [], requests: [], pauses: [], rollout: { pins, revocations }, now: NOW });
    assert.deepEqual(statuses[0]?.pins, [
      { provider: 'all', buildId: 'deb-0000000001', since: NOW - 2 * HOUR, reason: 'known good' },
      { provider: 'cloud-b', buildId: 'deb-0000000001', since: NOW - HOUR, reason: null },
    ]);
    assert.deepEqual(statuses[0]?.revocations, [{ buildId: 'deb-0000000003', since: NOW - 60_000, reason: 'kernel panics' }]);
    const table = imageStatusTable(statuses);
    assert.deepEqual(table.columns, [...IMAGE_STATUS_COLUMNS, 'Pinned', 'Revoked']);
    assert.deepEqual(table.rows.map((r) => r.slice(4)), [['all: deb-0000000001, cloud-b: deb-0000000001', 'deb-0000000003'], ['', '']]);
    assert.deepEqual(imageStatusAttention(statuses), [
      'deb: build deb-0000000001 pinned on all providers since 2026-11-27T01:00:00Z (known good)',
      'deb: build deb-0000000001 pinned on cloud-b since 2026-11-27T02:00:00Z',
      'deb: build deb-0000000003 revoked since 2026-11-27T02:59:00Z (kernel panics)',
    ]);
  });

  it("Nodepool 11's rows add pins and revocations with epoch-second times", () => {
    const list = imageStatus({ diskimages: [{ name: 'deb', pause: false }], builds: [], requests: [], pauses: [], rollout: { pins, revocations } });
    assert.deepEqual(list.rows, [{
      image: 'deb', paused: false, build_request: null, build_request_age: null,
      pins: [{ provider: 'all', build: 'deb-0000000001', since: S - 7200, reason: 'known good' }, { provider: 'cloud-b', build: 'deb-0000000001', since: S - 3600, reason: null }],
      revocations: [{ build: 'deb-0000000003', since: S - 60, reason: 'kernel panics' }],
    }]);
    assert.match(nodepoolText(list, null, NOW), /\| deb +\| False +\| +\| +\| all: deb-0000000001, cloud-b: deb-0000000001 \| deb-0000000003 \|/);
  });
});
