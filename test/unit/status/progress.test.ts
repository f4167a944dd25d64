import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { formatByteRatio, formatBytes, formatRate, progressBar, progressPercent } from '../../../lib/status/progress.js';

const KiB = 1024;
const MiB = 1024 * KiB;
const GiB = 1024 * MiB;

describe('progress presenters', () => {
  it('turns a WORK_STATUS fraction into a whole percentage', () => {
    assert.equal(progressPercent({ numerator: 1, denominator: 3 }), 33);
    assert.equal(progressPercent({ numerator: 7, denominator: 7 }), 100);
  });

  it('has no percentage before a usable fraction is reported', () => {
    assert.equal(progressPercent(null), null);
    assert.equal(progressPercent({ numerator: 3, denominator: 0 }), null);
  });

  it('clamps fractions outside 0..1', () => {
    assert.equal(progressPercent({ numerator: 12, denominator: 10 }), 100);
    assert.equal(progressPercent({ numerator: -1, denominator: 10 }), 0);
  });

  it('draws a bar of the given width with the percentage', () => {
    assert.equal(progressBar(50, 10), '[#####.....]  50%');
    assert.equal(progressBar(0, 4), '[....]   0%');
    assert.equal(progressBar(100, 4), '[####] 100%');
  });
});

describe('byte and rate formatting', () => {
  it('shows bytes in binary units, one decimal below 10 and none from 10', () => {
    const rows: Array<[number, string]> = [
      [0, '0 B'], [1, '1 B'], [1023, '1023 B'], [1024, '1.0 KiB'], [1536, '1.5 KiB'], [10 * KiB, '10 KiB'],
      [768 * MiB, '768 MiB'], [3.4 * GiB, '3.4 GiB'], [12.6 * GiB, '13 GiB'], [2048 * GiB, '2.0 TiB'],
    ];
    for (const [n, text] of rows) assert.equal(formatBytes(n), text, `${n} bytes`);
  });

  it('moves to the next unit instead of printing 1024 of one', () => {
    assert.equal(formatBytes(1023.9 * KiB), '1.0 MiB');
    assert.equal(formatBytes(9.97 * MiB), '10 MiB');
  });

  it('shows nonsense (negative, NaN, infinite) as zero', () => {
    assert.equal(formatBytes(-5), '0 B');
    assert.equal(formatBytes(Number.NaN), '0 B');
    assert.equal(formatBytes(Number.POSITIVE_INFINITY), '0 B');
  });

  it('shows sent/total in the total\'s unit and precision', () => {
    assert.equal(formatByteRatio(1.2 * GiB, 3.4 * GiB), '1.2/3.4 GiB');
    assert.equal(formatByteRatio(300 * MiB, 3.4 * GiB), '0.3/3.4 GiB');
    assert.equal(formatByteRatio(384 * MiB, 768 * MiB), '384/768 MiB');
    assert.equal(formatByteRatio(0, 768 * MiB), '0/768 MiB');
    assert.equal(formatByteRatio(100, 512), '100/512 B');
  });

  it('shows rates per second in the same units', () => {
    assert.equal(formatRate(180 * MiB), '180 MiB/s');
    assert.equal(formatRate(1.5 * MiB), '1.5 MiB/s');
    assert.equal(formatRate(0), '0 B/s');
  });
});
