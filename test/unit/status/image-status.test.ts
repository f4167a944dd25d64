import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { IMAGE_STATUS_COLUMNS, imageStatusAttention, imageStatusRow, imageStatuses } from '../../../lib/status/image-status.js';

const NOW = Date.UTC(2024, 0, 2, 12, 0, 0);

describe('image-status presenter', () => {
  it("uses Nodepool 11's columns", () => {
    assert.deepEqual([...IMAGE_STATUS_COLUMNS], ['Image', 'Paused', 'Build Request', 'Build Request Age']);
  });

  it('shows config and operator pauses and the age of a pending build request, by name', () => {
    const statuses = imageStatuses({
      diskimages: [{ name: 'ubuntu', pause: false }, { name: 'debian', pause: true }, { name: 'fedora', pause: false }],
      builtDiskimages: ['ubuntu'],
      requests: [{ diskimage: 'ubuntu', requested: NOW - 3_725_000 }],
      pauses: [
        { diskimage: 'fedora', provider: null, since: NOW, reason: 'mirror broken' },
        { diskimage: 'ubuntu', provider: 'cloud-a', since: NOW, reason: 'uploads only' },
      ],
      now: NOW,
    });
    assert.deepEqual(statuses.map(imageStatusRow), [
      ['debian', 'yes (config)', 'no', ''],
      ['fedora', 'yes (operator: mirror broken)', 'no', ''],
      ['ubuntu', 'no', 'yes', '00:01:02:05'],
    ]);
    assert.deepEqual(statuses[2], {
      image: 'ubuntu', paused: false, pausedBy: null, pauseReason: null, buildRequest: true, buildRequestAge: 3725, configured: true,
      pins: [], revocations: [],
    });
    assert.deepEqual(imageStatusAttention(statuses), []);
  });

  it('lists diskimages the config dropped while the store still has their builds', () => {
    const statuses = imageStatuses({ diskimages: [], builtDiskimages: ['old', 'old'], requests: [], pauses: [], now: NOW });
    assert.deepEqual(statuses.map(imageStatusRow), [['old', 'no', 'no', '']]);
    assert.deepEqual(imageStatusAttention(statuses), ['old: not defined in the config (records of it remain)']);
  });
});
