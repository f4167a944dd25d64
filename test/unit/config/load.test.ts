import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig, parseConfig } from '../../../lib/config/load.js';
import { ConfigError } from '../../../lib/errors.js';
import { problemsOf } from '../../support/config-problems.js';


describe('config loader', () => {
  it('loads the example config with defaults applied and camelCase keys', () => {
    const c = loadConfig('config/nodepool.example.yaml');
    assert.equal(c.gearmanServers[0]?.port, 4730);
    const img = c.diskimages[0];
    assert.equal(img?.name, 'debian-bookworm');
    assert.equal(img?.rebuildAge, 86400);
    assert.equal(img?.dibCmd, 'disk-image-create');
    assert.deepEqual(img?.envVars, { DIB_DEBIAN_COMPONENTS: 'main' });
    const cloud = c.providers[0];
    assert.equal(cloud?.driver, 'openstack');
    if (cloud?.driver === 'openstack') {
      assert.equal(cloud.imageFormat, 'qcow2');
      assert.equal(cloud.pools[0]?.maxServers, 10);
      assert.deepEqual(cloud.diskimages[0]?.meta, { purpose: 'ci' });
    }
    const lab = c.providers[1];
    assert.equal(lab?.driver, 'static');
    if (lab?.driver === 'static') assert.equal(lab.pools[0]?.nodes[0]?.maxParallelJobs, 1);
    assert.equal(c.buildTmpDir, '/opt/nodepool/images/.tmp');
    assert.ok(Object.isFrozen(c) && Object.isFrozen(c.diskimages[0]), 'config is deeply frozen');
  });

  it('coerces release and env-vars to strings as Nodepool does', () => {
    const c = parseConfig('diskimages:\n  - name: x\n    release: 21\n    env-vars: {A: 1, B: true}\n', 'n.yaml');
    assert.equal(c.diskimages[0]?.release, '21');
    assert.deepEqual(c.diskimages[0]?.envVars, { A: '1', B: 'true' });
  });

  it('reports every problem with file, key path, expected and actual', () => {
    const lines = problemsOf([
      'gearman-servers: [{host: 127.0.0.1, port: "x"}]',
      'labels: [{name: small}]',
      'diskimages:',
      '  - name: ok',
      '    rebuild-age: soon',
      '  - name: ../bad',
      'providers:',
      '  - name: p1',
      '    cloud: c',
      '    pools:',
      '      - name: main',
      '        max-servers: two',
      '        labels: [{name: small, diskimage: ok, min-ram: 1}]',
    ].join('\n'));
    assert.deepEqual(lines, [
      'nodepool.yaml: gearman-servers[0].port: expected integer from 1 to 65535, got "x"',
      'nodepool.yaml: diskimages[0].rebuild-age: expected integer >= 1, got "soon"',
      'nodepool.yaml: diskimages[1].name: expected a diskimage name (1 to 51 letters, digits, ".", "_" or "-", starting with a letter or digit), got "../bad"',
      'nodepool.yaml: providers[0].pools[0].max-servers: expected integer >= 0, got "two"',
    ]);
  });

  it('checks cross-references between providers, diskimages and labels', () => {
    const lines = problemsOf([
      'labels: [{name: small}]',
      'diskimages: [{name: d1}]',
      'providers:',
      '  - name: p1',
      '    cloud: c',
      '    diskimages: [{name: nope}]',
      '    pools:',
      '      - name: main',
      '        labels: [{name: big, diskimage: d1}]',
      '  - name: lab',
      '    driver: static',
      '    pools: [{name: main, nodes: [{name: h1, labels: [huge]}]}]',
    ].join('\n'));
    assert.deepEqual(lines, [
      'nodepool.yaml: providers[0].diskimages[0].name: diskimage "nope" is not defined in diskimages',
      'nodepool.yaml: providers[0].pools[0]: label "big" (pool main) is not defined in labels',
      'nodepool.yaml: providers[0].pools[0].labels[0].diskimage: diskimage "d1" is not listed in providers[0].diskimages',
      'nodepool.yaml: providers[0].pools[0].labels[0]: expected min-ram or flavor-name, got neither',
      'nodepool.yaml: providers[1].pools[0]: label "huge" (pool main) is not defined in labels',
    ]);
  });

  it('names the provider when its driver is unknown, and flags unknown keys and duplicates', () => {
    const lines = problemsOf([
      'labels: [{name: l, min-redy: 1}]',
      'diskimages: [{name: a}, {name: a}]',
      'providers: [{name: p9, driver: nimbus}]',
    ].join('\n'));
    assert.equal(lines.length, 3);
    assert.match(lines[0] ?? '', /^nodepool\.yaml: labels\[0\]\.min-redy: unknown key \(known keys: name, min-ready, max-ready-age, min-ready-schedule\)$/);
    assert.equal(lines[1], 'nodepool.yaml: diskimages[1]: duplicate diskimage "a" (also at diskimages[0])');
    assert.equal(lines[2], 'nodepool.yaml: providers[0].driver: unknown driver "nimbus" (provider p9): expected one of openstack, static, qemu');
  });

  it('refuses an empty, blank or null document (a truncated file must not read as "no providers")', () => {
    for (const text of ['', '\n', '# only a comment\n', '---\n', 'null\n', '~\n']) {
      assert.deepEqual(problemsOf(text), ['nodepool.yaml: the document is empty (a truncated or half-written file?); a config needs at least one key'], JSON.stringify(text));
    }
  });

  it('reports invalid YAML with its position and an unreadable file with its name', () => {
    assert.deepEqual(problemsOf('labels: [a\n  b: c'), [problemsOf('labels: [a\n  b: c')[0]]);
    assert.match(problemsOf('labels: [a\n  b: c')[0] ?? '', /^nodepool\.yaml: line \d+, column \d+: invalid YAML: /);
    assert.throws(() => loadConfig('/nonexistent/nodepool.yaml'),
      (e: unknown) => e instanceof ConfigError && /^\/nonexistent\/nodepool\.yaml: cannot read: ENOENT/.test(e.message));
  });
});
