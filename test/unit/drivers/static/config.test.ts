import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfig } from '../../../../lib/config/load.js';
import { ConfigError } from '../../../../lib/errors.js';
import { staticDriver } from '../../../../lib/drivers/static/index.js';
import { poolPriority } from '../../../../lib/drivers/contract/common-config.js';
import { configEquals } from '../../../../lib/config/config-equals.js';
import { staticHosts, type StaticProviderConfig } from '../../../../lib/drivers/static/config.js';

const KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIALxfbX9TwoknOH3jri1F6wjGMKQSpsD6S1WXU/kTBfV';

function load(provider: string[]): StaticProviderConfig {
  const c = parseConfig(['labels: [{name: small}, {name: big}, {name: arm}]', 'providers:', ...provider.map((l) => `  ${l}`)].join('\n'), 'nodepool.yaml');
  const p = c.providers[0];
  assert.equal(p?.driver, 'static');
  return p as StaticProviderConfig;
}

function problems(provider: string[]): string[] {
  try {
    load(provider);
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`);
    return err.message.split('\n');
  }
  assert.fail('expected the config to be rejected');
}

describe('static driver config', () => {
  it('applies every default of a minimal host', () => {
    const p = load(['- name: lab', '  driver: static', '  pools: [{name: main, nodes: [{name: host1, labels: [small]}]}]']);
    assert.equal(p.maxConcurrency, -1);
    const pool = p.pools[0];
    assert.equal(pool?.maxServers, Number.MAX_SAFE_INTEGER);
    assert.deepEqual(pool?.nodeAttributes, {});
    assert.deepEqual(pool?.nodes[0], {
      name: 'host1', labels: ['small'], username: 'zuul', timeout: 5, hostKey: [], hostKeyChecking: true, pythonPath: 'auto',
      shellType: undefined, connectionPort: 22, connectionType: 'ssh', maxParallelJobs: 1,
    });
  });

  it('splits a label string on whitespace and accepts a list', () => {
    const p = load(['- name: lab', '  driver: static', '  pools:', '    - name: main', '      nodes:',
      '        - {name: h1, labels: "small  big"}', '        - {name: h2, labels: [arm, small]}']);
    assert.deepEqual(p.pools[0]?.nodes.map((n) => n.labels), [['small', 'big'], ['arm', 'small']]);
    assert.deepEqual(staticDriver.pools(p)[0]?.labels, ['small', 'big', 'arm']);
    assert.equal(staticDriver.imageTargets, undefined, 'static providers take no images');
  });

  it('normalises host keys given as a string or a list, dropping comments', () => {
    const p = load(['- name: lab', '  driver: static', '  pools:', '    - name: main', '      nodes:',
      `        - {name: h1, labels: small, host-key: "${KEY} root@h1"}`, `        - {name: h2, labels: small, host-key: ["${KEY}"]}`]);
    assert.deepEqual(p.pools[0]?.nodes.map((n) => n.hostKey), [[KEY], [KEY]]);
  });

  it('refuses ssh-port with its key path, and a malformed host key', () => {
    const lines = problems(['- name: lab', '  driver: static', '  pools:', '    - name: main', '      nodes:',
      '        - {name: h1, labels: small, ssh-port: 2222}', '        - {name: h2, labels: small, host-key: "not a key at all"}']);
    assert.equal(lines.length, 2);
    assert.match(lines[0] ?? '', /^nodepool\.yaml: providers\[0\]\.pools\[0\]\.nodes\[0\]\.ssh-port: unknown key \(known keys: .*connection-port.*\)$/);
    assert.match(lines[1] ?? '', /^nodepool\.yaml: providers\[0\]\.pools\[0\]\.nodes\[1\]\.host-key: expected an SSH public key "<type> <base64>", got "not a key at all"$/);
  });

  it('refuses a host twice in one pool or across pools, but allows one name on two ports', () => {
    const lines = problems(['- name: lab', '  driver: static', '  pools:',
      '    - name: a', '      nodes: [{name: h1, labels: small}, {name: h1, labels: big, connection-port: 2222}, {name: h2, labels: small}]',
      '    - name: b', '      nodes: [{name: h1, labels: arm, connection-port: 2222}]']);
    assert.deepEqual(lines, ['nodepool.yaml: providers[0].pools[1].nodes[0]: duplicate node "h1:2222" (also at providers[0].pools[0].nodes[1]); a host may be in one pool only']);
    const same = problems(['- name: lab', '  driver: static', '  pools: [{name: a, nodes: [{name: h1, labels: small}, {name: h1, labels: big}]}]']);
    assert.deepEqual(same, ['nodepool.yaml: providers[0].pools[0].nodes[1]: duplicate node "h1:22" (also at providers[0].pools[0].nodes[0])']);
  });

  it('checks connection-type, timeout and max-parallel-jobs values, and pool labels against labels', () => {
    const lines = problems(['- name: lab', '  driver: static', '  pools:', '    - name: main', '      nodes:',
      '        - {name: h1, labels: small, connection-type: telnet, timeout: 0, max-parallel-jobs: 0}',
      '        - {name: h2, labels: [huge]}']);
    assert.ok(lines.some((l) => l === 'nodepool.yaml: providers[0].pools[0].nodes[0].connection-type: expected one of ssh, winrm, network_cli, got "telnet"'), lines.join('\n'));
    assert.ok(lines.some((l) => l.startsWith('nodepool.yaml: providers[0].pools[0].nodes[0].timeout: expected number >= 0.1, got 0')), lines.join('\n'));
    assert.ok(lines.some((l) => l.startsWith('nodepool.yaml: providers[0].pools[0].nodes[0].max-parallel-jobs: expected integer >= 1, got 0')), lines.join('\n'));
    const labels = problems(['- name: lab', '  driver: static', '  pools: [{name: main, nodes: [{name: h2, labels: [huge]}]}]']);
    assert.equal(labels.length, 1);
    assert.match(labels[0] ?? '', /label "huge" \(pool main\) is not defined in labels/);
  });

  it('compares configs by value and lists hosts with their pool', () => {
    const text = ['- name: lab', '  driver: static', '  pools: [{name: main, node-attributes: {rack: r1}, nodes: [{name: h1, labels: small, max-parallel-jobs: 2}]}]'];
    const a = load(text);
    assert.ok(configEquals(a, load(text)));
    assert.ok(!configEquals(a, load(text.map((l) => l.replace('max-parallel-jobs: 2', 'max-parallel-jobs: 3')))));
    const hosts = staticHosts(a);
    assert.deepEqual(hosts.map((h) => [h.id, h.pool, h.attributes]), [['h1:22', 'main', { rack: 'r1' }]]);
  });

  it('reads Nodepool 11 node keys: host-key-checking, python-path, shell-type, and priority on provider and pool', () => {
    const p = load(['- name: lab', '  driver: static', '  priority: 50', '  pools:', '    - name: main', '      priority: 10', '      nodes:',
      `        - {name: h1, labels: small, host-key-checking: false, host-key: ["${KEY}"], python-path: /usr/bin/python3, shell-type: csh}`,
      '    - name: other', '      nodes: [{name: h2, labels: small}]']);
    assert.deepEqual(p.pools[0]?.nodes.map((n) => [n.hostKeyChecking, n.pythonPath, n.shellType]), [[false, '/usr/bin/python3', 'csh']]);
    assert.deepEqual([p.priority, p.pools[0]?.priority, p.pools[1]?.priority], [50, 10, undefined]);
    assert.deepEqual([poolPriority(p, 'main'), poolPriority(p, 'other')], [10, 50]);
    const bare = load(['- name: lab', '  driver: static', '  pools: [{name: main, nodes: [{name: h1, labels: small}]}]']);
    assert.equal(poolPriority(bare, 'main'), 100);
  });

  it('names the key path of a bad host-key-checking or priority', () => {
    const lines = problems(['- name: lab', '  driver: static', '  priority: high', '  pools:', '    - name: main',
      '      nodes: [{name: h1, labels: small, host-key-checking: "no"}]']);
    assert.ok(lines.some((l) => l.includes('providers[0].priority: expected')), lines.join('\n'));
    assert.ok(lines.some((l) => l.includes('providers[0].pools[0].nodes[0].host-key-checking: expected true or false')), lines.join('\n'));
  });
});
