import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ageSeconds, formatAge } from '../../../lib/status/age.js';

describe('formatAge', () => {
  it('formats zero as 00:00:00:00', () => {
    assert.equal(formatAge(0), '00:00:00:00');
  });

  it('splits a duration into days, hours, minutes and seconds', () => {
    const ms = ((((2 * 24 + 3) * 60 + 4) * 60) + 5) * 1000;
    assert.equal(formatAge(ms), '02:03:04:05');
  });

  it('drops milliseconds instead of rounding up', () => {
    assert.equal(formatAge(59_999), '00:00:00:59');
    assert.equal(formatAge(60_000), '00:00:01:00');
  });

  it('rolls each unit over at its limit', () => {
    assert.equal(formatAge(3600_000 - 1000), '00:00:59:59');
    assert.equal(formatAge(86_400_000 - 1000), '00:23:59:59');
    assert.equal(formatAge(86_400_000), '01:00:00:00');
  });

  it('lets days grow past two digits', () => {
    assert.equal(formatAge(123 * 86_400_000), '123:00:00:00');
  });

  it('shows negative or invalid durations (clock skew) as zero', () => {
    assert.equal(formatAge(-5000), '00:00:00:00');
    assert.equal(formatAge(Number.NaN), '00:00:00:00');
  });

  it('gives whole seconds since a time for JSON, never negative', () => {
    assert.equal(ageSeconds(1000, 62_999), 61);
    assert.equal(ageSeconds(5000, 1000), 0);
  });
});
