/**
 * A node's NoCloud seed for cloud-init: an ISO 9660 volume labelled `cidata` with `meta-data`
 * (instance id, hostname) and `user-data` (the user's SSH keys). Made with `genisoimage`
 * (Debian package genisoimage).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { runCommand } from './run-command.js';

/** What a seed carries. */
export interface SeedContent {
  instanceId: string;
  hostname: string;
  /** `authorized_keys` lines for cloud-init's default user. */
  authorizedKeys: readonly string[];
}

/** The `user-data` document (cloud-config). Pure. */
export function userData(c: SeedContent): string {
  const keys = c.authorizedKeys.map((k) => `  - ${JSON.stringify(k)}`);
  return ['#cloud-config', `hostname: ${JSON.stringify(c.hostname)}`, 'manage_etc_hosts: true',
    ...(keys.length ? ['ssh_authorized_keys:', ...keys] : []), ''].join('\n');
}

/** The `meta-data` document. Pure. */
export function metaData(c: SeedContent): string {
  return `instance-id: ${JSON.stringify(c.instanceId)}\nlocal-hostname: ${JSON.stringify(c.hostname)}\n`;
}

/** The keys of an authorized_keys file's text (comments and blank lines dropped). Pure. */
export function parseAuthorizedKeys(text: string): string[] {
  return text.split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
}

/** Writes `dir/seed/{user-data,meta-data}` and `iso`. Thrown: CommandFailedError from genisoimage. */
export async function makeSeedIso(dir: string, iso: string, c: SeedContent, opts: { genisoimage?: string; signal?: AbortSignal } = {}): Promise<void> {
  const src = path.join(dir, 'seed');
  await mkdir(src, { recursive: true });
  await writeFile(path.join(src, 'user-data'), userData(c));
  await writeFile(path.join(src, 'meta-data'), metaData(c));
  await runCommand(opts.genisoimage ?? 'genisoimage', [
    '-quiet', '-output', iso, '-volid', 'cidata', '-joliet', '-rock', path.join(src, 'user-data'), path.join(src, 'meta-data'),
  ], { timeoutMs: 30_000, ...(opts.signal ? { signal: opts.signal } : {}) });
}
