/**
 * The quick start's config and what it tells a newcomer about the console (`make run`):
 * config/quickstart.yaml with its placeholders filled, a `webapp:` section (a port and one
 * local HS256 authenticator whose secret is made afresh for each run and written only to the
 * run's config file, owner-only), the operator token signed with it, and the lines printed
 * about the console. Everything here is pure except {@link writeQuickstartConfig}.
 */
import { randomBytes } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import type { AuthenticatorConfig } from '../lib/web-auth/auth-types.js';
import { signToken } from '../lib/web-auth/sign-token.js';

/** What `make run` fills into config/quickstart.yaml's `@@…@@` placeholders. */
export interface QuickstartFills {
  gearmanPort: number;
  /** The checkout (`@@ROOT@@`). */
  root: string;
  /** The run's directory, `.run/quickstart` (`@@DIR@@`). */
  dir: string;
  cloudsYaml: string;
  /** The static provider's `nodes:` entries. */
  staticNodes: readonly unknown[];
  dibCmd: string;
  dibEnv: Readonly<Record<string, string>>;
}

/** The console's authenticator: its name, and the issuer and audience its tokens carry. */
export const QUICKSTART_AUTH = { name: 'local', issuer: 'nodepool', audience: 'nodepool' } as const;

/** How long the operator token printed by the quick start is valid (8 hours). */
export const CONSOLE_TOKEN_TTL_S = 8 * 3600;

/** The user the printed token names (the audit trail records it). */
export const CONSOLE_TOKEN_USER = 'quickstart';

/** A new HS256 secret: 32 random bytes as 64 hex characters. */
export function newAuthSecret(): string {
  return randomBytes(32).toString('hex');
}

/** The template with the qemu provider's block kept (markers removed) or cut out. */
export function withQemuBlock(template: string, keep: boolean): string {
  const block = /^ *# @@QEMU-BEGIN@@.*\n([\s\S]*?)^ *# @@QEMU-END@@.*\n/m;
  return template.replace(block, keep ? '$1' : '');
}

/**
 * The `webapp:` section appended to the run's config. The secret is quoted: 64 hex digits
 * may read as a YAML number (all digits, or `1e5…`).
 */
export function webappSection(port: number, secret: string): string {
  const { name, issuer, audience } = QUICKSTART_AUTH;
  return [
    '# The console and its write API (added by scripts/run-quickstart.ts; the secret is this run\'s own).',
    'webapp:',
    '  listen-address: 127.0.0.1',
    `  port: ${port}`,
    '  auth:',
    `    - {name: ${name}, driver: HS256, secret: ${JSON.stringify(secret)}, issuer: ${issuer}, audience: ${audience}}`,
    '',
  ].join('\n');
}

/** The run's nodepool.yaml: `template` (qemu block already decided) filled in, with the console's `webapp:` section. */
export function quickstartConfigText(template: string, fills: QuickstartFills, webapp: { port: number; secret: string }): string {
  const filled = template
    .replaceAll('@@GEARMAN_PORT@@', String(fills.gearmanPort))
    .replaceAll('@@ROOT@@', fills.root)
    .replaceAll('@@DIR@@', fills.dir)
    .replaceAll('@@CLOUDS_YAML@@', fills.cloudsYaml)
    .replaceAll('@@STATIC_NODES@@', JSON.stringify(fills.staticNodes))
    .replaceAll('@@DIB_CMD@@', fills.dibCmd)
    .replaceAll('@@DIB_ENV@@', JSON.stringify(fills.dibEnv));
  return `${filled.endsWith('\n') ? filled : `${filled}\n`}${webappSection(webapp.port, webapp.secret)}`;
}

/**
 * Writes the config holding the secret readable by its owner only (mode 0600). An earlier
 * run's file is removed first, so the mode is the one this creates, never an older one.
 */
export async function writeQuickstartConfig(file: string, text: string): Promise<void> {
  await rm(file, { force: true });
  await writeFile(file, text, { mode: 0o600, flag: 'wx' });
}

/** The console's authenticator in a loaded config. Throws when the config has none by that name. */
export function quickstartAuthenticator(auth: readonly AuthenticatorConfig[]): AuthenticatorConfig {
  const found = auth.find((a) => a.name === QUICKSTART_AUTH.name);
  if (!found) throw new Error(`the quick start's config has no webapp.auth entry named ${QUICKSTART_AUTH.name}`);
  return found;
}

/** An operator token for the console, valid {@link CONSOLE_TOKEN_TTL_S} seconds. */
export function consoleToken(auth: readonly AuthenticatorConfig[], now: () => number = Date.now): Promise<string> {
  return signToken(quickstartAuthenticator(auth), { user: CONSOLE_TOKEN_USER, role: 'operator', expiresInS: CONSOLE_TOKEN_TTL_S }, now);
}

/** The console's URL for a web status on 127.0.0.1:`port`. */
export function consoleUrl(port: number): string {
  return `http://127.0.0.1:${port}/`;
}

/** The lines that say where the console is, the token to sign in with and how to make another. */
export function consoleLines(opts: { url: string; token: string; configPath: string }): string[] {
  return [
    `the console: ${opts.url}`,
    `sign in with this operator token (valid ${CONSOLE_TOKEN_TTL_S / 3600} hours):`,
    opts.token,
    `make another: node --import tsx bin/nodepool.ts create-auth-token --user you --role operator --expires 3600 -c ${opts.configPath}`,
  ];
}
