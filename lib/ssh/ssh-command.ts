/**
 * One command on a node over the system `ssh` client, as the validation gate runs it: batch
 * mode (never a prompt), only the given key, and the node's recorded host keys as the only
 * known hosts (StrictHostKeyChecking=yes), so a host that answers with another key fails.
 * `sshCommandArgv` and `knownHostsText` are pure; `runSshCommand` spawns ssh (no shell) and
 * kills it at the deadline.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runCommand } from '../run-command.js';

/** What one ssh invocation is. */
export interface SshCommandSpec {
  host: string;
  port: number;
  user: string;
  /** The private key file to log in with; null: ssh's own defaults (agent, ~/.ssh). */
  privateKey: string | null;
  /** A known_hosts file holding the node's recorded keys; null: no host key check (no keys were recorded). */
  knownHostsFile: string | null;
  /** The remote command, passed to the login shell as one string. */
  command: string;
  /** Seconds ssh may take to connect. */
  connectTimeout: number;
}

/** The argv (argv[0] is `ssh`) of one invocation. Pure. */
export function sshCommandArgv(s: SshCommandSpec): string[] {
  const o = (opt: string): string[] => ['-o', opt];
  return [
    'ssh',
    ...o('BatchMode=yes'),
    ...o('PasswordAuthentication=no'),
    ...o(`ConnectTimeout=${Math.max(1, Math.ceil(s.connectTimeout))}`),
    ...o('LogLevel=ERROR'),
    ...o('GlobalKnownHostsFile=/dev/null'),
    ...(s.knownHostsFile === null
      ? [...o('StrictHostKeyChecking=no'), ...o('UserKnownHostsFile=/dev/null')]
      : [...o('StrictHostKeyChecking=yes'), ...o(`UserKnownHostsFile=${s.knownHostsFile}`)]),
    ...(s.privateKey === null ? [] : [...o('IdentitiesOnly=yes'), '-i', s.privateKey]),
    '-p', String(s.port),
    '-l', s.user,
    '--', s.host, s.command,
  ];
}

/**
 * known_hosts lines for `"<type> <base64>"` keys of a host: `[host]:port` unless the port is
 * 22, as ssh looks them up. Pure.
 */
export function knownHostsText(host: string, port: number, keys: readonly string[]): string {
  const name = port === 22 ? host : `[${host}]:${port}`;
  return keys.map((k) => `${name} ${k}\n`).join('');
}

/** How a command ended. */
export interface SshCommandResult {
  /** The exit status (ssh's own 255 when it could not connect or log in); null when killed. */
  exitCode: number | null;
  /** True when the deadline killed it. */
  timedOut: boolean;
  /** The last `tailChars` of stdout and stderr together. */
  outputTail: string;
}

/** Options of {@link runSshCommand}. */
export interface RunSshOptions {
  host: string;
  port: number;
  user: string;
  privateKey: string | null;
  /** The node's recorded host keys; empty: no host key check. */
  hostKeys: readonly string[];
  command: string;
  /** Kill ssh after this long. */
  timeoutMs: number;
  signal?: AbortSignal;
  /** Output kept (default 2000 characters). */
  tailChars?: number;
  /** The ssh executable (default `ssh` from PATH). */
  ssh?: string;
  /** A file streamed to the remote command's stdin. */
  stdinFile?: string;
  /** Receives the raw output too (e.g. a build log); not ended. */
  output?: NodeJS.WritableStream;
}

/** Runs the command and resolves with how it ended; never rejects for the command's own failure. */
export async function runSshCommand(opts: RunSshOptions): Promise<SshCommandResult> {
  const dir = await mkdtemp(path.join(tmpdir(), 'nodepool-ssh-'));
  try {
    let knownHostsFile: string | null = null;
    if (opts.hostKeys.length > 0) {
      knownHostsFile = path.join(dir, 'known_hosts');
      await writeFile(knownHostsFile, knownHostsText(opts.host, opts.port, opts.hostKeys), { mode: 0o600 });
    }
    const argv = sshCommandArgv({
      host: opts.host, port: opts.port, user: opts.user, privateKey: opts.privateKey, knownHostsFile, command: opts.command,
      connectTimeout: Math.min(30, opts.timeoutMs / 1000),
    });
    return await run(opts.ssh ?? (argv[0] as string), argv.slice(1), opts);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function run(cmd: string, args: string[], opts: RunSshOptions): Promise<SshCommandResult> {
  const r = await runCommand([cmd, ...args], {
    timeoutMs: opts.timeoutMs, tailChars: opts.tailChars ?? 2000, ...(opts.signal ? { signal: opts.signal } : {}),
    ...(opts.stdinFile ? { stdinFile: opts.stdinFile } : {}), ...(opts.output ? { output: opts.output } : {}),
  });
  if (r.aborted) throw opts.signal?.reason instanceof Error ? opts.signal.reason : new Error('ssh aborted');
  return { exitCode: r.timedOut ? null : r.exitCode, timedOut: r.timedOut, outputTail: r.outputTail };
}
