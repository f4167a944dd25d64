/** The refusals and edge cases of the Nodepool 11 keys lib/config reads: each names its file and key path. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfig } from '../../../lib/config/load.js';
import { ConfigError } from '../../../lib/errors.js';
import { problemsOf } from '../../support/config-problems.js';

/** The problem lines of a secure file that must be refused, with the main file `main`. */
function secureProblems(main: string, secure: string): string[] {
  try {
    parseConfig(main, 'nodepool.yaml', { secure: { file: 'secure.yaml', text: secure } });
  } catch (err) {
    assert.ok(err instanceof ConfigError);
    assert.equal(err.file, 'secure.yaml');
    return err.message.split('\n');
  }
  assert.fail('expected the secure file to be refused');
}

describe('Nodepool 11 keys: diskimage inheritance', () => {
  it('refuses an unknown parent and a cycle at the parent key, once each', () => {
    assert.deepEqual(problemsOf('diskimages: [{name: a, parent: nope}, {name: b, parent: a}]'), [
      'nodepool.yaml: diskimages[0].parent: unknown diskimage "nope": expected the name of another entry of diskimages',
    ]);
    assert.deepEqual(problemsOf('diskimages: [{name: a, parent: c}, {name: b, parent: a}, {name: c, parent: b}, {name: d, parent: b}]'), [
      'nodepool.yaml: diskimages[0].parent: parent cycle: a → c → b → a',
    ]);
    assert.deepEqual(problemsOf('diskimages: [{name: a, parent: a}]'), ['nodepool.yaml: diskimages[0].parent: parent cycle: a → a']);
  });

  it('checks each entry\'s keys at its own path, abstract ones included', () => {
    assert.deepEqual(problemsOf('diskimages: [{name: a, abstract: true, keep-formats: [zip]}, {name: b, parent: a, metadata: {k: [1]}}]'), [
      'nodepool.yaml: diskimages[0].keep-formats[0]: expected one of qcow2, raw, vhd, vhdx, tar, squashfs, got "zip"',
      'nodepool.yaml: diskimages[1].metadata.k: expected a string or number, got a list',
    ].map((l) => l.replace('qcow2, raw, vhd, vhdx, tar, squashfs', problemsOf('diskimages: [{name: a, formats: [zip]}]')[0]?.match(/one of (.*), got/)?.[1] ?? '')));
  });

  it('ignores falsy overrides as Nodepool does: pause false under a paused parent, release 0', () => {
    const c = parseConfig('diskimages: [{name: p, pause: true, release: 12}, {name: c, parent: p, pause: false, release: 0, python-path: ""}]', 'n.yaml');
    const child = c.diskimages.find((d) => d.name === 'c');
    assert.equal(child?.pause, true);
    assert.equal(child?.release, '12');
    assert.equal(child?.pythonPath, 'auto');
  });

  it('applies builder rules to the merged image', () => {
    assert.deepEqual(problemsOf('diskimages: [{name: p, abstract: true, elements: [vm]}, {name: c, parent: p, builder: command, command: [make]}]'), [
      'nodepool.yaml: diskimages[1].elements: only used with builder: dib (this diskimage is built by its command)',
    ]);
  });
});

describe('Nodepool 11 keys: top level', () => {
  it('takes webapp.listen_address, and refuses it beside a different listen-address', () => {
    assert.equal(parseConfig('webapp: {listen_address: 0.0.0.0}', 'n.yaml').webapp.listenAddress, '0.0.0.0');
    assert.equal(parseConfig('webapp: {port: 8006}', 'n.yaml').webapp.listenAddress, '127.0.0.1');
    assert.equal(parseConfig('webapp: {listen_address: ::1, listen-address: ::1}', 'n.yaml').webapp.listenAddress, '::1');
    assert.deepEqual(problemsOf('webapp: {listen_address: 0.0.0.0, listen-address: 127.0.0.1}'), [
      'nodepool.yaml: webapp.listen_address: expected the same address as listen-address ("127.0.0.1") or only one of the two, got "0.0.0.0"',
    ]);
  });

  it('refuses a tenant limit without tenant-name or with a non-integer, and keeps the last of two entries with a warning', () => {
    assert.deepEqual(problemsOf('tenant-resource-limits: [{max-servers: 1}, {tenant-name: t, max-ram: lots}]'), [
      'nodepool.yaml: tenant-resource-limits[0].tenant-name: expected a non-empty string, got nothing (required)',
      'nodepool.yaml: tenant-resource-limits[1].max-ram: expected integer >= 0 (a limit), got "lots"',
    ]);
    const c = parseConfig('tenant-resource-limits: [{tenant-name: t, max-servers: 1}, {tenant-name: u}, {tenant-name: t, max-cores: 8}]', 'n.yaml');
    assert.deepEqual(c.tenantResourceLimits, [{ tenantName: 'u', limits: {} }, { tenantName: 't', limits: { cores: 8 } }]);
    assert.deepEqual(c.warnings.map((w) => `${w.path}: ${w.message}`), [
      'tenant-resource-limits[2]: tenant "t" also at tenant-resource-limits[0]: this later entry is used (as in Nodepool)',
    ]);
  });

  it('substitutes only NODEPOOL_ variables, and leaves placeholders in comments alone', () => {
    const c = parseConfig('# %(NODEPOOL_UNSET) in a comment\nimages-dir: "/x/%(NODEPOOL_DIR)"\nbuild-log-dir: "%(HOME)"', 'n.yaml', { env: { NODEPOOL_DIR: 'imgs', HOME: '/home/x' } });
    assert.equal(c.imagesDir, '/x/imgs');
    assert.match(c.buildLogDir, /%\(HOME\)$/, 'only NODEPOOL_* names are read, as in Nodepool');
  });
});

describe('Nodepool 11 keys: the secure file', () => {
  const main = 'diskimages: [{name: base, abstract: true}, {name: img, parent: base}]';

  it('refuses env-vars for an unknown or abstract diskimage, naming the secure file and key path', () => {
    assert.deepEqual(secureProblems(main, 'diskimages: [{name: base, env-vars: {A: b}}, {name: gone, env-vars: {A: b}}]'), [
      'secure.yaml: diskimages[0].name: diskimage "base" is abstract in nodepool.yaml (a parent only, never built): set its env-vars on the diskimages that inherit from it',
      'secure.yaml: diskimages[1].name: diskimage "gone" is not defined in the diskimages of nodepool.yaml',
    ]);
  });

  it('checks its own keys, never printing a secret value, and warns about keys Nodepool does not read from it', () => {
    const lines = secureProblems(main, 'zookeeper-tls: {ca: /ca}\ndiskimages: [{name: img, env-vars: {DIB_PASSWORD: [hunter22]}}]');
    assert.deepEqual(lines, [
      'secure.yaml: zookeeper-tls.cert: expected a string, got nothing (required)',
      'secure.yaml: zookeeper-tls.key: expected a string, got nothing (required)',
      'secure.yaml: diskimages[0].env-vars.DIB_PASSWORD: expected a string or number, got a list',
    ]);
    const c = parseConfig(main, 'nodepool.yaml', { secure: { file: 'secure.yaml', text: 'labels: []\ndiskimages: [{name: img, env-vars: {X: y}}]' } });
    assert.deepEqual(c.warnings, [{ file: 'secure.yaml', path: 'labels', message: 'ignored: a secure file holds only zookeeper-servers, zookeeper-tls, diskimages (as in Nodepool)' }]);
    assert.deepEqual(c.diskimages[0]?.envVars, { X: 'y' });
  });

  it('refuses an empty secure file (a truncated one must not switch the store)', () => {
    assert.match(secureProblems(main, '# nothing\n')[0] ?? '', /^secure\.yaml: the document is empty/);
  });
});
