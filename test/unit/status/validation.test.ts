import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { failuresText } from '../../../lib/status/builds.js';
import { renderTable } from '../../../lib/status/table.js';
import { imageListJson, targetAttention, uploadTable } from '../../../lib/status/uploads.js';
import { isValidationFailure, isValidatorFailure, reasonFirstLine, targetValidation, validationAttentionParts } from '../../../lib/status/validation.js';
import type { UploadTargetStatus } from '../../../lib/status/lifecycle-status.js';
import type { UploadRecord } from '../../../lib/store/models.js';

const NOW = 1_700_000_000_000;
const CONSOLE = 'validation: node 0000000042 did not answer SSH within 600 s; console log tail:\n[    0.000] Linux version 6.1\n[   12.345] Kernel panic - not syncing: VFS\n';

function upload(id: string, over: Partial<UploadRecord> = {}): UploadRecord {
  return {
    id, buildId: 'deb-0000000003', diskimage: 'deb', provider: 'qemu-a', imageName: 'deb',
    state: 'ready', stateTime: NOW - 3_600_000, created: NOW - 4_000_000, externalId: 'deb-1a2b', externalName: 'deb-1700000000',
    format: 'qcow2', reason: null, progress: null, ...over,
  };
}

function target(over: Partial<UploadTargetStatus> = {}): UploadTargetStatus {
  return { diskimage: 'deb', provider: 'qemu-a', paused: null, waiting: null, failures: 0, lastFailure: null, retryAt: null, ...over };
}

describe('validation presenters', () => {
  it('tells failed checks (validation gate, post-upload-hook) from other failures by the reason\'s start', () => {
    assert.equal(isValidationFailure('validation: command exited 1'), true);
    assert.equal(isValidationFailure('post-upload-hook /etc/nodepool/hook exited 3: no sshd'), true);
    assert.equal(isValidationFailure('Glance said 413'), false);
    assert.equal(isValidationFailure(null), false);
  });

  it('counts a validation that ran out of time as a failed check of the validator, a hook failure as not the validator\'s', () => {
    assert.equal(isValidationFailure('validation timed out: node 0000000042 was still booting at the 600 s deadline'), true);
    assert.equal(isValidatorFailure('validation timed out: no launcher of provider vms finished it within 600 s'), true);
    assert.equal(isValidatorFailure('validation: command "true" exited 1'), true);
    assert.equal(isValidatorFailure('post-upload-hook /x exited 3: no'), false);
    assert.equal(isValidatorFailure(null), false);
  });

  it('shows the first line of a multi-line reason and how many lines follow', () => {
    assert.equal(reasonFirstLine(CONSOLE), 'validation: node 0000000042 did not answer SSH within 600 s; console log tail: (+2 lines)');
    assert.equal(reasonFirstLine('\n  \nvalidation: x\ny'), 'validation: x (+1 line)');
    assert.equal(reasonFirstLine('Glance said 503'), 'Glance said 503');
    assert.equal(reasonFirstLine(null), 'no reason recorded');
    assert.equal(reasonFirstLine(' \n'), 'no reason recorded');
  });

  it('lists a target\'s validating uploads, oldest first, and its newest failed check', () => {
    const v = targetValidation([
      upload('0000000012', { state: 'validating', stateTime: NOW - 130_000, buildId: 'deb-0000000004' }),
      upload('0000000013', { state: 'validating', stateTime: NOW - 5_000, buildId: 'deb-0000000004', provider: 'other' }),
      upload('0000000010', { state: 'failed', stateTime: NOW - 7_200_000, reason: 'validation: command exited 1' }),
      upload('0000000011', { state: 'failed', stateTime: NOW - 3_600_000, reason: CONSOLE }),
      upload('0000000014', { state: 'failed', stateTime: NOW - 60_000, reason: 'Glance said 503' }),
    ], 'deb', 'qemu-a', NOW);
    assert.deepEqual(v.validating, [{ uploadId: '0000000012', buildId: 'deb-0000000004', since: NOW - 130_000, ageSeconds: 130 }]);
    assert.deepEqual(v.lastFailure, { uploadId: '0000000011', buildId: 'deb-0000000003', at: NOW - 3_600_000, ageSeconds: 3600, reason: CONSOLE });
    assert.deepEqual(validationAttentionParts(v), [
      'validating upload 0000000012 of deb-0000000004 for 00:00:02:10',
      'last validation failed 00:01:00:00 ago (upload 0000000011)',
    ]);
    assert.deepEqual(validationAttentionParts(targetValidation([upload('0000000001')], 'deb', 'qemu-a', NOW)), []);
  });

  it('image-list: a validating row with its state and age, the target line, and a failed upload by its first reason line', () => {
    const uploads = [
      upload('0000000011', { state: 'failed', stateTime: NOW - 3_600_000, reason: CONSOLE, externalId: null }),
      upload('0000000012', { state: 'validating', stateTime: NOW - 130_000, buildId: 'deb-0000000004', externalId: 'deb-9f9f' }),
    ];
    const table = uploadTable(uploads, NOW);
    assert.deepEqual(table.rows.map((r) => [r[1], r[6], r[7]]), [['0000000011', 'failed', '00:01:00:00'], ['0000000012', 'validating', '00:00:02:10']]);
    const text = renderTable(table.columns, table.rows);
    assert.match(text, /\| 0000000012 +\| qemu-a +\| deb +\| deb-1700000000 +\| deb-9f9f +\| validating +\| 00:00:02:10 \|/);
    const lines = targetAttention({
      targets: [target({ failures: 1, lastFailure: CONSOLE, retryAt: NOW + 60_000 })], uploads, pauses: [], now: NOW,
    });
    assert.deepEqual(lines, [
      'deb to qemu-a: 1 failed upload, last: validation: node 0000000042 did not answer SSH within 600 s; console log tail: (+2 lines); next attempt in 00:00:01:00; '
        + 'validating upload 0000000012 of deb-0000000004 for 00:00:02:10; last validation failed 00:01:00:00 ago (upload 0000000011)',
      'upload 0000000011 of deb-0000000003 to qemu-a failed: validation: node 0000000042 did not answer SSH within 600 s; console log tail: (+2 lines)',
    ]);
    assert.ok(lines.every((l) => !l.includes('\n')), 'one line each');
  });

  it('says a target is validating even when the server reports nothing else of it', () => {
    const lines = targetAttention({ targets: [], uploads: [upload('0000000012', { state: 'validating', stateTime: NOW - 1000 })], pauses: [], now: NOW });
    assert.deepEqual(lines, ['deb to qemu-a: validating upload 0000000012 of deb-0000000003 for 00:00:00:01']);
  });

  it('image-list --json: the whole reason, and each target with its validation', () => {
    const uploads = [
      upload('0000000011', { state: 'failed', stateTime: NOW - 3_600_000, reason: CONSOLE }),
      upload('0000000012', { state: 'validating', stateTime: NOW - 130_000 }),
    ];
    const json = imageListJson(uploads, [target()], NOW);
    assert.equal(json.uploads[0]?.reason, CONSOLE);
    assert.deepEqual(json.uploads.map((u) => [u.id, u.state, u.age, u.transfer]), [['0000000011', 'failed', 3600, null], ['0000000012', 'validating', 130, null]]);
    assert.deepEqual(json.targets[0]?.validation.validating.map((v) => v.uploadId), ['0000000012']);
    assert.equal(json.targets[0]?.validation.lastFailure?.reason, CONSOLE);
    assert.equal(json.targets[0]?.lastFailure, null, 'the server\'s own fields are kept as they are');
  });

  it('keeps failure summaries on one line (a multi-line lastFailure)', () => {
    assert.equal(failuresText('failed upload', { failures: 2, lastFailure: CONSOLE, retryAt: null }, NOW),
      '2 failed uploads, last: validation: node 0000000042 did not answer SSH within 600 s; console log tail: (+2 lines)');
  });
});
