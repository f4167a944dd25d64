import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  targetAttention, transferText, UPLOAD_COLUMNS, uploadProgressText, uploadRow, uploadRows, uploadTable, uploadTransfer,
} from '../../../lib/status/uploads.js';
import type { UploadRecord } from '../../../lib/store/models.js';
import type { UploadTargetStatus } from '../../../lib/status/lifecycle-status.js';

const NOW = 1_700_000_000_000;
const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

function upload(id: string, over: Partial<UploadRecord> = {}): UploadRecord {
  return {
    id, buildId: 'ubuntu-jammy-0000000004', diskimage: 'ubuntu-jammy', provider: 'cloud-a', imageName: 'ubuntu-jammy',
    state: 'ready', stateTime: NOW - 3_725_000, created: NOW - 4_000_000, externalId: 'f3c1', externalName: 'ubuntu-jammy-1700000000',
    format: 'qcow2', reason: null, progress: null, ...over,
  };
}

function target(diskimage: string, provider: string, over: Partial<UploadTargetStatus> = {}): UploadTargetStatus {
  return { diskimage, provider, paused: null, waiting: null, failures: 0, lastFailure: null, retryAt: null, ...over };
}

describe('upload presenters', () => {
  it('uses Nodepool 3.x column names', () => {
    assert.deepEqual([...UPLOAD_COLUMNS],
      ['Build ID', 'Upload ID', 'Provider', 'Image', 'Provider Image Name', 'Provider Image ID', 'State', 'Age']);
  });

  it("shows the cloud's image name and id, and the age since the state changed", () => {
    assert.deepEqual(uploadRow(upload('0000000007'), NOW),
      ['ubuntu-jammy-0000000004', '0000000007', 'cloud-a', 'ubuntu-jammy', 'ubuntu-jammy-1700000000', 'f3c1', 'ready', '00:01:02:05']);
  });

  it('leaves the cloud name and id empty until known', () => {
    const row = uploadRow(upload('0000000001', { state: 'uploading', externalId: null, externalName: null }), NOW);
    assert.deepEqual(row.slice(4, 7), ['', '', 'uploading']);
  });

  it('orders rows by image, provider, then upload id', () => {
    const rows = uploadRows([
      upload('0000000003', { provider: 'cloud-b' }),
      upload('0000000002'),
      upload('0000000001', { diskimage: 'zeta' }),
      upload('0000000004'),
    ], NOW);
    assert.deepEqual(rows.map((r) => r[1]), ['0000000002', '0000000004', '0000000003', '0000000001']);
  });

  it('names each target that is paused, waiting or backing off', () => {
    const lines = targetAttention({
      targets: [
        target('ubuntu-jammy', 'cloud-a', { paused: 'operator' }),
        target('ubuntu-jammy', 'cloud-b', { waiting: 'no builder registers image-upload:ubuntu-jammy-0000000004' }),
        target('ubuntu-jammy', 'cloud-c', { failures: 2, lastFailure: 'Glance said 503', retryAt: NOW + 120_000 }),
        target('ubuntu-jammy', 'cloud-d', { paused: 'config' }),
        target('ubuntu-jammy', 'cloud-e'),
      ],
      uploads: [],
      pauses: [{ diskimage: 'ubuntu-jammy', provider: 'cloud-a', since: NOW, reason: 'quota' }],
      now: NOW,
    });
    assert.deepEqual(lines, [
      'ubuntu-jammy to cloud-a: uploads paused by operator (quota)',
      'ubuntu-jammy to cloud-b: waiting: no builder registers image-upload:ubuntu-jammy-0000000004',
      'ubuntu-jammy to cloud-c: 2 failed uploads, last: Glance said 503; next attempt in 00:00:02:00',
      'ubuntu-jammy to cloud-d: uploads paused by config (pause: true)',
    ]);
  });

  it('gives the reason of each failed upload', () => {
    const lines = targetAttention({
      targets: [],
      uploads: [upload('0000000009', { state: 'failed', reason: 'Glance said 413' }), upload('0000000010')],
      pauses: [],
      now: NOW,
    });
    assert.deepEqual(lines, ['upload 0000000009 of ubuntu-jammy-0000000004 to cloud-a failed: Glance said 413']);
  });

  it('says which running uploads their builder is trying again, and why', () => {
    const lines = targetAttention({
      targets: [],
      uploads: [
        upload('0000000011', { state: 'uploading', reason: 'attempt 2 of 3, after: Glance PUT /v2/images/x/file failed with 503' }),
        upload('0000000012', { state: 'uploading' }),
      ],
      pauses: [],
      now: NOW,
    });
    assert.deepEqual(lines, ['upload 0000000011 of ubuntu-jammy-0000000004 to cloud-a retrying: attempt 2 of 3, after: Glance PUT /v2/images/x/file failed with 503']);
  });

  it('shows a running upload as sent/total, percent and rate', () => {
    const u = upload('0000000013', { state: 'uploading', progress: { numerator: 1.2 * GiB, denominator: 3.4 * GiB, rate: 180 * MiB, sampledAt: NOW - 800 } });
    assert.equal(uploadProgressText(u, NOW), '1.2/3.4 GiB 35% 180 MiB/s');
    assert.deepEqual(uploadTransfer(u, NOW), {
      sentBytes: 1.2 * GiB, totalBytes: 3.4 * GiB, percent: 35, bytesPerSecond: 180 * MiB, etaSeconds: Math.ceil((2.2 * 1024) / 180), stalledSeconds: null,
    });
  });

  it('shows only the fraction for a record without a rate (written before rates were recorded, or the first sample)', () => {
    const old = upload('0000000014', { state: 'uploading', progress: { numerator: 384 * MiB, denominator: 768 * MiB } });
    assert.equal(uploadProgressText(old, NOW), '384/768 MiB 50%');
    assert.equal(uploadTransfer(old, NOW)?.bytesPerSecond, null);
    const first = upload('0000000015', { state: 'uploading', progress: { numerator: 0, denominator: 768 * MiB, rate: null, sampledAt: NOW } });
    assert.equal(uploadProgressText(first, NOW), '0/768 MiB 0%');
  });

  it('says an upload stalled instead of showing its last rate when no sample came for 30 s', () => {
    const u = upload('0000000016', { state: 'uploading', progress: { numerator: 384 * MiB, denominator: 768 * MiB, rate: 90 * MiB, sampledAt: NOW - 65_000 } });
    assert.equal(uploadProgressText(u, NOW), '384/768 MiB 50% stalled 00:00:01:05');
    assert.equal(uploadTransfer(u, NOW)?.stalledSeconds, 65);
  });

  it('shows no rate once every byte is sent (the cloud is finishing the image)', () => {
    const u = upload('0000000017', { state: 'uploading', progress: { numerator: 768 * MiB, denominator: 768 * MiB, rate: 90 * MiB, sampledAt: NOW - 65_000 } });
    assert.equal(uploadProgressText(u, NOW), '768/768 MiB 100%');
  });

  it('has no transfer for uploads not running or without progress', () => {
    assert.equal(uploadTransfer(upload('0000000018', { progress: { numerator: 1, denominator: 2 } }), NOW), null);
    assert.equal(uploadTransfer(upload('0000000019', { state: 'uploading' }), NOW), null);
    assert.equal(uploadProgressText(upload('0000000019', { state: 'uploading' }), NOW), '');
  });

  it('adds the ETA or leaves the percent out when asked (progress bars)', () => {
    const t = { sentBytes: 1 * GiB, totalBytes: 2 * GiB, percent: 50, bytesPerSecond: 100 * MiB, etaSeconds: 11, stalledSeconds: null };
    assert.equal(transferText(t, { eta: true }), '1.0/2.0 GiB 50% 100 MiB/s ETA 00:00:00:11');
    assert.equal(transferText(t, { eta: true, percent: false }), '1.0/2.0 GiB 100 MiB/s ETA 00:00:00:11');
  });

  it("keeps Nodepool's columns, adding Progress after them only while an upload runs", () => {
    const ready = upload('0000000020');
    assert.deepEqual(uploadTable([ready], NOW), { columns: [...UPLOAD_COLUMNS], rows: [uploadRow(ready, NOW)] });
    const running = upload('0000000021', { state: 'uploading', progress: { numerator: 1.2 * GiB, denominator: 3.4 * GiB, rate: 180 * MiB, sampledAt: NOW } });
    const table = uploadTable([running, ready], NOW);
    assert.deepEqual(table.columns, [...UPLOAD_COLUMNS, 'Progress']);
    assert.deepEqual(table.rows.map((r) => [r[1], r[6], r[8]]), [['0000000020', 'ready', ''], ['0000000021', 'uploading', '1.2/3.4 GiB 35% 180 MiB/s']]);
  });
});
