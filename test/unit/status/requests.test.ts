import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { REQUEST_COLUMNS, requestJson, requestRow, requestRows } from '../../../lib/status/requests.js';
import type { NodeRequestRecord } from '../../../lib/store/models.js';

const NOW = 1_700_000_000_000;

function req(id: string, over: Partial<NodeRequestRecord> = {}): NodeRequestRecord {
  return {
    id, priority: Number(id.slice(0, 3)), state: 'requested', stateTime: NOW - 65_000, created: NOW - 70_000,
    labels: ['small'], requestor: 'zuul', reuse: true, provider: null, declinedBy: [], nodes: [], reason: null,
    requestorSession: null, ...over,
  };
}

describe('request presenters', () => {
  it("uses Nodepool's request-list columns plus Age", () => {
    assert.deepEqual([...REQUEST_COLUMNS], ['Request ID', 'Priority', 'State', 'Requestor', 'Node Types', 'Nodes', 'Declined By', 'Age']);
  });

  it('comma-joins node types, nodes and decliners, with the age since the state changed', () => {
    const r = req('100-0000000003', {
      state: 'fulfilled', labels: ['small', 'small', 'large'], nodes: ['0000000001', '0000000002', '0000000005'],
      declinedBy: ['np1-1-PoolWorker.cloud-b-main'],
    });
    assert.deepEqual(requestRow(r, NOW), [
      '100-0000000003', '100', 'fulfilled', 'zuul', 'small,small,large', '0000000001,0000000002,0000000005',
      'np1-1-PoolWorker.cloud-b-main', '00:00:01:05',
    ]);
  });

  it('orders rows by id: priority first, then age', () => {
    const rows = requestRows([req('100-0000000002'), req('050-0000000009'), req('100-0000000001')], NOW);
    assert.deepEqual(rows.map((r) => r[0]), ['050-0000000009', '100-0000000001', '100-0000000002']);
  });

  it('gives the JSON form as the record plus the age in seconds', () => {
    const r = req('100-0000000001');
    assert.deepEqual(requestJson(r, NOW), { ...r, age: 65 });
  });
});
