import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { BUILD_COLUMNS, buildRow, buildRows, diskimageAttention } from '../../../lib/status/builds.js';
import type { BuildRecord } from '../../../lib/store/models.js';
import type { DiskimageStatus } from '../../../lib/status/lifecycle-status.js';

const NOW = 1_700_000_000_000;

function build(id: string, over: Partial<BuildRecord> = {}): BuildRecord {
  return {
    id, diskimage: id.replace(/-\d{10}$/, ''), state: 'ready', stateTime: NOW - 90_000, created: NOW - 600_000,
    builderHostname: 'builder1', builderId: 'b-1', formats: ['qcow2', 'raw'], files: [], reason: null, progress: null, ...over,
  };
}

function status(diskimage: string, over: Partial<DiskimageStatus> = {}): DiskimageStatus {
  return { diskimage, paused: null, waiting: null, failures: 0, lastFailure: null, retryAt: null, rebuildAt: null, requested: false, ...over };
}

describe('build presenters', () => {
  it('uses Nodepool 3.x column names', () => {
    assert.deepEqual([...BUILD_COLUMNS], ['ID', 'Image', 'Builder', 'Formats', 'State', 'Age']);
  });

  it('shows the builder hostname, comma-joined formats and the age since the state changed', () => {
    assert.deepEqual(buildRow(build('ubuntu-jammy-0000000004'), NOW),
      ['ubuntu-jammy-0000000004', 'ubuntu-jammy', 'builder1', 'qcow2,raw', 'ready', '00:00:01:30']);
  });

  it('leaves the builder empty until one is known', () => {
    assert.equal(buildRow(build('a-0000000001', { builderHostname: null }), NOW)[2], '');
  });

  it('orders rows by image, then id', () => {
    const rows = buildRows([build('b-0000000002'), build('a-0000000010'), build('b-0000000001'), build('a-0000000009')], NOW);
    assert.deepEqual(rows.map((r) => r[0]), ['a-0000000009', 'a-0000000010', 'b-0000000001', 'b-0000000002']);
  });

  it('has nothing to say when no diskimage needs attention', () => {
    assert.deepEqual(diskimageAttention({ statuses: [status('a')], builds: [build('a-0000000001')], pauses: [], now: NOW }), []);
  });

  it('joins everything that needs attention into one line per diskimage', () => {
    const lines = diskimageAttention({
      statuses: [status('ubuntu-jammy', {
        paused: 'operator', waiting: 'no builder registers image-build:ubuntu-jammy',
        failures: 3, lastFailure: 'disk-image-create exited 1', retryAt: NOW + 240_000, requested: true,
      })],
      builds: [],
      pauses: [{ diskimage: 'ubuntu-jammy', provider: null, since: NOW - 1000, reason: 'kernel regression' }],
      now: NOW,
    });
    assert.deepEqual(lines, [
      'ubuntu-jammy: builds paused by operator (kernel regression); waiting: no builder registers image-build:ubuntu-jammy; '
      + '3 failed builds, last: disk-image-create exited 1; next attempt in 00:00:04:00; build requested',
    ]);
  });

  it('tells a pause by config from one by an operator', () => {
    const lines = diskimageAttention({ statuses: [status('a', { paused: 'config' }), status('b', { paused: 'operator' })], builds: [], pauses: [], now: NOW });
    assert.deepEqual(lines, ['a: builds paused by config (pause: true)', 'b: builds paused by operator']);
  });

  it('says when the newest build is revoked, so a new one is built (or would be, when paused)', () => {
    const revoked = 'newest build a-0000000002 revoked: kernel panics on boot';
    const lines = diskimageAttention({ statuses: [status('a', { paused: 'operator', revoked })], builds: [], pauses: [], now: NOW });
    assert.deepEqual(lines, [`a: builds paused by operator; ${revoked}`]);
  });

  it('says a retry is due when the backoff has passed, and counts one failure in the singular', () => {
    const lines = diskimageAttention({ statuses: [status('a', { failures: 1, lastFailure: 'boom', retryAt: NOW - 1 })], builds: [], pauses: [], now: NOW });
    assert.deepEqual(lines, ['a: 1 failed build, last: boom; next attempt due now']);
  });

  it('gives the reason of each failed or lost build after its diskimage line', () => {
    const lines = diskimageAttention({
      statuses: [status('a', { failures: 1, lastFailure: 'dib exited 1', retryAt: NOW + 60_000 })],
      builds: [
        build('a-0000000002', { state: 'failed', reason: 'dib exited 1' }),
        build('a-0000000001', { state: 'lost', reason: 'no builder advertises its files' }),
        build('a-0000000003', { state: 'ready' }),
        build('b-0000000001', { state: 'failed', reason: null }),
      ],
      pauses: [],
      now: NOW,
    });
    assert.deepEqual(lines, [
      'a: 1 failed build, last: dib exited 1; next attempt in 00:00:01:00',
      'a-0000000001 lost: no builder advertises its files',
      'a-0000000002 failed: dib exited 1',
      'b-0000000001 failed: no reason recorded',
    ]);
  });
});
