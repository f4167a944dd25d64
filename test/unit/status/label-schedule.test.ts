/** label-list with `min-ready-schedule`: the current value, the Next Min Ready column (only when some label has a schedule) and the JSON. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LABEL_COLUMNS, labelsAt, labelSummaries, labelTable } from '../../../lib/status/labels.js';

const LABELS = [
  { name: 'office', minReady: 1, minReadySchedule: [{ cron: '0 7 * * 1-5', minReady: 20, timezone: 'Europe/Berlin' }, { cron: '0 19 * * 1-5', minReady: 2, timezone: 'Europe/Berlin' }] },
  { name: 'plain', minReady: 4, minReadySchedule: [] },
  { name: 'steady', minReady: 0, minReadySchedule: [{ cron: '0 * * * *', minReady: 6, timezone: 'UTC' }] },
];
const POOLS = [{ provider: 'cloud', pool: 'main', labels: ['office', 'plain', 'steady'] }];

describe('label-list with a min-ready schedule', () => {
  it('shows the scheduled value now and its next change; a plain label has an empty cell', () => {
    const s = labelSummaries({ labels: labelsAt(LABELS, Date.parse('2026-03-30T06:00:00Z')), pools: POOLS, nodes: [] });
    const table = labelTable(s);
    assert.deepEqual(table.columns, [...LABEL_COLUMNS, 'Next Min Ready']);
    assert.deepEqual(table.rows.map((r) => [r[0], r[1], r.at(-1)]), [
      ['office', '20', '2 at 2026-03-30 17:00 UTC'],
      ['plain', '4', ''],
      ['steady', '6', 'none within a year'],
    ]);
    assert.deepEqual(s[0]?.minReadySchedule, { source: 'schedule', nextChange: { at: Date.parse('2026-03-30T17:00:00Z'), minReady: 2 } });
    assert.equal('minReadySchedule' in s[1]!, false, 'no schedule field for a plain label');
  });

  it('keeps the plain table when no label has a schedule', () => {
    const s = labelSummaries({ labels: labelsAt([LABELS[1]!], 0), pools: POOLS, nodes: [] });
    assert.deepEqual(labelTable(s), { columns: [...LABEL_COLUMNS], rows: [['plain', '4', '0', '0', '0', '0', 'cloud/main']] });
  });
});
