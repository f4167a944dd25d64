/**
 * Signs a token for a local HS256 authenticator (`nodepool create-auth-token`, `make run`):
 * `iss`, `aud`, `iat`, `exp`, the user at the authenticator's user claim and the role at its
 * dotted role claim. RS256/ES256 authenticators only hold public keys, so they cannot sign.
 */
import { SignJWT } from 'jose';
import { ROLES, type AuthenticatorConfig, type Role } from './auth-types.js';
import { withClaimAt } from './claims.js';

/** What the token says. */
export interface TokenClaims {
  user: string;
  role: Role;
  /** Seconds from now until the token expires (a positive integer). */
  expiresInS: number;
}

/**
 * A JWT signed with `auth`'s HS256 secret. Throws for an RS256/ES256 authenticator (no private
 * key), an HS256 one without a secret, an unknown role or a non-positive lifetime.
 * `now` is the clock in ms since the epoch (default `Date.now`).
 */
export async function signToken(auth: AuthenticatorConfig, claims: TokenClaims, now: () => number = Date.now): Promise<string> {
  if (auth.driver !== 'HS256') {
    throw new Error(`authenticator ${auth.name} uses ${auth.driver}: nodepool holds only its public key and cannot sign tokens (use an HS256 authenticator)`);
  }
  if (!auth.secret) throw new Error(`authenticator ${auth.name} (HS256) has no secret`);
  if (!(ROLES as readonly string[]).includes(claims.role)) throw new Error(`unknown role ${JSON.stringify(claims.role)} (expected one of ${ROLES.join(', ')})`);
  if (!Number.isInteger(claims.expiresInS) || claims.expiresInS <= 0) throw new Error(`expiry must be a positive whole number of seconds, got ${claims.expiresInS}`);
  if (claims.user === '') throw new Error('the user must not be empty');
  if (auth.maxValidityTime !== undefined && claims.expiresInS > auth.maxValidityTime) {
    throw new Error(`authenticator ${auth.name} refuses tokens valid longer than ${auth.maxValidityTime} s (max-validity-time); asked for ${claims.expiresInS} s`);
  }
  const iat = Math.floor(now() / 1000);
  let payload: Record<string, unknown> = {};
  payload = withClaimAt(payload, auth.userClaim, claims.user);
  payload = withClaimAt(payload, auth.roleClaim, claims.role);
  return new SignJWT(payload)
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(auth.issuer)
    .setAudience(auth.audience)
    .setIssuedAt(iat)
    .setExpirationTime(iat + claims.expiresInS)
    .sign(new TextEncoder().encode(auth.secret));
}
