/**
 * SSH host key scanning through OpenSSH's `ssh-keyscan`: a real key exchange with the host,
 * one connection per key type. Retries until the deadline while the host refuses or drops
 * connections (it may be booting or rate-limiting unauthenticated connections).
 */
import { spawn } from 'node:child_process';
import { lookup } from 'node:dns/promises';
import { pollUntil } from '../lifecycle.js';
import { parseKeyscanOutput } from './host-keys.js';
import { coerceError, HostScanError } from '../errors.js';
import { tcpProbe } from './tcp-probe.js';

export { HostScanError } from '../errors.js';

/**
 * Host key types asked for, one connection each. ssh-keyscan's default adds the security-key
 * (sk-*) types, which cannot be host keys: asking for them only costs two key exchanges.
 */
const KEY_TYPES = 'rsa,ecdsa,ed25519';

/** Options of {@link keyscan}. */
export interface KeyscanOptions {
  /** Give up after this long (the static node's `timeout`). */
  timeoutMs: number;
  /**
   * Longest one connection may stay silent before ssh-keyscan drops it (its `-T`); default
   * `timeoutMs`. Only this bounds an attempt: the deadline kills ssh-keyscan, whose output
   * (buffered in a pipe) is then lost, so a short attempt on a slow host never ends in keys.
   */
  connectTimeoutMs?: number;
  /** Pause between attempts (default 500 ms). */
  retryMs?: number;
  /** Aborting kills a running ssh-keyscan and rejects with the signal's reason. */
  signal?: AbortSignal;
  /** The ssh-keyscan executable (default `ssh-keyscan` from PATH). */
  command?: string;
}

/**
 * The host's SSH host keys as sorted `"<type> <base64>"` lines.
 * Thrown: HostScanError — `unresolvable` (DNS), `unreachable` (no TCP connection before the
 * deadline) or `no-keys` (connections accepted but no key exchange completed).
 */
export async function keyscan(host: string, port: number, opts: KeyscanOptions): Promise<string[]> {
  const retryMs = opts.retryMs ?? 500;
  try {
    await lookup(host);
  } catch (err) {
    throw new HostScanError(host, port, 'unresolvable', `cannot resolve ${host}: ${coerceError(err).message}`, { cause: err });
  }
  const keys = await pollUntil(async (remaining) => {
    const found = parseKeyscanOutput(await runKeyscan(host, port, remaining, opts));
    return found.length ? found : undefined;
  }, { timeoutMs: opts.timeoutMs, intervalMs: retryMs, ...(opts.signal ? { signal: opts.signal } : {}) });
  if (keys) return keys;
  opts.signal?.throwIfAborted();
  // One connect tells "refused" from "answers but no key exchange" for the message.
  const probe = await tcpProbe(host, port, Math.min(1000, opts.timeoutMs), opts.signal);
  if (!probe.ok) throw new HostScanError(host, port, 'unreachable', `no SSH connection within ${opts.timeoutMs} ms (${probe.reason})`);
  throw new HostScanError(host, port, 'no-keys', `no SSH host key received within ${opts.timeoutMs} ms`);
}

/** Runs ssh-keyscan once and resolves with its stdout (empty when nothing answered); killed at the deadline. */
function runKeyscan(host: string, port: number, remainingMs: number, opts: KeyscanOptions): Promise<string> {
  const silentMs = Math.min(remainingMs, opts.connectTimeoutMs ?? remainingMs);
  const args = ['-t', KEY_TYPES, '-p', String(port), '-T', String(Math.max(1, Math.ceil(silentMs / 1000))), host];
  return new Promise((resolve, reject) => {
    const child = spawn(opts.command ?? 'ssh-keyscan', args, { stdio: ['ignore', 'pipe', 'ignore'], signal: opts.signal, killSignal: 'SIGKILL' });
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => child.kill('SIGKILL'), remainingMs + 250);
    child.stdout.on('data', (c: Buffer) => chunks.push(c));
    child.once('error', (err) => {
      clearTimeout(timer);
      if (opts.signal?.aborted) reject(opts.signal.reason as Error);
      else reject(new HostScanError(host, port, 'unreachable', `cannot run ssh-keyscan: ${err.message}`, { cause: err }));
    });
    child.once('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
  });
}
