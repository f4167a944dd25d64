/**
 * Reachability without SSH: one TCP connect with a deadline (the static driver's liveness
 * check on the request hot path), and a retrying variant for hosts that are expected to come
 * up (winrm registration, a booted server's SSH port).
 */
import net from 'node:net';
import { pollUntil } from '../lifecycle.js';
import { HostScanError } from '../errors.js';

/** Outcome of one connect attempt. */
export type TcpProbeResult = { ok: true } | { ok: false; reason: string };

/** Opens one TCP connection to host:port and closes it; never throws (an aborted signal counts as a failure). */
export function tcpProbe(host: string, port: number, timeoutMs: number, signal?: AbortSignal): Promise<TcpProbeResult> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve({ ok: false, reason: 'aborted' });
    const socket = net.connect({ host, port });
    let done = false;
    const finish = (result: TcpProbeResult): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      socket.destroy();
      resolve(result);
    };
    const onAbort = (): void => finish({ ok: false, reason: 'aborted' });
    const timer = setTimeout(() => finish({ ok: false, reason: `no answer within ${timeoutMs} ms` }), timeoutMs);
    signal?.addEventListener('abort', onAbort, { once: true });
    socket.once('connect', () => finish({ ok: true }));
    socket.once('error', (err: NodeJS.ErrnoException) => finish({ ok: false, reason: err.code === 'ECONNREFUSED' ? 'connection refused' : err.message }));
  });
}

/** Options of {@link waitForTcp}. */
export interface WaitForTcpOptions {
  /** Give up after this long. */
  timeoutMs: number;
  /** Pause between attempts (default 500 ms). */
  retryMs?: number;
  signal?: AbortSignal;
}

/**
 * Retries {@link tcpProbe} until a connect succeeds. Thrown: HostScanError (`unreachable`)
 * naming the last failure once `timeoutMs` has passed; the signal's reason when aborted.
 */
export async function waitForTcp(host: string, port: number, opts: WaitForTcpOptions): Promise<void> {
  let last = 'no attempt';
  const connected = await pollUntil(async (remaining) => {
    const result = await tcpProbe(host, port, remaining, opts.signal);
    if (result.ok) return true;
    last = result.reason;
    return undefined;
  }, { timeoutMs: opts.timeoutMs, intervalMs: opts.retryMs ?? 500, ...(opts.signal ? { signal: opts.signal } : {}) });
  opts.signal?.throwIfAborted();
  if (!connected) throw new HostScanError(host, port, 'unreachable', `no TCP connection within ${opts.timeoutMs} ms (${last})`);
}
