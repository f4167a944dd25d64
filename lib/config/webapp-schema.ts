/**
 * The `webapp` section of nodepool.yaml: where the web status listens (`port`,
 * `listen-address` or Nodepool's `listen_address`), the authenticators of the write API
 * (`auth`, in the style of Zuul's `[auth]` sections; issue 25) and optional TLS (`tls`).
 * An HS256 secret is never shown in a message: only its kind or what is wrong with it.
 */
import { AUTH_DRIVERS, type AuthenticatorConfig } from '../web-auth/auth-types.js';
import { checked, int, list, mapped, object, oneOf, optional, required, string } from './schema-kit.js';

/** Where the web status listens unless `webapp.listen-address` says (Nodepool's is 0.0.0.0). */
const DEFAULT_LISTEN_ADDRESS = '127.0.0.1';

/** An HS256 secret shorter than the hash is refused (RFC 7518 §3.2: at least 256 bits). */
export const MIN_SECRET_CHARS = 32;

/** The compiled `webapp` section. */
export interface WebappConfig {
  port: number;
  listenAddress: string;
  /** The write API's authenticators, tried in this order; empty: every write is refused (403). */
  auth: AuthenticatorConfig[];
  /** PEM files for HTTPS; absent: plain HTTP (put a TLS proxy in front). */
  tls: { cert: string; key: string } | undefined;
}

/** One `webapp.auth` entry: the driver decides which key material it needs. */
const authenticator = mapped(checked(object({
  name: required(string()),
  driver: required(oneOf(AUTH_DRIVERS)),
  /** HS256 only; may come as `%(NODEPOOL_…_SECRET)`. */
  secret: optional(string()),
  /** RS256/ES256: a PEM file holding the public key. */
  'public-key': optional(string()),
  /** RS256/ES256: a JWKS file, instead of `public-key`. */
  jwks: optional(string()),
  issuer: required(string()),
  audience: required(string()),
  'role-claim': optional(string(), 'nodepool.role'),
  'user-claim': optional(string(), 'sub'),
  skew: optional(int({ min: 0 }), 0),
  'max-validity-time': optional(int({ min: 1 })),
}), (a, path, p) => {
  const at = (key: string) => `${path}.${key}`;
  if (a.driver === 'HS256') {
    if (a.secret === undefined) p.add(at('secret'), 'expected a secret: an HS256 authenticator signs and verifies with a shared secret');
    else if (a.secret.length < MIN_SECRET_CHARS) p.add(at('secret'), `expected at least ${MIN_SECRET_CHARS} characters (RFC 7518 §3.2), got a shorter secret`);
    if (a.publicKey !== undefined) p.add(at('public-key'), 'not used by HS256 (it verifies with secret); remove it or use driver RS256/ES256');
    if (a.jwks !== undefined) p.add(at('jwks'), 'not used by HS256 (it verifies with secret); remove it or use driver RS256/ES256');
    return;
  }
  if (a.secret !== undefined) p.add(at('secret'), `not used by ${a.driver} (it verifies with a public key): remove it`);
  if (a.publicKey === undefined && a.jwks === undefined) p.add(path, `expected public-key (a PEM file) or jwks (a JWKS file) for ${a.driver}, got neither`);
  if (a.publicKey !== undefined && a.jwks !== undefined) p.add(at('jwks'), `expected only one of public-key and jwks for ${a.driver}, got both`);
}), (a): AuthenticatorConfig => ({
  name: a.name,
  driver: a.driver,
  ...(a.secret !== undefined ? { secret: a.secret } : {}),
  ...(a.publicKey !== undefined ? { publicKey: a.publicKey } : {}),
  ...(a.jwks !== undefined ? { jwks: a.jwks } : {}),
  issuer: a.issuer,
  audience: a.audience,
  roleClaim: a.roleClaim,
  userClaim: a.userClaim,
  skew: a.skew,
  ...(a.maxValidityTime !== undefined ? { maxValidityTime: a.maxValidityTime } : {}),
}));

/** `webapp`: `listen-address`, or Nodepool's spelling `listen_address` (both only when equal); `auth`; `tls`. */
export const webappSchema = mapped(checked(object({
  port: optional(int({ min: 0, max: 65535 }), 8005),
  'listen-address': optional(string()),
  /** Nodepool 11's spelling of `listen-address`. */
  listen_address: optional(string()),
  auth: optional(list(authenticator, { uniqueBy: (a) => a.name, what: 'authenticator' }), []),
  tls: optional(object({ cert: required(string()), key: required(string()) })),
}), (w, path, p) => {
  if (w.listenAddress !== undefined && w.listen_address !== undefined && w.listenAddress !== w.listen_address) {
    p.add(`${path ? `${path}.` : ''}listen_address`, `expected the same address as listen-address (${JSON.stringify(w.listenAddress)}) or only one of the two, got ${JSON.stringify(w.listen_address)}`);
  }
}), (w): WebappConfig => ({
  port: w.port,
  listenAddress: w.listenAddress ?? w.listen_address ?? DEFAULT_LISTEN_ADDRESS,
  auth: w.auth,
  tls: w.tls,
}));
