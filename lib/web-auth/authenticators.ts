/**
 * Builds the web server's {@link RequestAuthenticator} from `webapp.auth`: reads each
 * authenticator's key once (HS256 secret, PEM public key or JWKS file) and verifies
 * `Authorization: Bearer <jwt>` headers with jose: the authenticator's own algorithm only (no
 * `alg: none`, no HS256-with-a-public-key confusion), `iss`, `aud`, `exp` (required), `nbf`,
 * the allowed skew and `max-validity-time`. A verified token's role claim gives the role.
 * Messages say why a token is refused and never repeat the token.
 */
import { readFile } from 'node:fs/promises';
import {
  createLocalJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  errors,
  importSPKI,
  importX509,
  jwtVerify,
  type JSONWebKeySet,
  type JWTPayload,
  type JWTVerifyGetKey,
  type CryptoKey,
} from 'jose';
import { ConfigError } from '../errors.js';
import type { AuthenticatorConfig, AuthOutcome, RequestAuthenticator } from './auth-types.js';
import { claimAt, strongestRole } from './claims.js';

/** Options of {@link loadAuthenticators}. */
export interface LoadAuthenticatorsOptions {
  /** The clock in ms since the epoch (default `Date.now`); tests pass their own. */
  now?: () => number;
}

/** The message of every refusal when `webapp.auth` configures nothing. */
export const AUTH_NOT_CONFIGURED = 'the write API is not configured: webapp.auth';

/** Longer `Authorization` values are refused unread. */
const MAX_TOKEN_CHARS = 16 * 1024;

type VerifyKey = Uint8Array | CryptoKey | JWTVerifyGetKey;

interface Loaded {
  config: AuthenticatorConfig;
  key: VerifyKey;
}

/**
 * Reads the keys of `configs` (each file once) and returns the verifier the web server asks.
 * An unreadable or unusable key file is a {@link ConfigError} naming the file and the key path
 * (`webapp.auth[i].public-key`). With no authenticators, `enabled` is false and every request
 * is refused with 403.
 */
export async function loadAuthenticators(configs: readonly AuthenticatorConfig[], opts: LoadAuthenticatorsOptions = {}): Promise<RequestAuthenticator> {
  const now = opts.now ?? Date.now;
  const loaded: Loaded[] = [];
  for (const [i, config] of configs.entries()) loaded.push({ config, key: await loadKey(config, `webapp.auth[${i}]`) });
  const enabled = loaded.length > 0;
  return {
    enabled,
    async authenticate(authorization) {
      if (!enabled) return refuse(403, AUTH_NOT_CONFIGURED);
      return authenticate(loaded, authorization, new Date(now()));
    },
  };
}

async function loadKey(config: AuthenticatorConfig, path: string): Promise<VerifyKey> {
  if (config.driver === 'HS256') {
    if (!config.secret) throw new ConfigError('webapp.auth', [{ path: `${path}.secret`, message: `authenticator ${config.name} (HS256) needs a secret` }]);
    return new TextEncoder().encode(config.secret);
  }
  if (config.publicKey !== undefined) {
    const text = await readKeyFile(config.publicKey, `${path}.public-key`);
    try {
      return text.includes('-----BEGIN CERTIFICATE-----') ? await importX509(text, config.driver) : await importSPKI(text, config.driver);
    } catch (cause) {
      throw new ConfigError(config.publicKey, [{ path: `${path}.public-key`, message: `not a PEM public key or certificate for ${config.driver} (${errorText(cause)})` }], { cause });
    }
  }
  const jwksFile = config.jwks;
  if (jwksFile !== undefined) {
    const text = await readKeyFile(jwksFile, `${path}.jwks`);
    const problem = (message: string, cause?: unknown) => new ConfigError(jwksFile, [{ path: `${path}.jwks`, message }], { cause });
    let jwks: JSONWebKeySet;
    try {
      jwks = JSON.parse(text) as JSONWebKeySet;
    } catch (cause) {
      throw problem('not JSON', cause);
    }
    if (jwks === null || typeof jwks !== 'object' || !Array.isArray(jwks.keys)) throw problem('not a JWKS (expected {"keys": [...]})');
    const kty = config.driver === 'RS256' ? 'RSA' : 'EC';
    if (!jwks.keys.some((k) => k !== null && typeof k === 'object' && k.kty === kty)) throw problem(`no ${kty} key for ${config.driver}`);
    try {
      return createLocalJWKSet(jwks);
    } catch (cause) {
      throw problem(`not a usable JWKS (${errorText(cause)})`, cause);
    }
  }
  throw new ConfigError('webapp.auth', [{ path, message: `authenticator ${config.name} (${config.driver}) needs public-key or jwks` }]);
}

async function readKeyFile(file: string, path: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (cause) {
    throw new ConfigError(file, [{ path, message: `cannot read the file (${(cause as NodeJS.ErrnoException).code ?? errorText(cause)})` }], { cause });
  }
}

async function authenticate(loaded: readonly Loaded[], authorization: string | undefined, currentDate: Date): Promise<AuthOutcome> {
  if (authorization === undefined || authorization.trim() === '') return refuse(401, 'no bearer token: send Authorization: Bearer <token>');
  if (authorization.length > MAX_TOKEN_CHARS) return refuse(401, `the Authorization header is longer than ${MAX_TOKEN_CHARS} characters`);
  const token = /^Bearer +([A-Za-z0-9_.=-]+) *$/i.exec(authorization)?.[1];
  if (token === undefined) return refuse(401, 'the Authorization header is not a bearer token (Authorization: Bearer <token>)');
  let unverified: JWTPayload;
  try {
    decodeProtectedHeader(token);
    unverified = decodeJwt(token);
  } catch {
    return refuse(401, 'malformed token (not a signed JWT)');
  }
  const candidates = loaded.filter((a) => a.config.issuer === unverified.iss);
  if (candidates.length === 0) {
    return refuse(401, unverified.iss === undefined ? 'the token names no issuer (iss)' : `issuer ${shown(unverified.iss)} not accepted`);
  }
  const reasons: string[] = [];
  for (const auth of candidates) {
    const outcome = await verifyWith(auth, token, currentDate);
    if (outcome.ok || outcome.status === 403) return outcome;
    reasons.push(candidates.length > 1 ? `${auth.config.name}: ${outcome.message}` : outcome.message);
  }
  return refuse(401, reasons.join('; '));
}

async function verifyWith({ config, key }: Loaded, token: string, currentDate: Date): Promise<AuthOutcome> {
  let payload: JWTPayload;
  try {
    const options = {
      algorithms: [config.driver],
      issuer: config.issuer,
      audience: config.audience,
      requiredClaims: ['exp'],
      clockTolerance: config.skew,
      currentDate,
      ...(config.maxValidityTime !== undefined ? { maxTokenAge: config.maxValidityTime } : {}),
    };
    const verified = typeof key === 'function' ? await jwtVerify(token, key, options) : await jwtVerify(token, key, options);
    payload = verified.payload;
  } catch (err) {
    return refuse(401, refusalReason(err, config, token));
  }
  if (config.maxValidityTime !== undefined) {
    // jwtVerify required exp, and iat through maxTokenAge; a token without them is refused all the same.
    const { exp, iat } = payload;
    if (exp === undefined || iat === undefined) return refuse(401, 'the token has no exp or no iat, which max-validity-time needs');
    if (exp - iat > config.maxValidityTime) {
      return refuse(401, `token valid for ${exp - iat} s from its iat, longer than max-validity-time ${config.maxValidityTime} s`);
    }
  }
  const user = claimAt(payload, config.userClaim);
  if (typeof user !== 'string' || user === '') return refuse(401, `the token names no user (claim ${config.userClaim})`);
  const role = strongestRole(claimAt(payload, config.roleClaim));
  if (role === undefined) {
    return { ok: false, status: 403, message: `no nodepool role: claim ${config.roleClaim} names none of read, operator, admin`, subject: { user, authenticator: config.name } };
  }
  return { ok: true, identity: { user, role, authenticator: config.name } };
}

/** Why jose refused a token, in words that name claims and times but never the token. */
function refusalReason(err: unknown, config: AuthenticatorConfig, token: string): string {
  if (err instanceof errors.JWTExpired) {
    if (err.claim === 'iat') return `token issued at ${isoOf(err.payload.iat)} is older than max-validity-time ${config.maxValidityTime} s`;
    return `token expired at ${isoOf(err.payload.exp)}`;
  }
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.reason === 'missing') return `the token lacks the required ${err.claim} claim`;
    switch (err.claim) {
      case 'nbf': return `token not valid before ${isoOf(err.payload.nbf)}`;
      case 'aud': return `audience not accepted (authenticator ${config.name} expects ${shown(config.audience)})`;
      case 'iss': return `issuer ${shown(err.payload.iss)} not accepted`;
      case 'iat': return `token issued in the future (${isoOf(err.payload.iat)})`;
      default: return `the ${err.claim} claim is not valid`;
    }
  }
  if (err instanceof errors.JOSEAlgNotAllowed) {
    let alg: unknown;
    try {
      alg = decodeProtectedHeader(token).alg;
    } catch {
      alg = undefined;
    }
    return `algorithm ${shown(alg)} not accepted (authenticator ${config.name} takes ${config.driver})`;
  }
  if (err instanceof errors.JWSSignatureVerificationFailed) return `signature does not verify (authenticator ${config.name})`;
  if (err instanceof errors.JWKSNoMatchingKey) return `no key of authenticator ${config.name}'s JWKS matches the token's kid and algorithm`;
  if (err instanceof errors.JWKSMultipleMatchingKeys) return `several keys of authenticator ${config.name}'s JWKS match: the token must name a kid`;
  if (err instanceof errors.JWTInvalid || err instanceof errors.JWSInvalid) return 'malformed token';
  if (err instanceof errors.JOSEError) return `token refused by authenticator ${config.name} (${err.code})`;
  return `token refused by authenticator ${config.name}`;
}

function refuse(status: 401 | 403, message: string): AuthOutcome {
  return { ok: false, status, message };
}

function isoOf(seconds: unknown): string {
  return typeof seconds === 'number' && Number.isFinite(seconds) ? new Date(seconds * 1000).toISOString() : String(seconds);
}

/** A claim value as shown in a message: JSON, cut short. */
function shown(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
