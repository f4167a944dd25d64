import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { nodepoolCell, nodepoolText, pythonJson, type NodepoolList } from '../../../lib/status/nodepool-format.js';

const NOW = Date.UTC(2026, 0, 2, 3, 4, 5);
const list: NodepoolList = {
  columns: [['id', 'ID'], ['image', 'Image'], ['formats', 'Formats'], ['age', 'Age']],
  rows: [
    { id: 'deb-0000000001', image: 'deb', formats: ['qcow2', 'raw'], age: Math.trunc(NOW / 1000) - 90061 },
    { id: 'deb-0000000002', image: 'deb', formats: [], age: Math.trunc(NOW / 1000) },
  ],
};

describe("Nodepool's list output", () => {
  it('renders a left-aligned PrettyTable with the titles, ages from epoch seconds and lists joined', () => {
    assert.equal(nodepoolText(list, null, NOW), [
      '+----------------+-------+-----------+-------------+',
      '| ID             | Image | Formats   | Age         |',
      '+----------------+-------+-----------+-------------+',
      '| deb-0000000001 | deb   | qcow2,raw | 01:01:01:01 |',
      '| deb-0000000002 | deb   |           | 00:00:00:00 |',
      '+----------------+-------+-----------+-------------+',
    ].join('\n'));
  });

  it('keeps the ?fields= columns in table order, exact names only, ignoring unknown ones', () => {
    assert.equal(nodepoolText(list, 'image,id,colour,Formats', NOW), [
      '+----------------+-------+', '| ID             | Image |', '+----------------+-------+',
      '| deb-0000000001 | deb   |', '| deb-0000000002 | deb   |', '+----------------+-------+',
    ].join('\n'));
    assert.equal(nodepoolText(list, '', NOW), nodepoolText(list, null, NOW), 'an empty fields keeps every column');
    assert.equal(nodepoolText(list, 'colour', NOW), '', 'no column left');
  });

  it('prints an empty list as its header and the bottom rule, as PrettyTable does', () => {
    assert.equal(nodepoolText({ columns: [['label', 'Label']], rows: [] }, null, NOW), '+-------+\n| Label |\n+-------+\n+-------+');
  });

  it('makes cells as Python prints them: None empty, True/False, mappings as repr, *_age blank when null', () => {
    assert.equal(nodepoolCell('comment', null, NOW), '');
    assert.equal(nodepoolCell('paused', true, NOW), 'True');
    assert.equal(nodepoolCell('connection_port', 22, NOW), '22');
    assert.equal(nodepoolCell('driver_data', { a: 1, b: "it's", c: [true, null] }, NOW), `{'a': 1, 'b': "it's", 'c': [True, None]}`);
    assert.equal(nodepoolCell('build_request_age', null, NOW), '');
    assert.equal(nodepoolCell('build_request_age', Math.trunc(NOW / 1000) - 61, NOW), '00:00:01:01');
    assert.equal(nodepoolCell('age', '00:01:00:00', NOW), '00:01:00:00', 'an age already formatted stays');
  });

  it("writes JSON as Python's json.dumps: spaced separators, ASCII only", () => {
    assert.equal(pythonJson([{ id: 'a', n: 1, ok: false, none: null, list: ['x', 'y'], nested: { k: 'é' } }]),
      '[{"id": "a", "n": 1, "ok": false, "none": null, "list": ["x", "y"], "nested": {"k": "\\u00e9"}}]');
    assert.equal(pythonJson([]), '[]');
    assert.deepEqual(JSON.parse(pythonJson({ s: 'line\n"q"\u2603' })), { s: 'line\n"q"\u2603' });
  });
});
