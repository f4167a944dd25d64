import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { decodeJwt } from 'jose';
import { loadConfig } from '../../../lib/config/load.js';
import { loadAuthenticators } from '../../../lib/web-auth/authenticators.js';
import { runningProcesses } from '../../support/processes.js';
import { startCli } from './cli-env.js';

const SECRET = 'create-auth-token-test-secret-0123456789';
const OTHER_SECRET = 'create-auth-token-other-secret-0123456789';

describe('nodepool create-auth-token', () => {
  let dir: string;
  let file: string;
  let bare: string;

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-auth-token-'));
    await writeFile(path.join(dir, 'sso.pem'), 'not read by create-auth-token\n');
    file = path.join(dir, 'nodepool.yaml');
    await writeFile(file, [
      `state-dir: ${path.join(dir, 'state')}`,
      'labels: []',
      'webapp:',
      '  auth:',
      `    - {name: sso, driver: RS256, public-key: ${path.join(dir, 'sso.pem')}, issuer: "https://sso.example.org", audience: nodepool}`,
      `    - {name: local, driver: HS256, secret: ${SECRET}, issuer: nodepool, audience: nodepool}`,
      `    - {name: other, driver: HS256, secret: ${OTHER_SECRET}, issuer: other, audience: nodepool, role-claim: roles}`,
      '',
    ].join('\n'));
    bare = path.join(dir, 'bare.yaml');
    await writeFile(bare, `state-dir: ${path.join(dir, 'state')}\nlabels: []\n`);
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  /** The HS256 authenticators of the test config, as the server would load them. */
  const verifier = async () => loadAuthenticators(loadConfig(file).webapp.auth.filter((a) => a.driver === 'HS256'));

  it('prints a token of the first HS256 authenticator that verifies and carries the role', async () => {
    const run = await startCli(file, ['create-auth-token', '--user', 'alice', '--role', 'operator', '--expires', '600']).result;
    assert.equal(run.code, 0, run.stderr);
    const token = run.stdout.trim();
    assert.equal(run.stdout, `${token}\n`, 'stdout is the token alone');
    assert.match(run.stderr, /^token for alice \(operator\) from authenticator local, expires \d{4}-/);
    assert.ok(!run.stderr.includes(SECRET) && !run.stdout.includes(SECRET));
    const out = await (await verifier()).authenticate(`Bearer ${token}`);
    assert.deepEqual(out, { ok: true, identity: { user: 'alice', role: 'operator', authenticator: 'local' } });
    const claims = decodeJwt(token);
    assert.equal(claims.exp! - claims.iat!, 600);
  });

  it('signs with the named authenticator at its role claim', async () => {
    const run = await startCli(file, ['create-auth-token', '--user', 'bob', '--role', 'admin', '--expires', '60', '--authenticator', 'other']).result;
    assert.equal(run.code, 0, run.stderr);
    const token = run.stdout.trim();
    assert.equal(decodeJwt(token).roles, 'admin');
    const out = await (await verifier()).authenticate(`Bearer ${token}`);
    assert.deepEqual(out, { ok: true, identity: { user: 'bob', role: 'admin', authenticator: 'other' } });
  });

  it('refuses an unknown or RS256 authenticator, a config without one, and bad flags, non-zero and without a token', async () => {
    const cases: Array<[string, string[], number, RegExp]> = [
      [file, ['--authenticator', 'nope'], 3, /no authenticator "nope" in webapp\.auth \(configured: sso, local, other\)/],
      [file, ['--authenticator', 'sso'], 2, /authenticator sso uses RS256: nodepool holds only its public key and cannot sign/],
      [bare, [], 2, /webapp\.auth configures no authenticator/],
    ];
    for (const [config, extra, code, message] of cases) {
      const run = await startCli(config, ['create-auth-token', '--user', 'alice', '--role', 'read', '--expires', '60', ...extra]).result;
      assert.equal(run.code, code, run.stderr);
      assert.match(run.stderr, message);
      assert.equal(run.stdout, '');
    }
    const badRole = await startCli(file, ['create-auth-token', '--user', 'alice', '--role', 'root', '--expires', '60']).result;
    assert.equal(badRole.code, 2);
    assert.match(badRole.stderr, /role/);
    assert.equal(badRole.stdout, '');
    const badExpiry = await startCli(file, ['create-auth-token', '--user', 'alice', '--role', 'read', '--expires', 'soon']).result;
    assert.equal(badExpiry.code, 2);
    assert.match(badExpiry.stderr, /--expires: expected/);
    assert.equal(badExpiry.stdout, '');
  });
});
