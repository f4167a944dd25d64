/**
 * Scans configured static hosts: an SSH key exchange (ssh-keyscan) for ssh and network_cli
 * hosts, a TCP connect for winrm hosts, each retried until the host's `timeout`. Concurrent
 * scans of one host share one attempt, and a sync scans a bounded number of hosts at once.
 */
import { coerceError } from '../../errors.js';
import { HostScanError, keyscan } from '../../ssh/keyscan.js';
import { waitForTcp } from '../../ssh/tcp-probe.js';
import type { StaticHost } from './config.js';
import { gathersKeys, type ScanOutcome } from './registration-plan.js';

/** Options of {@link HostScanner}. */
export interface HostScannerOptions {
  /** Aborting kills running scans (provider stop). */
  signal: AbortSignal;
  /** Hosts scanned at once during a sync (default 16). */
  concurrency?: number;
  /** Pause between attempts on a host that refuses (default 500 ms). */
  retryMs?: number;
}

export class HostScanner {
  private readonly inflight = new Map<string, Promise<ScanOutcome>>();

  constructor(private readonly opts: HostScannerOptions) {}

  /** Scans one host. Resolves with the outcome; rejects only when aborted. */
  scan(host: StaticHost): Promise<ScanOutcome> {
    const running = this.inflight.get(host.id);
    if (running) return running;
    const p = this.scanOnce(host).finally(() => this.inflight.delete(host.id));
    this.inflight.set(host.id, p);
    return p;
  }

  /** Scans every host, at most `concurrency` at once; rejects only when aborted. */
  async scanAll(hosts: readonly StaticHost[]): Promise<Map<string, ScanOutcome>> {
    const out = new Map<string, ScanOutcome>();
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < hosts.length) {
        const host = hosts[next++] as StaticHost;
        out.set(host.id, await this.scan(host));
      }
    };
    await Promise.all(Array.from({ length: Math.min(hosts.length, this.opts.concurrency ?? 16) }, worker));
    return out;
  }

  private async scanOnce(host: StaticHost): Promise<ScanOutcome> {
    const { name, connectionPort: port, timeout } = host.node;
    const common = { timeoutMs: timeout * 1000, retryMs: this.opts.retryMs, signal: this.opts.signal };
    try {
      if (!gathersKeys(host)) {
        await waitForTcp(name, port, common);
        return { ok: true, keys: [] };
      }
      return { ok: true, keys: await keyscan(name, port, common) };
    } catch (err) {
      if (this.opts.signal.aborted) throw err;
      return { ok: false, reason: err instanceof HostScanError ? err.detail : coerceError(err).message };
    }
  }
}
