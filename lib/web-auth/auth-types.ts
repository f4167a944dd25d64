/**
 * The contract of the web write API's authentication (issue 25 §1): roles, the configured
 * authenticators (`webapp.auth`, in the style of Zuul's `[auth]` sections), the identity a
 * verified bearer token gives, and the verifier the web server asks. A token is a JWT checked
 * for signature, `iss`, `aud` and expiry; its role claim maps to one of {@link ROLES}.
 */

/** Roles, weakest first: `read` sees the console and the audit trail, `operator` changes images and nodes, `admin` everything. */
export const ROLES = ['read', 'operator', 'admin'] as const;
export type Role = (typeof ROLES)[number];

/** Whether a token of role `have` may do what needs `need`. */
export function roleAllows(have: Role, need: Role): boolean {
  return ROLES.indexOf(have) >= ROLES.indexOf(need);
}

/** JWS algorithms an authenticator may use. */
export const AUTH_DRIVERS = ['HS256', 'RS256', 'ES256'] as const;
export type AuthDriver = (typeof AUTH_DRIVERS)[number];

/** One entry of `webapp.auth`. */
export interface AuthenticatorConfig {
  /** Unique among the entries; named in the audit trail and by `create-auth-token --authenticator`. */
  name: string;
  driver: AuthDriver;
  /** HS256: the shared secret (never logged, never shown). */
  secret?: string;
  /** RS256/ES256: a PEM file with the public key (path as configured). */
  publicKey?: string;
  /** RS256/ES256: a JWKS file (instead of `public-key`); the token's `kid` picks the key. */
  jwks?: string;
  /** The `iss` a token must carry. */
  issuer: string;
  /** The `aud` a token must carry (one of them when a list). */
  audience: string;
  /** Dotted path of the role claim in the payload (default `nodepool.role`); a string or a list of strings, the strongest known role counts. */
  roleClaim: string;
  /** Claim naming the user (default `sub`). */
  userClaim: string;
  /** Seconds of clock skew allowed on `exp`/`nbf`/`iat` (default 0). */
  skew: number;
  /** Tokens valid longer than this many seconds from `iat` are refused (default: no limit). */
  maxValidityTime?: number;
}

/** Who a verified token says is asking. */
export interface Identity {
  user: string;
  role: Role;
  /** The authenticator that verified the token. */
  authenticator: string;
}

/**
 * What a request's `Authorization` header gives: an identity, or why not. 401: no token, or a
 * token no authenticator verifies (bad signature, wrong issuer or audience, expired, malformed);
 * 403: write API not configured (`webapp.auth` absent). The message never repeats the token.
 */
export type AuthOutcome =
  | { ok: true; identity: Identity }
  | {
    ok: false; status: 401 | 403; message: string;
    /**
     * Who a token names that verified but carries no known role (403), for the audit trail. The
     * `sub` of a token that did not verify is never trusted, so it is never here.
     */
    subject?: { user: string; authenticator: string };
  };

/** What the web server asks (lib/web-auth builds it from `webapp.auth`). */
export interface RequestAuthenticator {
  /** Whether `webapp.auth` configures any authenticator (else every write is 403). */
  readonly enabled: boolean;
  /** Verifies the `Authorization: Bearer <jwt>` header. Never throws for a bad token. */
  authenticate(authorization: string | undefined): Promise<AuthOutcome>;
}
