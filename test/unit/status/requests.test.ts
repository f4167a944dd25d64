import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { WaitReason } from '../../../lib/fleet/placement.js';
import { REQUEST_COLUMNS, requestJson, requestRow, requestRows, waitText } from '../../../lib/status/requests.js';
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
  it("uses Nodepool's request-list columns plus Age and Waiting", () => {
    assert.deepEqual([...REQUEST_COLUMNS], ['Request ID', 'Priority', 'State', 'Requestor', 'Node Types', 'Nodes', 'Declined By', 'Age', 'Waiting']);
  });

  it('says why a request waits, per pool, leaving out pools without its labels while another has them', () => {
    const reasons: WaitReason[] = [
      { provider: 'a', pool: 'main', reason: 'at-quota', detail: 'max-servers: 10 of 10 nodes, none free' },
      { provider: 'b', pool: 'main', reason: 'breaker-open', detail: 'breaker open after launch failures', since: NOW - 5000 },
      { provider: 's', pool: 'main', reason: 'label-not-served', detail: 'does not serve small' },
    ];
    const row = requestRow(req('100-0000000001'), NOW, reasons);
    assert.equal(row[8], 'a/main: at-quota (max-servers: 10 of 10 nodes, none free); b/main: breaker-open (breaker open after launch failures)');
    assert.equal(waitText([reasons[2] as WaitReason]), 's/main: label-not-served (does not serve small)');
    assert.deepEqual(requestJson(req('100-0000000001'), NOW, reasons).waitReasons, reasons);
  });

  it('comma-joins node types, nodes and decliners, with the age since the state changed', () => {
    const r = req('100-0000000003', {
      state: 'fulfilled', labels: ['small', 'small', 'large'], nodes: ['0000000001', '0000000002', '0000000005'],
      declinedBy: ['np1-1-PoolWorker.cloud-b-main'],
    });
    assert.deepEqual(requestRow(r, NOW), [
      '100-0000000003', '100', 'fulfilled', 'zuul', 'small,small,large', '0000000001,0000000002,0000000005',
      'np1-1-PoolWorker.cloud-b-main', '00:00:01:05', '',
    ]);
  });

  it('orders rows by id: priority first, then age', () => {
    const rows = requestRows([req('100-0000000002'), req('050-0000000009'), req('100-0000000001')], NOW);
    assert.deepEqual(rows.map((r) => r[0]), ['050-0000000009', '100-0000000001', '100-0000000002']);
  });

  it('gives the JSON form as the record plus the age in seconds', () => {
    const r = req('100-0000000001');
    assert.deepEqual(requestJson(r, NOW), { ...r, age: 65, waitReasons: [] });
  });
});
