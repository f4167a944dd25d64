import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseConfig } from '../../../lib/config/load.js';
import { problemsOf } from '../../support/config-problems.js';


describe('config: zookeeper keys', () => {
  it('defaults to no servers, no TLS and a 10 s session timeout', () => {
    const c = parseConfig('labels: []\n', 'n.yaml');
    assert.deepEqual(c.zookeeperServers, []);
    assert.equal(c.zookeeperTls, undefined);
    assert.equal(c.zookeeperTimeout, 10);
  });

  it('defaults the port to 2181 without zookeeper-tls', () => {
    const c = parseConfig('zookeeper-servers: [{host: zk1}, {host: zk2, port: 2999}]\nzookeeper-timeout: 10', 'n.yaml');
    assert.deepEqual(c.zookeeperServers.map((s) => s.port), [2181, 2999]);
    assert.equal(c.zookeeperTimeout, 10, 'an integer timeout is accepted as well as a float (Nodepool\'s schema takes only floats)');
  });

  it('reads servers with the default port, the chroot, TLS files and a fractional timeout', () => {
    const c = parseConfig([
      'zookeeper-servers:',
      '  - {host: zk1.example.org, chroot: /nodepool-test}',
      '  - {host: zk2.example.org, port: 2281, chroot: /nodepool-test}',
      'zookeeper-tls: {ca: /etc/zk/ca.pem, cert: /etc/zk/client.pem, key: /etc/zk/client.key}',
      'zookeeper-timeout: 4.5',
    ].join('\n'), 'n.yaml');
    // With zookeeper-tls, a server without a port is on ZooKeeper's secure port 2281 (Nodepool 11's default).
    assert.deepEqual(c.zookeeperServers, [
      { host: 'zk1.example.org', port: 2281, chroot: '/nodepool-test' },
      { host: 'zk2.example.org', port: 2281, chroot: '/nodepool-test' },
    ]);
    assert.deepEqual(c.zookeeperTls, { ca: '/etc/zk/ca.pem', cert: '/etc/zk/client.pem', key: '/etc/zk/client.key' });
    assert.equal(c.zookeeperTimeout, 4.5);
  });

  it('names file and key path for a missing TLS file, a bad timeout and differing chroots', () => {
    assert.deepEqual(problemsOf([
      'zookeeper-servers: [{host: a, chroot: /x}, {host: b, chroot: /y}]',
      'zookeeper-tls: {ca: /ca.pem, cert: /c.pem}',
      'zookeeper-timeout: none',
    ].join('\n')), [
      'nodepool.yaml: zookeeper-servers: expected one chroot for all servers, got "/x", "/y"',
      'nodepool.yaml: zookeeper-tls.key: expected a string, got nothing (required)',
      'nodepool.yaml: zookeeper-timeout: expected number >= 0.1, got "none"',
    ]);
  });
});
