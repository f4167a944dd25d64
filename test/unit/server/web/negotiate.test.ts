import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fieldKey, nodepoolFormat, parseStatusPath, selectFields, statusFormat } from '../../../../server/web/negotiate.js';

describe('web status negotiation', () => {
  it('splits off a .json suffix and a trailing slash', () => {
    assert.deepEqual(parseStatusPath('/node-list.json'), { route: '/node-list', jsonSuffix: true });
    assert.deepEqual(parseStatusPath('/node-list/'), { route: '/node-list', jsonSuffix: false });
    assert.deepEqual(parseStatusPath('/'), { route: '/', jsonSuffix: false });
  });

  it('answers JSON for the suffix or an Accept header preferring application/json, text otherwise', () => {
    assert.equal(statusFormat(undefined, true), 'json');
    assert.equal(statusFormat(undefined, false), 'text');
    assert.equal(statusFormat('application/json', false), 'json');
    assert.equal(statusFormat('text/html, application/json;q=0.9', false), 'json');
    assert.equal(statusFormat('text/plain, application/json;q=0.5', false), 'text');
    assert.equal(statusFormat('application/json;q=0', false), 'text');
    assert.equal(statusFormat('*/*', false), 'text');
  });

  it('keeps the named columns in the order given, whatever their spelling', () => {
    assert.equal(fieldKey('Build ID'), fieldKey('build_id'));
    const picked = selectFields(['ID', 'Image', 'State'], [['1', 'deb', 'ready'], ['2', 'deb', 'building']], 'state, id,ID');
    assert.deepEqual(picked, { ok: true, columns: ['State', 'ID'], rows: [['ready', '1'], ['building', '2']] });
    assert.deepEqual(selectFields(['ID'], [['1']], null), { ok: true, columns: ['ID'], rows: [['1']] });
    assert.deepEqual(selectFields(['ID'], [['1']], ' '), { ok: true, columns: ['ID'], rows: [['1']] });
  });

  it('names the columns there are when a field is unknown', () => {
    assert.deepEqual(selectFields(['Build ID', 'State'], [], 'id,colour'),
      { ok: false, message: 'unknown field "id"; the fields are: buildid, state' });
  });

  it('lets id name the list\'s own id column when it has no ID column', () => {
    const cols = ['Build ID', 'Upload ID', 'State'];
    assert.deepEqual(selectFields(cols, [['b1', 'u1', 'ready']], 'id,state', 'Upload ID'), { ok: true, columns: ['Upload ID', 'State'], rows: [['u1', 'ready']] });
    assert.deepEqual(selectFields(['ID', 'Request ID'], [['a', 'b']], 'id', 'Request ID'), { ok: true, columns: ['ID'], rows: [['a']] }, 'an ID column wins');
    assert.deepEqual(selectFields(cols, [], 'id,colour', 'Upload ID'),
      { ok: false, message: 'unknown field "colour"; the fields are: buildid, uploadid, state (id: uploadid)' });
  });

  it("negotiates Nodepool's lists as its webapp does: text unless JSON is strictly preferred", () => {
    const cases: Array<[string | undefined, 'text' | 'json' | null]> = [
      [undefined, 'text'],
      ['*/*', 'text'],
      ['text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,*/*;q=0.8', 'text'],
      ['application/json', 'json'],
      ['application/json, text/plain', 'text'], // equal q: the earlier offer (text) wins
      ['text/plain;q=0.5, application/json', 'json'],
      ['text/*;q=0.1, application/json;q=0.2', 'json'],
      ['application/json, */*;q=0.9', 'json'], // */* gives text/html 0.9
      ['application/json;q=0.5, */*', 'text'],
      ['APPLICATION/JSON', 'json'],
      ['text/plain;q=0, application/json;q=0.1', 'json'],
      ['garbage', 'text'], // an invalid header accepts every offer
      ['application/json;q=2', 'text'], // q above 1 is invalid too
      ['image/png', null], // matches none: Nodepool's 500, our 406
      ['application/json;charset=utf-8', null], // a range with parameters matches none of the offers
      ['text/plain;q=0', null],
      ['', null],
    ];
    for (const [accept, want] of cases) assert.equal(nodepoolFormat(accept, false), want, `Accept: ${String(accept)}`);
    assert.equal(nodepoolFormat('image/png', true), 'json', 'a .json suffix asks for JSON');
  });
});
