import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfig } from '../../../../lib/config/load.js';
import { statsdSegment } from '../../../../lib/metrics/statsd-client.js';
import type { NodeRecord, NodeState } from '../../../../lib/store/models.js';
import { launchResult } from '../../../../server/metrics/launch-result.js';
import { launchKeys, nodeGauges } from '../../../../server/metrics/statsd-reporter.js';

function node(id: string, labels: string[], state: NodeState): NodeRecord {
  return {
    id, state, stateTime: 0, created: 0, provider: 'static-1', pool: 'main', labels,
    launcher: null, allocatedTo: null, hostname: null, interfaceIp: null, publicIpv4: null, publicIpv6: null, privateIpv4: null,
    connectionType: 'ssh', connectionPort: 22, username: null, hostKeys: [], externalId: null, cloud: null, region: null,
    az: null, image: null, resources: null, attributes: {}, reason: null, holdReason: null, holdExpiration: null,
    consumerSession: null,
    handedOff: false,
  };
}

describe("statsd names (Nodepool's)", () => {
  it('maps launch outcomes to ready, error.quota and error.unknown', () => {
    assert.deepEqual((['ready', 'aborted', 'failed'] as const).map(launchResult), ['ready', 'error.quota', 'error.unknown']);
  });

  it('counts a launch overall, per provider, per provider and AZ, and per requestor with dots and colons replaced', () => {
    const keys = launchKeys({
      provider: 'cloud-a', pool: 'main', label: 'small', nodeId: '0000000001', requestor: 'zuul.example.org:1', az: 'nova',
      result: 'failed', durationMs: 1000,
    });
    assert.deepEqual(keys, [
      'nodepool.launch.error.unknown',
      'nodepool.launch.provider.cloud-a.error.unknown',
      'nodepool.launch.provider.cloud-a.nova.error.unknown',
      'nodepool.launch.requestor.zuul_example_org_1.error.unknown',
    ]);
  });

  it('reports every node state per provider and label, 0 included, and max_servers', () => {
    const config = parseConfig([
      'labels: [{name: small}, {name: big}]',
      'providers:',
      '  - name: static-1',
      '    driver: static',
      '    pools: [{name: main, nodes: [{name: host-a, labels: [small, big], max-parallel-jobs: 2}]}]',
      '',
    ].join('\n'), '/nonexistent/nodepool.yaml');
    const g = nodeGauges(config, [node('1', ['small', 'big'], 'ready'), node('2', ['small'], 'in-use')]);
    assert.equal(g.get('nodepool.nodes.ready'), 1);
    assert.equal(g.get('nodepool.nodes.in-use'), 1);
    assert.equal(g.get('nodepool.nodes.deleting'), 0);
    assert.equal(g.get('nodepool.provider.static-1.nodes.ready'), 1);
    assert.equal(g.get('nodepool.label.small.nodes.ready'), 1);
    assert.equal(g.get('nodepool.label.small.nodes.in-use'), 1);
    assert.equal(g.get('nodepool.label.big.nodes.in-use'), 0);
    assert.ok(g.has('nodepool.provider.static-1.max_servers'));
  });

  it('keeps segments safe for the line protocol', () => {
    assert.equal(statsdSegment('a:b|c@d e/f'), 'a_b_c_d_e_f');
    assert.equal(statsdSegment('ubuntu-22.04'), 'ubuntu-22.04');
  });
});
