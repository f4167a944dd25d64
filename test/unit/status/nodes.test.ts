import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  holdExpiresText, NODE_COLUMNS, NODE_DETAIL_COLUMNS, nodeColumns, nodeJson, nodeRow, nodeRows,
} from '../../../lib/status/nodes.js';
import type { NodeRecord } from '../../../lib/store/models.js';

const NOW = 1_700_000_000_000;

function node(id: string, over: Partial<NodeRecord> = {}): NodeRecord {
  return {
    id, state: 'ready', stateTime: NOW - 90_061_000, created: NOW - 100_000_000, provider: 'cloud-a', pool: 'main',
    labels: ['small'], launcher: 'np1-42-PoolWorker.cloud-a-main', allocatedTo: null, hostname: 'np0000000001',
    interfaceIp: '203.0.113.5', publicIpv4: '203.0.113.5', publicIpv6: '2001:db8::5', privateIpv4: '10.0.0.5',
    connectionType: 'ssh', connectionPort: 22, username: 'zuul', hostKeys: [], externalId: 'srv-1', cloud: 'cloud-a',
    region: 'RegionOne', az: 'nova', image: '0000000003', resources: null, attributes: {}, reason: null,
    holdReason: null, holdExpiration: null, consumerSession: null, handedOff: false, ...over,
  };
}

describe('node presenters', () => {
  it("uses Nodepool's list columns, and --detail adds nine more", () => {
    assert.deepEqual([...NODE_COLUMNS], ['ID', 'Provider', 'Label', 'Server ID', 'Public IPv4', 'IPv6', 'State', 'Age', 'Locked']);
    assert.equal(NODE_DETAIL_COLUMNS.length, 18);
    assert.deepEqual(NODE_DETAIL_COLUMNS.slice(9),
      ['Pool', 'Hostname', 'Private IPv4', 'AZ', 'Port', 'Launcher', 'Allocated To', 'Hold Reason', 'Hold Expires']);
    assert.equal(nodeColumns(false), NODE_COLUMNS);
    assert.equal(nodeColumns(true), NODE_DETAIL_COLUMNS);
  });

  it('shows addresses, state, the age since the state changed and the lock', () => {
    assert.deepEqual(nodeRow(node('0000000001'), true, NOW),
      ['0000000001', 'cloud-a', 'small', 'srv-1', '203.0.113.5', '2001:db8::5', 'ready', '01:01:01:01', 'locked']);
    assert.equal(nodeRow(node('0000000001'), false, NOW)[8], 'unlocked');
  });

  it('comma-joins the labels of a static host and leaves unknown fields empty', () => {
    const row = nodeRow(node('0000000002', { labels: ['small', 'large'], externalId: null, publicIpv4: null, publicIpv6: null }), false, NOW);
    assert.deepEqual(row.slice(2, 6), ['small,large', '', '', '']);
  });

  it('--detail shows pool, hostname, private IPv4, AZ, port, launcher, allocation and hold', () => {
    const row = nodeRow(node('0000000003', {
      state: 'hold', allocatedTo: '100-0000000004', holdReason: 'debug job', holdExpiration: NOW + 3_600_000, connectionPort: 2222,
    }), false, NOW, true);
    assert.equal(row.length, 18);
    assert.deepEqual(row.slice(9),
      ['main', 'np0000000001', '10.0.0.5', 'nova', '2222', 'np1-42-PoolWorker.cloud-a-main', '100-0000000004', 'debug job', '00:01:00:00']);
  });

  it('shows a hold expiry as the time left, "expired" once past, and nothing without one', () => {
    assert.equal(holdExpiresText(null, NOW), '');
    assert.equal(holdExpiresText(NOW + 86_400_000 + 1000, NOW), '01:00:00:01');
    assert.equal(holdExpiresText(NOW - 1, NOW), 'expired');
  });

  it('orders rows by node id and marks the locked ones', () => {
    const rows = nodeRows([node('0000000010'), node('0000000002'), node('0000000007')], new Set(['0000000007']), NOW);
    assert.deepEqual(rows.map((r) => [r[0], r[8]]), [['0000000002', 'unlocked'], ['0000000007', 'locked'], ['0000000010', 'unlocked']]);
  });

  it('gives the JSON form as the record plus locked and the age in seconds', () => {
    const n = node('0000000001');
    assert.deepEqual(nodeJson(n, true, NOW), { ...n, locked: true, age: 90_061 });
  });
});
