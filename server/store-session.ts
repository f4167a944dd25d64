/**
 * The process's store session: opened at start, renewed every third of its TTL, closed at
 * stop (its locks and launcher registrations go with it). A session that lapsed anyway (the
 * process stalled past its TTL and another process reaped it) is replaced by a new one and
 * logged: locks held under the old one are gone, and the next passes take them afresh.
 */
import { coerceError } from '../lib/errors.js';
import type { Logger } from '../lib/log.js';
import type { Store } from '../lib/store/store.js';

/** Options of {@link StoreSession.open}. */
export interface StoreSessionOptions {
  store: Store;
  owner: string;
  hostname: string;
  pid: number;
  /** Current TTL in seconds (config `launcher.session-ttl`). */
  ttlSeconds: () => number;
  log: Logger;
}

export class StoreSession {
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  private constructor(private readonly opts: StoreSessionOptions, private current: string) {}

  static async open(opts: StoreSessionOptions): Promise<StoreSession> {
    const s = await opts.store.openSession({ owner: opts.owner, hostname: opts.hostname, pid: opts.pid, ttlMs: Math.round(opts.ttlSeconds() * 1000) });
    const session = new StoreSession(opts, s.id);
    session.schedule();
    return session;
  }

  get id(): string {
    return this.current;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.timer);
    await this.opts.store.closeSession(this.current);
  }

  private schedule(): void {
    this.timer = setTimeout(() => void this.renew(), Math.max(100, (this.opts.ttlSeconds() * 1000) / 3));
  }

  private async renew(): Promise<void> {
    if (this.closed) return;
    const { store, log } = this.opts;
    try {
      if (!await store.renewSession(this.current)) {
        const s = await store.openSession({ owner: this.opts.owner, hostname: this.opts.hostname, pid: this.opts.pid, ttlMs: Math.round(this.opts.ttlSeconds() * 1000) });
        log.error('store session lapsed and was replaced; locks held under it are gone', { old: this.current, new: s.id });
        this.current = s.id;
      }
    } catch (err) {
      log.warn('renewing the store session failed', { error: coerceError(err).message });
    }
    if (!this.closed) this.schedule();
  }
}
