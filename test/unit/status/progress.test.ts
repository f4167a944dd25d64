import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { progressBar, progressPercent } from '../../../lib/status/progress.js';

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
