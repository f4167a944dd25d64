import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import type { AuthenticatorConfig } from '../../../lib/web-auth/auth-types.js';
import { loadAuthenticators } from '../../../lib/web-auth/authenticators.js';
import { signToken } from '../../../lib/web-auth/sign-token.js';

const NOW_MS = 1_800_000_000_500;
const now = () => NOW_MS;

function auth(over: Partial<AuthenticatorConfig> = {}): AuthenticatorConfig {
  return { name: 'local', driver: 'HS256', secret: 'sign-token-test-secret-0123456789', issuer: 'nodepool', audience: 'nodepool', roleClaim: 'nodepool.role', userClaim: 'sub', skew: 0, ...over };
}

describe('signToken', () => {
  it('sets iss, aud, sub, iat, exp and the role at the role claim, and the token verifies', async () => {
    const t = await signToken(auth(), { user: 'alice', role: 'admin', expiresInS: 600 }, now);
    assert.deepEqual(decodeProtectedHeader(t), { alg: 'HS256', typ: 'JWT' });
    assert.deepEqual(decodeJwt(t), { iss: 'nodepool', aud: 'nodepool', sub: 'alice', iat: 1_800_000_000, exp: 1_800_000_600, nodepool: { role: 'admin' } });
    const out = await (await loadAuthenticators([auth()], { now })).authenticate(`Bearer ${t}`);
    assert.deepEqual(out, { ok: true, identity: { user: 'alice', role: 'admin', authenticator: 'local' } });
  });

  it('follows configured user and role claims', async () => {
    const a = auth({ userClaim: 'preferred_username', roleClaim: 'realm_access.roles' });
    const t = await signToken(a, { user: 'bob', role: 'read', expiresInS: 60 }, now);
    const payload = decodeJwt(t);
    assert.equal(payload.preferred_username, 'bob');
    assert.deepEqual(payload.realm_access, { roles: 'read' });
    const out = await (await loadAuthenticators([a], { now })).authenticate(`Bearer ${t}`);
    assert.deepEqual(out, { ok: true, identity: { user: 'bob', role: 'read', authenticator: 'local' } });
  });

  it('refuses RS256/ES256 authenticators, bad roles and lifetimes, and lifetimes over max-validity-time', async () => {
    await assert.rejects(signToken(auth({ driver: 'RS256', secret: undefined, publicKey: '/k.pem' }), { user: 'a', role: 'read', expiresInS: 60 }), /uses RS256: nodepool holds only its public key/);
    await assert.rejects(signToken(auth({ driver: 'ES256', secret: undefined, jwks: '/k.jwks' }), { user: 'a', role: 'read', expiresInS: 60 }), /uses ES256/);
    await assert.rejects(signToken(auth(), { user: 'a', role: 'root' as never, expiresInS: 60 }), /unknown role "root"/);
    await assert.rejects(signToken(auth(), { user: 'a', role: 'read', expiresInS: 0 }), /positive whole number/);
    await assert.rejects(signToken(auth({ maxValidityTime: 100 }), { user: 'a', role: 'read', expiresInS: 101 }), /max-validity-time/);
  });
});
