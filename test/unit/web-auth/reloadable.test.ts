import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { SignJWT } from 'jose';
import type { AuthenticatorConfig } from '../../../lib/web-auth/auth-types.js';
import { loadAuthenticators } from '../../../lib/web-auth/authenticators.js';
import { ReloadableAuthenticator } from '../../../lib/web-auth/reloadable.js';
import { ConfigError } from '../../../lib/errors.js';

const NOW_S = 1_800_000_000;
const now = () => NOW_S * 1000;
const OLD = 'the-secret-before-the-reload-0123456789';
const NEW = 'the-secret-after-the-reload-9876543210';

function hs256(secret: string): AuthenticatorConfig {
  return { name: 'local', driver: 'HS256', secret, issuer: 'nodepool', audience: 'nodepool', roleClaim: 'nodepool.role', userClaim: 'sub', skew: 0 };
}

function bearer(secret: string): Promise<string> {
  return new SignJWT({ iss: 'nodepool', aud: 'nodepool', sub: 'alice', iat: NOW_S - 10, exp: NOW_S + 3600, nodepool: { role: 'operator' } })
    .setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode(secret)).then((t) => `Bearer ${t}`);
}

describe('ReloadableAuthenticator', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'reloadable-auth-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('answers with the authenticators of the last reload', async () => {
    const a = new ReloadableAuthenticator(await loadAuthenticators([hs256(OLD)], { now }), { now });
    assert.equal((await a.authenticate(await bearer(OLD))).ok, true);
    await a.reload([hs256(NEW)]);
    assert.equal((await a.authenticate(await bearer(OLD))).ok, false);
    assert.equal((await a.authenticate(await bearer(NEW))).ok, true);
    await a.reload([]);
    assert.equal(a.enabled, false);
    const out = await a.authenticate(await bearer(NEW));
    assert.equal(out.ok ? 0 : out.status, 403);
  });

  it('keeps the authenticators before a reload whose key file is unusable, and rejects with a ConfigError naming it', async () => {
    const a = new ReloadableAuthenticator(await loadAuthenticators([hs256(OLD)], { now }), { now });
    const pem = path.join(dir, 'sso.pem');
    await writeFile(pem, 'not a PEM key\n');
    const bad: AuthenticatorConfig = { ...hs256(NEW), name: 'sso', driver: 'RS256', secret: undefined, publicKey: pem };
    const err = await a.reload([hs256(NEW), bad]).then(() => undefined, (e: unknown) => e);
    assert.ok(err instanceof ConfigError, String(err));
    assert.match(err.message, /webapp\.auth\[1\]\.public-key/);
    assert.ok(!err.message.includes(NEW));
    assert.equal(a.enabled, true);
    assert.equal((await a.authenticate(await bearer(OLD))).ok, true);
    assert.equal((await a.authenticate(await bearer(NEW))).ok, false);
  });

  it('runs reloads one at a time, in call order: the last one called wins', async () => {
    const a = new ReloadableAuthenticator(await loadAuthenticators([], { now }), { now });
    await Promise.all([a.reload([hs256(OLD)]), a.reload([hs256(NEW)])]);
    assert.equal((await a.authenticate(await bearer(NEW))).ok, true);
    assert.equal((await a.authenticate(await bearer(OLD))).ok, false);
  });
});
