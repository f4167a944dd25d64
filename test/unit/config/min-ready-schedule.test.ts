/**
 * `labels[].min-ready-schedule`: the value at fixed instants across time zones, Berlin's DST
 * changes and weekday/weekend boundaries, the next change, the plain value outside the periods,
 * and the load-time checks that name the key path.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseConfig } from '../../../lib/config/load.js';
import { currentMinReady, LOOK_BACK_MS, minReadyAt, type ScheduledLabel } from '../../../lib/config/min-ready-schedule.js';
import { problemsOf } from '../../support/config-problems.js';

const t = (iso: string): number => Date.parse(iso);
const BERLIN = 'Europe/Berlin';
/** Weekdays 20 from 07:00 and 2 from 19:00, Berlin time; plain 1. */
const OFFICE: ScheduledLabel = {
  minReady: 1,
  minReadySchedule: [
    { cron: '0 7 * * 1-5', minReady: 20, timezone: BERLIN },
    { cron: '0 19 * * 1-5', minReady: 2, timezone: BERLIN },
  ],
};

function at(label: ScheduledLabel, iso: string): [number, string, string | null, number | null] {
  const r = minReadyAt(label, t(iso));
  return [r.minReady, r.source, r.nextChange ? new Date(r.nextChange.at).toISOString() : null, r.nextChange?.minReady ?? null];
}

describe('min-ready-schedule: the value at an instant', () => {
  it('switches at 07:00 and 19:00 Berlin time on weekdays, to the millisecond (CET: UTC+1)', () => {
    // Friday 27 March 2026, still CET.
    assert.deepEqual(at(OFFICE, '2026-03-27T05:59:59.999Z'), [2, 'schedule', '2026-03-27T06:00:00.000Z', 20], 'Thursday 19:00 still holds at 06:59:59.999');
    assert.deepEqual(at(OFFICE, '2026-03-27T06:00:00.000Z'), [20, 'schedule', '2026-03-27T18:00:00.000Z', 2]);
    assert.deepEqual(at(OFFICE, '2026-03-27T17:59:59.999Z'), [20, 'schedule', '2026-03-27T18:00:00.000Z', 2]);
  });

  it('keeps Friday evening\'s value over the weekend, into Monday across the switch to summer time (CEST: UTC+2)', () => {
    assert.deepEqual(at(OFFICE, '2026-03-27T18:00:00.000Z'), [2, 'schedule', '2026-03-30T05:00:00.000Z', 20]);
    assert.deepEqual(at(OFFICE, '2026-03-28T12:00:00Z'), [2, 'schedule', '2026-03-30T05:00:00.000Z', 20], 'Saturday');
    assert.deepEqual(at(OFFICE, '2026-03-29T23:00:00Z'), [2, 'schedule', '2026-03-30T05:00:00.000Z', 20], 'Monday 01:00 CEST');
    assert.deepEqual(at(OFFICE, '2026-03-30T04:59:59.999Z'), [2, 'schedule', '2026-03-30T05:00:00.000Z', 20]);
    assert.deepEqual(at(OFFICE, '2026-03-30T05:00:00.000Z'), [20, 'schedule', '2026-03-30T17:00:00.000Z', 2], '07:00 CEST is 05:00 UTC');
  });

  it('follows the switch back to winter time in October', () => {
    assert.deepEqual(at(OFFICE, '2026-10-23T12:00:00Z'), [20, 'schedule', '2026-10-23T17:00:00.000Z', 2], 'Friday, CEST');
    assert.deepEqual(at(OFFICE, '2026-10-25T12:00:00Z'), [2, 'schedule', '2026-10-26T06:00:00.000Z', 20], 'Sunday after the change: Monday 07:00 CET');
  });

  it('runs a time that the spring change skips at the first minute after it, and a repeated one once', () => {
    const night: ScheduledLabel = {
      minReady: 0,
      minReadySchedule: [{ cron: '30 2 * * *', minReady: 5, timezone: BERLIN }, { cron: '0 12 * * *', minReady: 0, timezone: BERLIN }],
    };
    // 29 March: 02:00 CET jumps to 03:00 CEST; 02:30 does not exist, croner fires at 03:00 CEST.
    assert.deepEqual(at(night, '2026-03-28T12:00:00Z'), [0, 'schedule', '2026-03-29T01:00:00.000Z', 5]);
    assert.deepEqual(at(night, '2026-03-29T01:00:00Z'), [5, 'schedule', '2026-03-29T10:00:00.000Z', 0]);
    // 25 October: 03:00 CEST falls back to 02:00 CET; 02:30 comes twice and fires at the first.
    assert.deepEqual(at(night, '2026-10-24T12:00:00Z'), [0, 'schedule', '2026-10-25T00:30:00.000Z', 5]);
    assert.deepEqual(at(night, '2026-10-25T01:45:00Z'), [5, 'schedule', '2026-10-25T11:00:00.000Z', 0], 'the second 02:30 (01:30 UTC) changes nothing');
  });

  it('reads each entry in its own time zone', () => {
    const twoCities: ScheduledLabel = {
      minReady: 0,
      minReadySchedule: [
        { cron: '0 7 * * *', minReady: 3, timezone: 'Asia/Tokyo' },
        { cron: '0 7 * * *', minReady: 9, timezone: 'America/New_York' },
      ],
    };
    // 07:00 JST = 22:00 UTC the day before; 07:00 EDT = 11:00 UTC.
    assert.deepEqual(at(twoCities, '2026-03-30T00:00:00Z'), [3, 'schedule', '2026-03-30T11:00:00.000Z', 9]);
    assert.deepEqual(at(twoCities, '2026-03-30T11:00:00Z'), [9, 'schedule', '2026-03-30T22:00:00.000Z', 3]);
  });

  it('uses the server\'s local time zone for an entry without one', () => {
    const local = Intl.DateTimeFormat().resolvedOptions().timeZone;
    const without: ScheduledLabel = { minReady: 0, minReadySchedule: [{ cron: '0 7 * * 1-5', minReady: 4 }, { cron: '0 19 * * *', minReady: 1 }] };
    const withZone: ScheduledLabel = { minReady: 0, minReadySchedule: without.minReadySchedule.map((e) => ({ ...e, timezone: local })) };
    for (let h = 0; h < 48; h += 5) {
      const now = t('2026-03-30T00:00:00Z') + h * 3_600_000;
      assert.deepEqual(minReadyAt(without, now), minReadyAt(withZone, now), `hour ${h}`);
    }
  });

  it('lets the entry listed later win when two fire at the same minute', () => {
    const tie: ScheduledLabel = { minReady: 0, minReadySchedule: [{ cron: '0 7 * * *', minReady: 3, timezone: 'UTC' }, { cron: '0 7 * * 1', minReady: 8, timezone: 'UTC' }] };
    assert.equal(currentMinReady(tie, t('2026-03-30T07:00:00Z')), 8, 'Monday: both fire, the later entry wins');
    assert.equal(currentMinReady(tie, t('2026-03-31T07:00:00Z')), 3, 'Tuesday: only the first fires');
  });
});

describe('min-ready-schedule: outside the periods', () => {
  const yearly: ScheduledLabel = { minReady: 1, minReadySchedule: [{ cron: '0 7 30 3 *', minReady: 20, timezone: BERLIN }] };

  it('has the plain min-ready before an entry fired, and again 8 days after the latest fire', () => {
    assert.deepEqual(at(yearly, '2026-03-30T04:59:59.999Z'), [1, 'plain', '2026-03-30T05:00:00.000Z', 20]);
    assert.deepEqual(at(yearly, '2026-03-30T05:00:00Z'), [20, 'schedule', new Date(t('2026-03-30T05:00:00Z') + LOOK_BACK_MS).toISOString(), 1]);
    assert.deepEqual(at(yearly, '2026-04-07T04:59:59.999Z'), [20, 'schedule', '2026-04-07T05:00:00.000Z', 1]);
    assert.deepEqual(at(yearly, '2026-04-07T05:00:00Z'), [1, 'plain', '2027-03-30T05:00:00.000Z', 20], 'next year\'s fire');
  });

  it('has the plain value and no change without a schedule', () => {
    assert.deepEqual(minReadyAt({ minReady: 3, minReadySchedule: [] }, 0), { minReady: 3, source: 'plain', nextChange: null, holdsUntil: Infinity });
  });

  it('reports no next change when every fire sets the same value', () => {
    const daily: ScheduledLabel = { minReady: 0, minReadySchedule: [{ cron: '0 7 * * *', minReady: 5, timezone: 'UTC' }] };
    const r = minReadyAt(daily, t('2026-03-30T08:00:00Z'));
    assert.equal(r.minReady, 5);
    assert.equal(r.nextChange, null);
    assert.ok(r.holdsUntil > t('2026-04-30T00:00:00Z'), 'looked ahead over many fires');
  });
});

describe('min-ready-schedule: the next change agrees with the value', () => {
  it('has the current value just before each next change and the announced one at it (every 3 hours over 3 weeks across the DST change)', () => {
    const weekly: ScheduledLabel = { ...OFFICE, minReadySchedule: [...OFFICE.minReadySchedule, { cron: '0 9 * * 6', minReady: 7, timezone: BERLIN }] };
    let checked = 0;
    for (let now = t('2026-03-20T00:00:00Z'); now < t('2026-04-10T00:00:00Z'); now += 3 * 3_600_000) {
      const r = minReadyAt(weekly, now);
      assert.equal(currentMinReady(weekly, now), r.minReady);
      assert.ok(r.nextChange, `a change ahead of ${new Date(now).toISOString()}`);
      assert.equal(currentMinReady(weekly, r.nextChange.at - 1), r.minReady);
      assert.equal(currentMinReady(weekly, r.nextChange.at), r.nextChange.minReady);
      assert.notEqual(r.nextChange.minReady, r.minReady);
      checked += 1;
    }
    assert.equal(checked, 21 * 8);
  });
});

describe('min-ready-schedule: loading', () => {
  const labels = (schedule: string): string => `labels:\n  - {name: a}\n  - {name: b}\n  - name: c\n    min-ready: 1\n    min-ready-schedule: ${schedule}\n`;

  it('loads entries, with the time zone optional', () => {
    const c = parseConfig(labels('[{cron: "0 7 * * 1-5", min-ready: 20, timezone: Europe/Berlin}, {cron: "@daily", min-ready: 0}]'), 'nodepool.yaml');
    assert.deepEqual(c.labels[2]?.minReadySchedule, [{ cron: '0 7 * * 1-5', minReady: 20, timezone: 'Europe/Berlin' }, { cron: '@daily', minReady: 0, timezone: undefined }]);
    assert.deepEqual(c.labels[0]?.minReadySchedule, []);
  });

  it('refuses a bad expression, a 6-field one, one that never fires and a bad time zone, naming the key path', () => {
    assert.deepEqual(problemsOf(labels('[{cron: "61 7 * * *", min-ready: 2}, {cron: "0 7 * *", min-ready: 2}, {cron: "0 0 7 * * *", min-ready: 1}]')), [
      'nodepool.yaml: labels[2].min-ready-schedule[0].cron: expected a cron expression (minute hour day-of-month month day-of-week), got "61 7 * * *": Invalid value for minute: 61',
      'nodepool.yaml: labels[2].min-ready-schedule[1].cron: expected a cron expression (minute hour day-of-month month day-of-week), got "0 7 * *": invalid configuration format (\'0 7 * *\'), exactly five, six, or seven space separated parts are required.',
      'nodepool.yaml: labels[2].min-ready-schedule[2].cron: expected a cron expression (minute hour day-of-month month day-of-week), got "0 0 7 * * *": mode \'5-part\' requires exactly 5 parts, but pattern \'0 0 7 * * *\' has 6 parts.',
    ]);
    assert.deepEqual(problemsOf(labels('[{cron: "0 0 30 2 *", min-ready: 1}, {cron: "0 7 * * *", min-ready: 1, timezone: Europe/Berlinn}]')), [
      'nodepool.yaml: labels[2].min-ready-schedule[0].cron: expected a cron expression that fires, got "0 0 30 2 *", which matches no date',
      'nodepool.yaml: labels[2].min-ready-schedule[1].timezone: expected an IANA time zone name such as Europe/Berlin or UTC, got "Europe/Berlinn"',
    ]);
  });

  it('requires min-ready (an integer >= 0) and cron', () => {
    const problems = problemsOf(labels('[{cron: "0 7 * * *"}, {min-ready: 1}, {cron: "0 7 * * *", min-ready: -1}]'));
    assert.equal(problems.length, 3, problems.join('\n'));
    assert.match(problems[0]!, /^nodepool\.yaml: labels\[2\]\.min-ready-schedule\[0\]\.min-ready: /);
    assert.match(problems[1]!, /^nodepool\.yaml: labels\[2\]\.min-ready-schedule\[1\]\.cron: /);
    assert.match(problems[2]!, /^nodepool\.yaml: labels\[2\]\.min-ready-schedule\[2\]\.min-ready: expected integer >= 0, got -1/);
  });
});
