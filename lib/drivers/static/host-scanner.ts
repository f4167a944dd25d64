/**
 * Scans configured static hosts: an SSH key exchange (ssh-keyscan) for ssh and network_cli
 * hosts, a TCP connect for winrm hosts, each retried until the host's `timeout`; an ssh host
 * with `host-key-checking: false` is not connected to (its configured keys stand in). Concurrent
 * scans of one host share one attempt, a sync scans a bounded number of hosts at once, and a
 * slot refill may reuse keys scanned moments ago after one TCP connect.
 */
import { setMaxListeners } from 'node:events';
import { coerceError } from '../../errors.js';
import { HostScanError, keyscan } from '../../ssh/keyscan.js';
import { tcpProbe, waitForTcp } from '../../ssh/tcp-probe.js';
import type { StaticHost } from './config.js';
import { gathersKeys, skipsScan, type ScanOutcome } from './registration-plan.js';

/** Options of {@link HostScanner}. */
export interface HostScannerOptions {
  /** Aborting kills running scans (provider stop). */
  signal: AbortSignal;
  /** Hosts scanned at once during a sync (default 8: a key exchange costs the scanning host CPU too). */
  concurrency?: number;
  /** Pause between attempts on a host that refuses (default 500 ms). */
  retryMs?: number;
}

export class HostScanner {
  private readonly inflight = new Map<string, Promise<ScanOutcome>>();
  /** Keys of each host's last successful scan, with when it finished (epoch ms). */
  private readonly lastKeys = new Map<string, { keys: string[]; at: number }>();
  /** When each host last answered (a scan or a connect that succeeded; epoch ms). */
  private readonly lastAnswer = new Map<string, number>();

  constructor(private readonly opts: HostScannerOptions) {
    // Every running ssh-keyscan and retry pause listens on the provider's one signal.
    setMaxListeners(0, opts.signal);
  }

  /** Scans one host (a full key scan). Resolves with the outcome; rejects only when aborted. */
  scan(host: StaticHost): Promise<ScanOutcome> {
    if (skipsScan(host)) return Promise.resolve({ ok: true, keys: [...host.node.hostKey] });
    const running = this.inflight.get(host.id);
    if (running) return running;
    const p = this.scanOnce(host).finally(() => this.inflight.delete(host.id));
    this.inflight.set(host.id, p);
    return p;
  }

  /**
   * Like {@link scan}, but when the host's keys were scanned within `maxAgeMs` one TCP connect
   * stands in for the key exchange (a slot refill after every returned node would otherwise
   * cost a full scan per node; the cleanup pass right after a start-up sync would repeat it).
   * With `answerReuseMs` > 0, a host that answered that recently is not connected to at all:
   * under churn a host's slots come back many times a second, and every connect costs the host
   * a fork of sshd (about 2.4 ms of CPU per returned node in bench/static-churn.ts).
   */
  async recheck(host: StaticHost, maxAgeMs: number, answerReuseMs = 0): Promise<ScanOutcome> {
    if (skipsScan(host)) return this.scan(host);
    const last = this.lastKeys.get(host.id);
    if (!last || Date.now() - last.at > maxAgeMs || this.inflight.has(host.id)) return this.scan(host);
    if (Date.now() - (this.lastAnswer.get(host.id) ?? -Infinity) < answerReuseMs) return { ok: true, keys: last.keys };
    const probe = await tcpProbe(host.node.name, host.node.connectionPort, host.node.timeout * 1000, this.opts.signal);
    this.opts.signal.throwIfAborted();
    this.answered(host.id, probe.ok);
    return probe.ok ? { ok: true, keys: last.keys } : this.scan(host);
  }

  /**
   * Scans every host, at most `concurrency` at once; with `reuseMs` > 0, a host whose keys were
   * scanned that recently is checked with {@link recheck}. Rejects only when aborted.
   */
  async scanAll(hosts: readonly StaticHost[], reuseMs = 0): Promise<Map<string, ScanOutcome>> {
    const out = new Map<string, ScanOutcome>();
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < hosts.length) {
        const host = hosts[next++] as StaticHost;
        out.set(host.id, await (reuseMs > 0 ? this.recheck(host, reuseMs) : this.scan(host)));
      }
    };
    await Promise.all(Array.from({ length: Math.min(hosts.length, this.opts.concurrency ?? 8) }, worker));
    return out;
  }

  /** Records whether the host answered a connect or scan just now (also one made elsewhere: the liveness check at hand-out). */
  answered(hostId: string, ok: boolean): void {
    if (ok) this.lastAnswer.set(hostId, Date.now());
    else this.lastAnswer.delete(hostId);
  }

  private async scanOnce(host: StaticHost): Promise<ScanOutcome> {
    const { name, connectionPort: port, timeout } = host.node;
    const common = { timeoutMs: timeout * 1000, retryMs: this.opts.retryMs, signal: this.opts.signal };
    try {
      if (!gathersKeys(host)) {
        await waitForTcp(name, port, common);
        return { ok: true, keys: [] };
      }
      const keys = await keyscan(name, port, common);
      this.lastKeys.set(host.id, { keys, at: Date.now() });
      this.answered(host.id, true);
      return { ok: true, keys };
    } catch (err) {
      this.lastKeys.delete(host.id);
      this.answered(host.id, false);
      if (this.opts.signal.aborted) throw err;
      return { ok: false, reason: err instanceof HostScanError ? err.detail : coerceError(err).message };
    }
  }
}
