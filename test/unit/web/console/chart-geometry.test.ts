import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chartGeometry, niceMax, type ChartFrame } from '../../../../server/web/console/chart-geometry.js';

const HOUR = 3_600_000;
const frame: ChartFrame = { width: 300, height: 120, margin: { left: 30, right: 70, top: 10, bottom: 10 }, windowMs: 4 * HOUR, now: 10 * HOUR };

describe('niceMax', () => {
  it('rounds up to 1, 2 or 5 times a power of ten, at least 1', () => {
    assert.deepEqual([0, -3, 0.5, 1, 2, 3, 7, 10, 11, 49, 51, 101, 999].map(niceMax), [1, 1, 1, 1, 2, 5, 10, 10, 20, 50, 100, 200, 1000]);
  });
});

describe('chartGeometry', () => {
  it('places samples over the window ending now, a missing key counting 0', () => {
    const g = chartGeometry([
      { time: 6 * HOUR, counts: { ready: 4 } },
      { time: 8 * HOUR, counts: { ready: 2, building: 1 } },
      { time: 10 * HOUR, counts: { ready: 5 } },
    ], frame);
    assert.deepEqual(g.plot, { left: 30, top: 10, width: 200, height: 100 });
    assert.equal(g.yMax, 5);
    assert.deepEqual(g.series.map((s) => s.name), ['building', 'ready']);
    assert.deepEqual(g.series[1]?.points, [[30, 30], [130, 70], [230, 10]]);
    assert.deepEqual(g.series[0]?.points, [[30, 110], [130, 90], [230, 110]]);
    assert.deepEqual(g.series.map((s) => s.last), [0, 5]);
  });

  it('leaves out samples outside the window and puts series in the given order first', () => {
    const g = chartGeometry([
      { time: 5 * HOUR, counts: { failed: 100 } },
      { time: 9 * HOUR, counts: { used: 1, ready: 1, init: 2 } },
    ], frame, ['init', 'ready']);
    assert.deepEqual(g.series.map((s) => s.name), ['init', 'ready', 'used']);
    assert.equal(g.yMax, 2, 'the old sample of 100 does not set the scale');
    assert.deepEqual(g.series[0]?.points, [[180, 10]]);
  });

  it('ticks: hours back to the window start, 0 / half / max on y (half only when whole)', () => {
    const g = chartGeometry([{ time: 10 * HOUR, counts: { a: 10 } }], frame);
    assert.deepEqual(g.xTicks, [{ x: 30, label: '-4h' }, { x: 80, label: '-3h' }, { x: 130, label: '-2h' }, { x: 180, label: '-1h' }, { x: 230, label: 'now' }]);
    assert.deepEqual(g.yTicks, [{ y: 110, value: 0 }, { y: 60, value: 5 }, { y: 10, value: 10 }]);
    const one = chartGeometry([{ time: 10 * HOUR, counts: { a: 1 } }], frame);
    assert.deepEqual(one.yTicks.map((t) => t.value), [0, 1]);
    const short = chartGeometry([], { ...frame, windowMs: 30 * 60_000 });
    assert.deepEqual(short.xTicks.map((t) => t.label), ['-30m', '-25m', '-20m', '-15m', '-10m', '-5m', 'now']);
    const minute = chartGeometry([], { ...frame, windowMs: 60_000 });
    assert.deepEqual(minute.xTicks.map((t) => t.label), ['-1m', '-50s', '-40s', '-30s', '-20s', '-10s', 'now']);
    assert.deepEqual(short.series, []);
  });
});
