/**
 * `nodepool create-auth-token --user NAME --role read|operator|admin --expires SECONDS
 * [--authenticator NAME]`: prints a bearer token for the web write API, signed with a local
 * HS256 authenticator of `webapp.auth` (the one named, else the first HS256 one), for sites
 * without an identity provider. The token goes to stdout alone; what it grants, to stderr.
 */
import type { AuthenticatorConfig, Role } from '../../lib/web-auth/auth-types.js';
import { signToken } from '../../lib/web-auth/sign-token.js';
import { CommandFailure } from '../../lib/errors.js';
import { EXIT, commandConfig, runCommand, type CommandContext, type CommandResult } from './shared.js';

/** Options of {@link createAuthToken}. */
export interface CreateAuthTokenOptions extends CommandContext {
  user: string;
  role: Role;
  /** Seconds the token is valid. */
  expiresS: number;
  /** The `webapp.auth` entry to sign with (default: the first HS256 one). */
  authenticator?: string | undefined;
}

/**
 * The authenticator a token is signed with: the one named (which must be HS256), else the
 * first HS256 one. Thrown: {@link CommandFailure} with exit 3 for an unknown name, 2 when
 * none can sign.
 */
export function signingAuthenticator(auth: readonly AuthenticatorConfig[], name: string | undefined): AuthenticatorConfig {
  if (name !== undefined) {
    const found = auth.find((a) => a.name === name);
    if (!found) {
      const known = auth.length ? auth.map((a) => a.name).join(', ') : 'none';
      throw new CommandFailure(EXIT.notFound, `no authenticator ${JSON.stringify(name)} in webapp.auth (configured: ${known})`);
    }
    if (found.driver !== 'HS256') {
      throw new CommandFailure(EXIT.usage, `authenticator ${name} uses ${found.driver}: nodepool holds only its public key and cannot sign; name an HS256 authenticator (tokens for it come from its identity provider)`);
    }
    return found;
  }
  const local = auth.find((a) => a.driver === 'HS256');
  if (!local) {
    throw new CommandFailure(EXIT.usage, auth.length
      ? 'no HS256 authenticator in webapp.auth to sign with (RS256/ES256 tokens come from their identity provider)'
      : 'webapp.auth configures no authenticator: add an HS256 one (see docs/auth.md)');
  }
  return local;
}

/** Prints a signed token; exit 0, 2 for a config or usage error, 3 for an unknown authenticator. */
export function createAuthToken(opts: CreateAuthTokenOptions): Promise<CommandResult> {
  return runCommand(async (out) => {
    const config = commandConfig(opts);
    const auth = signingAuthenticator(config.webapp.auth, opts.authenticator);
    const now = opts.now ?? Date.now;
    let token: string;
    try {
      token = await signToken(auth, { user: opts.user, role: opts.role, expiresInS: opts.expiresS }, now);
    } catch (err) {
      throw new CommandFailure(EXIT.usage, (err as Error).message);
    }
    const expires = new Date(Math.floor(now() / 1000) * 1000 + opts.expiresS * 1000).toISOString();
    out.out(`${token}\n`);
    out.err(`token for ${opts.user} (${opts.role}) from authenticator ${auth.name}, expires ${expires}\n`);
    return EXIT.ok;
  });
}
