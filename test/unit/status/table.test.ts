import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { renderTable } from '../../../lib/status/table.js';

describe('renderTable', () => {
  it('draws a left-aligned PrettyTable with +---+ borders and one space of padding', () => {
    const text = renderTable(['ID', 'State'], [['a-0000000001', 'ready'], ['b', 'building']]);
    assert.equal(text, [
      '+--------------+----------+',
      '| ID           | State    |',
      '+--------------+----------+',
      '| a-0000000001 | ready    |',
      '| b            | building |',
      '+--------------+----------+',
      '',
    ].join('\n'));
  });

  it('draws the header and borders when there are no rows', () => {
    assert.equal(renderTable(['ID', 'Age'], []), '+----+-----+\n| ID | Age |\n+----+-----+\n+----+-----+\n');
  });

  it('pads short rows with empty cells and flattens newlines inside cells', () => {
    const text = renderTable(['A', 'B'], [['x'], ['two\nlines', 'y']]);
    assert.match(text, /^\| x {9}\| {3}\|$/m);
    assert.match(text, /^\| two lines \| y \|$/m);
  });

  it('sizes columns by characters, not bytes', () => {
    const lines = renderTable(['Name'], [['zürich']]).split('\n');
    assert.equal(lines[0]?.length, lines[3]?.length);
  });
});
