import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { SignJWT, UnsecuredJWT, type JWTPayload } from 'jose';
import type { AuthenticatorConfig, AuthOutcome } from '../../../lib/web-auth/auth-types.js';
import { AUTH_NOT_CONFIGURED, loadAuthenticators } from '../../../lib/web-auth/authenticators.js';
import { ConfigError } from '../../../lib/errors.js';

const SECRET = 'a-test-secret-of-some-length-0123456789';
const NOW_S = 1_800_000_000;
const now = () => NOW_S * 1000;

function auth(over: Partial<AuthenticatorConfig> = {}): AuthenticatorConfig {
  return { name: 'local', driver: 'HS256', secret: SECRET, issuer: 'nodepool', audience: 'nodepool', roleClaim: 'nodepool.role', userClaim: 'sub', skew: 0, ...over };
}

interface Claims { iss?: string; aud?: string | string[]; sub?: string; iat?: number; exp?: number; nbf?: number; [k: string]: unknown }

/** A token with the given claims (defaults: iss/aud nodepool, sub alice, operator, valid an hour) signed with `key` as `alg`. */
async function token(key: Uint8Array | KeyObject, alg: string, claims: Claims = {}, kid?: string): Promise<string> {
  const payload: JWTPayload = { iss: 'nodepool', aud: 'nodepool', sub: 'alice', iat: NOW_S - 10, exp: NOW_S + 3600, nodepool: { role: 'operator' }, ...claims };
  for (const k of Object.keys(payload)) if (payload[k] === undefined) delete payload[k];
  return new SignJWT(payload).setProtectedHeader({ alg, ...(kid ? { kid } : {}) }).sign(key);
}
const hs = (claims?: Claims) => token(new TextEncoder().encode(SECRET), 'HS256', claims);

function refused(out: AuthOutcome, status: 401 | 403, pattern: RegExp): void {
  assert.equal(out.ok, false, 'expected a refusal');
  if (out.ok) return;
  assert.equal(out.status, status, out.message);
  assert.match(out.message, pattern);
}

describe('loadAuthenticators: HS256', () => {
  it('accepts a valid token and gives its user, role and authenticator', async () => {
    const a = await loadAuthenticators([auth()], { now });
    assert.equal(a.enabled, true);
    assert.deepEqual(await a.authenticate(`Bearer ${await hs()}`), { ok: true, identity: { user: 'alice', role: 'operator', authenticator: 'local' } });
  });

  it('refuses with 403 for everything when no authenticator is configured', async () => {
    const a = await loadAuthenticators([], { now });
    assert.equal(a.enabled, false);
    refused(await a.authenticate(`Bearer ${await hs()}`), 403, new RegExp(AUTH_NOT_CONFIGURED));
    refused(await a.authenticate(undefined), 403, /webapp\.auth/);
  });

  it('refuses a missing, non-bearer or malformed header with 401', async () => {
    const a = await loadAuthenticators([auth()], { now });
    refused(await a.authenticate(undefined), 401, /no bearer token/);
    refused(await a.authenticate('Basic dXNlcjpwYXNz'), 401, /not a bearer token/);
    refused(await a.authenticate('Bearer not-a-jwt'), 401, /malformed/);
  });

  it('refuses an expired token, naming when it expired, and accepts it within the skew', async () => {
    const t = await hs({ exp: NOW_S - 30 });
    refused(await (await loadAuthenticators([auth()], { now })).authenticate(`Bearer ${t}`), 401, new RegExp(`token expired at ${new Date((NOW_S - 30) * 1000).toISOString()}`));
    const lenient = await loadAuthenticators([auth({ skew: 60 })], { now });
    assert.equal((await lenient.authenticate(`Bearer ${t}`)).ok, true);
  });

  it('refuses a not-yet-valid token (nbf) unless within the skew', async () => {
    const t = await hs({ nbf: NOW_S + 30 });
    refused(await (await loadAuthenticators([auth()], { now })).authenticate(`Bearer ${t}`), 401, /not valid before/);
    assert.equal((await (await loadAuthenticators([auth({ skew: 60 })], { now })).authenticate(`Bearer ${t}`)).ok, true);
  });

  it('requires exp', async () => {
    const a = await loadAuthenticators([auth()], { now });
    refused(await a.authenticate(`Bearer ${await hs({ exp: undefined })}`), 401, /lacks the required exp claim/);
  });

  it('refuses a wrong issuer and a wrong audience', async () => {
    const a = await loadAuthenticators([auth()], { now });
    refused(await a.authenticate(`Bearer ${await hs({ iss: 'elsewhere' })}`), 401, /issuer "elsewhere" not accepted/);
    refused(await a.authenticate(`Bearer ${await hs({ aud: 'other' })}`), 401, /audience not accepted/);
    assert.equal((await a.authenticate(`Bearer ${await hs({ aud: ['other', 'nodepool'] })}`)).ok, true);
  });

  it('refuses a bad signature without repeating the token', async () => {
    const t = await token(new TextEncoder().encode('another-secret-entirely-0123456789'), 'HS256');
    const out = await (await loadAuthenticators([auth()], { now })).authenticate(`Bearer ${t}`);
    refused(out, 401, /signature does not verify/);
    if (!out.ok) for (const part of t.split('.')) assert.ok(!out.message.includes(part));
  });

  it('refuses alg none', async () => {
    const t = new UnsecuredJWT({ sub: 'alice', nodepool: { role: 'admin' } }).setIssuer('nodepool').setAudience('nodepool').setIssuedAt(NOW_S).setExpirationTime(NOW_S + 60).encode();
    refused(await (await loadAuthenticators([auth()], { now })).authenticate(`Bearer ${t}`), 401, /algorithm "none" not accepted/);
  });

  it('takes the strongest known role of a list, and refuses with 403 a token without a known role', async () => {
    const a = await loadAuthenticators([auth()], { now });
    const list = await a.authenticate(`Bearer ${await hs({ nodepool: { role: ['read', 'wizard', 'admin', 'operator'] } })}`);
    assert.equal(list.ok && list.identity.role, 'admin');
    refused(await a.authenticate(`Bearer ${await hs({ nodepool: { role: ['wizard'] } })}`), 403, /no nodepool role/);
    refused(await a.authenticate(`Bearer ${await hs({ nodepool: undefined })}`), 403, /no nodepool role: claim nodepool\.role/);
  });

  it('reads the role and the user at configured claims', async () => {
    const a = await loadAuthenticators([auth({ roleClaim: 'realm.roles', userClaim: 'preferred_username' })], { now });
    const out = await a.authenticate(`Bearer ${await hs({ realm: { roles: ['read'] }, preferred_username: 'bob' })}`);
    assert.deepEqual(out, { ok: true, identity: { user: 'bob', role: 'read', authenticator: 'local' } });
    refused(await a.authenticate(`Bearer ${await hs({ realm: { roles: ['read'] } })}`), 401, /names no user \(claim preferred_username\)/);
  });

  it('refuses tokens valid longer than max-validity-time from iat, or without iat', async () => {
    const a = await loadAuthenticators([auth({ maxValidityTime: 600 })], { now });
    assert.equal((await a.authenticate(`Bearer ${await hs({ iat: NOW_S - 10, exp: NOW_S + 500 })}`)).ok, true);
    refused(await a.authenticate(`Bearer ${await hs({ iat: NOW_S - 10, exp: NOW_S + 3600 })}`), 401, /longer than max-validity-time 600 s/);
    refused(await a.authenticate(`Bearer ${await hs({ iat: NOW_S - 700, exp: NOW_S + 10 })}`), 401, /max-validity-time/);
    refused(await a.authenticate(`Bearer ${await hs({ iat: undefined })}`), 401, /lacks the required iat claim/);
  });

  it('tries the authenticators whose issuer matches, in order', async () => {
    const other = auth({ name: 'other', secret: 'the-other-secret-0123456789-abcdef' });
    const a = await loadAuthenticators([other, auth()], { now });
    const out = await a.authenticate(`Bearer ${await hs()}`);
    assert.equal(out.ok && out.identity.authenticator, 'local');
    const bad = await a.authenticate(`Bearer ${await token(new TextEncoder().encode('nobody-knows-this-0123456789-abcdef'), 'HS256')}`);
    refused(bad, 401, /other: signature does not verify.*; local: signature does not verify/);
  });
});

describe('loadAuthenticators: RS256 and ES256', () => {
  let dir: string;
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const rsaPem = rsa.publicKey.export({ type: 'spki', format: 'pem' }) as string;
  const ecPem = ec.publicKey.export({ type: 'spki', format: 'pem' }) as string;
  const sso = (over: Partial<AuthenticatorConfig>) => auth({ name: 'sso', driver: 'RS256', secret: undefined, issuer: 'https://sso.example.org', ...over });
  const ssoClaims = { iss: 'https://sso.example.org' };

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-web-auth-'));
    await writeFile(path.join(dir, 'rsa.pem'), rsaPem);
    await writeFile(path.join(dir, 'ec.pem'), ecPem);
    const other = generateKeyPairSync('rsa', { modulusLength: 2048 });
    await writeFile(path.join(dir, 'keys.jwks'), JSON.stringify({ keys: [
      { ...other.publicKey.export({ format: 'jwk' }), kid: 'old', alg: 'RS256', use: 'sig' },
      { ...rsa.publicKey.export({ format: 'jwk' }), kid: 'current', alg: 'RS256', use: 'sig' },
    ] }));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('verifies RS256 with a PEM public key', async () => {
    const a = await loadAuthenticators([sso({ publicKey: path.join(dir, 'rsa.pem') })], { now });
    const out = await a.authenticate(`Bearer ${await token(rsa.privateKey, 'RS256', ssoClaims)}`);
    assert.deepEqual(out, { ok: true, identity: { user: 'alice', role: 'operator', authenticator: 'sso' } });
    const wrongKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    refused(await a.authenticate(`Bearer ${await token(wrongKey, 'RS256', ssoClaims)}`), 401, /signature does not verify/);
  });

  it('verifies ES256 with a PEM public key and refuses RS256 tokens there', async () => {
    const a = await loadAuthenticators([sso({ driver: 'ES256', publicKey: path.join(dir, 'ec.pem') })], { now });
    assert.equal((await a.authenticate(`Bearer ${await token(ec.privateKey, 'ES256', ssoClaims)}`)).ok, true);
    refused(await a.authenticate(`Bearer ${await token(rsa.privateKey, 'RS256', ssoClaims)}`), 401, /algorithm "RS256" not accepted \(authenticator sso takes ES256\)/);
  });

  it('refuses an HS256 token signed with the RS256 public key (algorithm confusion)', async () => {
    const a = await loadAuthenticators([sso({ publicKey: path.join(dir, 'rsa.pem') })], { now });
    const forged = await token(new TextEncoder().encode(rsaPem), 'HS256', { ...ssoClaims, nodepool: { role: 'admin' } });
    refused(await a.authenticate(`Bearer ${forged}`), 401, /algorithm "HS256" not accepted/);
  });

  it('verifies RS256 with a JWKS file, the kid picking the key', async () => {
    const a = await loadAuthenticators([sso({ jwks: path.join(dir, 'keys.jwks') })], { now });
    assert.equal((await a.authenticate(`Bearer ${await token(rsa.privateKey, 'RS256', ssoClaims, 'current')}`)).ok, true);
    refused(await a.authenticate(`Bearer ${await token(rsa.privateKey, 'RS256', ssoClaims, 'old')}`), 401, /signature does not verify/);
    refused(await a.authenticate(`Bearer ${await token(rsa.privateKey, 'RS256', ssoClaims, 'gone')}`), 401, /no key of authenticator sso's JWKS matches/);
  });

  it('answers with a ConfigError naming a missing or unusable key file', async () => {
    const missing = path.join(dir, 'missing.pem');
    await assert.rejects(loadAuthenticators([sso({ publicKey: missing })]), (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.equal(err.file, missing);
      assert.equal(err.problems[0]!.path, 'webapp.auth[0].public-key');
      assert.equal(err.message, `${missing}: webapp.auth[0].public-key: cannot read the file (ENOENT)`);
      return true;
    });
    await assert.rejects(loadAuthenticators([auth(), sso({ driver: 'ES256', publicKey: path.join(dir, 'rsa.pem') })]), (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.equal(err.problems[0]!.path, 'webapp.auth[1].public-key');
      assert.match(err.message, /not a PEM public key or certificate for ES256/);
      return true;
    });
    await assert.rejects(loadAuthenticators([sso({ driver: 'ES256', jwks: path.join(dir, 'keys.jwks') })]), /webapp\.auth\[0\]\.jwks: no EC key for ES256/);
  });
});
