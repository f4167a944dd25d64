import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { configSecrets, parseConfig } from '../../../lib/config/load.js';
import { configValidate } from '../../../cli/commands/config-validate.js';
import { problemsOf } from '../../support/config-problems.js';

const SECRET = 'webapp-schema-test-secret-0123456789abcdef';
const doc = (webapp: string) => `labels: []\nwebapp:\n${webapp}\n`;

describe('webapp: port and listen-address as before', () => {
  it('defaults: 8005 on 127.0.0.1, no authenticators, no TLS', () => {
    const c = parseConfig('labels: []\n', 'nodepool.yaml');
    assert.deepEqual(c.webapp, { port: 8005, listenAddress: '127.0.0.1', auth: [], tls: undefined });
  });

  it('takes listen_address (Nodepool 11) and refuses it when it differs from listen-address', () => {
    assert.equal(parseConfig(doc('  listen_address: 0.0.0.0'), 'nodepool.yaml').webapp.listenAddress, '0.0.0.0');
    assert.deepEqual(problemsOf(doc('  listen-address: 127.0.0.1\n  listen_address: 0.0.0.0')),
      ['nodepool.yaml: webapp.listen_address: expected the same address as listen-address ("127.0.0.1") or only one of the two, got "0.0.0.0"']);
  });
});

describe('webapp.auth and webapp.tls', () => {
  it('compiles authenticators with their defaults, in order, and tls', () => {
    const c = parseConfig(doc([
      '  tls: {cert: /etc/nodepool/web.crt, key: /etc/nodepool/web.key}',
      '  auth:',
      `    - {name: local, driver: HS256, secret: ${SECRET}, issuer: nodepool, audience: nodepool}`,
      '    - {name: sso, driver: RS256, public-key: /etc/nodepool/sso.pem, issuer: "https://sso.example.org", audience: nodepool,',
      '       role-claim: realm.roles, user-claim: email, skew: 30, max-validity-time: 3600}',
      '    - {name: ec, driver: ES256, jwks: /etc/nodepool/ec.jwks, issuer: ec, audience: nodepool}',
    ].join('\n')), 'nodepool.yaml');
    assert.deepEqual(c.webapp.tls, { cert: '/etc/nodepool/web.crt', key: '/etc/nodepool/web.key' });
    assert.deepEqual(c.webapp.auth, [
      { name: 'local', driver: 'HS256', secret: SECRET, issuer: 'nodepool', audience: 'nodepool', roleClaim: 'nodepool.role', userClaim: 'sub', skew: 0 },
      { name: 'sso', driver: 'RS256', publicKey: '/etc/nodepool/sso.pem', issuer: 'https://sso.example.org', audience: 'nodepool', roleClaim: 'realm.roles', userClaim: 'email', skew: 30, maxValidityTime: 3600 },
      { name: 'ec', driver: 'ES256', jwks: '/etc/nodepool/ec.jwks', issuer: 'ec', audience: 'nodepool', roleClaim: 'nodepool.role', userClaim: 'sub', skew: 0 },
    ]);
  });

  it('names the key path of each problem: driver, HS256 key material, RS256 key files, duplicates, tls', () => {
    const lines = problemsOf(doc([
      '  tls: {cert: /c.pem}',
      '  auth:',
      '    - {name: a, driver: HS512, issuer: i, audience: a}',
      '    - {name: b, driver: HS256, issuer: i, audience: a, public-key: /k.pem}',
      `    - {name: c, driver: RS256, issuer: i, audience: a, secret: ${SECRET}}`,
      '    - {name: d, driver: ES256, issuer: i, audience: a, public-key: /k.pem, jwks: /k.jwks}',
      `    - {name: e, driver: HS256, secret: ${SECRET}, issuer: i, audience: a, skew: -1}`,
      `    - {name: f, driver: HS256, secret: ${SECRET}, issuer: i, audience: a}`,
      `    - {name: f, driver: HS256, secret: ${SECRET}, audience: a, role: admin}`,
    ].join('\n')));
    const want = [
      /^nodepool\.yaml: webapp\.auth\[0\]\.driver: expected one of HS256, RS256, ES256, got "HS512"$/,
      /^nodepool\.yaml: webapp\.auth\[1\]\.secret: expected a secret/,
      /^nodepool\.yaml: webapp\.auth\[1\]\.public-key: not used by HS256/,
      /^nodepool\.yaml: webapp\.auth\[2\]\.secret: not used by RS256/,
      /^nodepool\.yaml: webapp\.auth\[2\]: expected public-key \(a PEM file\) or jwks \(a JWKS file\) for RS256, got neither$/,
      /^nodepool\.yaml: webapp\.auth\[3\]\.jwks: expected only one of public-key and jwks for ES256, got both$/,
      /^nodepool\.yaml: webapp\.auth\[4\]\.skew: expected/,
      /^nodepool\.yaml: webapp\.auth\[6\]\.issuer: expected a string, got nothing \(required\)$/,
      /^nodepool\.yaml: webapp\.auth\[6\]\.role: unknown key/,
      /^nodepool\.yaml: webapp\.tls\.key: expected a string, got nothing \(required\)$/,
    ];
    for (const re of want) assert.ok(lines.some((l) => re.test(l)), `no line matches ${re}:\n${lines.join('\n')}`);
    for (const l of lines) assert.ok(!l.includes(SECRET), `the secret is in: ${l}`);
  });

  it('refuses duplicate names and a short secret without showing it', () => {
    const lines = problemsOf(doc([
      '  auth:',
      `    - {name: f, driver: HS256, secret: ${SECRET}, issuer: i, audience: a}`,
      `    - {name: f, driver: HS256, secret: ${SECRET}, issuer: j, audience: a}`,
      '    - {name: g, driver: HS256, secret: short-secret-value, issuer: i, audience: a}',
      '    - {name: h, driver: HS256, secret: [not, a, string], issuer: i, audience: a}',
    ].join('\n')));
    assert.deepEqual(lines, [
      'nodepool.yaml: webapp.auth[1]: duplicate authenticator "f" (also at webapp.auth[0])',
      'nodepool.yaml: webapp.auth[2].secret: expected at least 32 characters (RFC 7518 §3.2), got a shorter secret',
      'nodepool.yaml: webapp.auth[3].secret: expected a string, got a list',
    ]);
  });

  it('takes the secret from %(NODEPOOL_…_SECRET) as a config secret', () => {
    const c = parseConfig(doc('  auth: [{name: local, driver: HS256, secret: "%(NODEPOOL_AUTH_SECRET)", issuer: i, audience: a}]'), 'nodepool.yaml', { env: { NODEPOOL_AUTH_SECRET: SECRET } });
    assert.equal(c.webapp.auth[0]!.secret, SECRET);
    assert.ok(configSecrets(c).includes(SECRET));
  });

  it('config-validate neither prints the secret when valid nor when another key is wrong', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-webapp-'));
    try {
      const file = path.join(dir, 'nodepool.yaml');
      await writeFile(file, doc(`  auth: [{name: local, driver: HS256, secret: ${SECRET}, issuer: i, audience: a}]`));
      const ok = await configValidate(file);
      assert.equal(ok.exitCode, 0, ok.stderr);
      assert.ok(!`${ok.stdout}${ok.stderr}`.includes(SECRET));
      await writeFile(file, doc(`  auth: [{name: local, driver: HS256, secret: ${SECRET}, issuer: i, audience: a, skew: soon}]`));
      const bad = await configValidate(file);
      assert.equal(bad.exitCode, 2);
      assert.match(bad.stderr, /webapp\.auth\[0\]\.skew: expected/);
      assert.ok(!`${bad.stdout}${bad.stderr}`.includes(SECRET));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('webapp key files', () => {
  it('reads key and certificate paths relative to the config file; config-validate names a missing key file', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-webapp-'));
    try {
      const file = path.join(dir, 'nodepool.yaml');
      await writeFile(file, doc([
        '  tls: {cert: tls/web.crt, key: /etc/nodepool/web.key}',
        '  auth: [{name: sso, driver: RS256, public-key: keys/sso.pem, issuer: i, audience: a}]',
      ].join('\n')));
      const c = parseConfig(doc([
        '  tls: {cert: tls/web.crt, key: /etc/nodepool/web.key}',
        '  auth: [{name: sso, driver: RS256, public-key: keys/sso.pem, issuer: i, audience: a}]',
      ].join('\n')), file);
      assert.equal(c.webapp.auth[0]?.publicKey, path.join(dir, 'keys/sso.pem'));
      assert.deepEqual(c.webapp.tls, { cert: path.join(dir, 'tls/web.crt'), key: '/etc/nodepool/web.key' });
      const missing = await configValidate(file);
      assert.equal(missing.exitCode, 2, missing.stdout);
      assert.match(missing.stderr, /webapp\.auth\[0\]\.public-key/);
      assert.ok(missing.stderr.includes(path.join(dir, 'keys/sso.pem')), missing.stderr);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
