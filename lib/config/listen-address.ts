/**
 * `webapp.listen-address` must be an address the server can bind: an IP address, or a name
 * the local resolver knows. Checked by `config-validate` (the loader is pure and synchronous;
 * this is the one check that asks the resolver), so a typo fails validation rather than the
 * server's start.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import net from 'node:net';
import type { ConfigProblem } from '../errors.js';
import type { Config } from './schema.js';

/** Resolves a host name to an address (`dns.promises.lookup` by default). */
export type HostLookup = (host: string) => Promise<unknown>;

/** Options of {@link listenAddressProblem}. */
export interface ListenAddressCheckOptions {
  /** The resolver (tests may pass their own). */
  lookup?: HostLookup;
  /** How long the resolver may take (default 5 s); longer is a problem too. */
  timeoutMs?: number;
}

/**
 * The problem with `webapp.listen-address`, or undefined when it is an IP address or a name
 * that resolves. Only the local resolver is asked (`getaddrinfo`: /etc/hosts, then DNS).
 */
export async function listenAddressProblem(config: Pick<Config, 'webapp'>, opts: ListenAddressCheckOptions = {}): Promise<ConfigProblem | undefined> {
  const host = config.webapp.listenAddress;
  if (net.isIP(host) !== 0) return undefined;
  const lookup = opts.lookup ?? ((h: string) => dnsLookup(h));
  const timeoutMs = opts.timeoutMs ?? 5000;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs);
  });
  try {
    const r = await Promise.race([lookup(host).then(() => 'ok' as const), timeout]);
    if (r === 'ok') return undefined;
    return { path: 'webapp.listen-address', message: `expected an IP address or a resolvable host name, got ${JSON.stringify(host)} (the resolver gave no answer within ${timeoutMs} ms)` };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    return { path: 'webapp.listen-address', message: `expected an IP address or a resolvable host name, got ${JSON.stringify(host)} (${code}: the server could not listen on it)` };
  } finally {
    clearTimeout(timer);
  }
}
