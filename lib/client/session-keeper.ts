/**
 * A store session kept alive on a timer: opened with an owner and TTL, renewed three times
 * per TTL, closed (with its locks and ephemeral requests) on `close()`. A renewal that finds
 * the session gone marks it lost; a renewal that fails (store busy) is retried next tick.
 */
import os from 'node:os';
import { coerceError } from '../errors.js';
import type { Logger } from '../log.js';
import type { SessionRecord } from '../store/models.js';
import type { SessionStore } from '../store/store.js';
import { renewIntervalMs } from './client-options.js';
import { SessionLostError } from './errors.js';

/** Options of {@link SessionKeeper.open}. */
export interface SessionKeeperOptions {
  /** What holds the session, e.g. `nodepool request`. */
  owner: string;
  ttlMs: number;
  log: Logger;
  /** Default: three times per TTL. */
  renewIntervalMs?: number;
}

/** One open session and its renewal timer. */
export class SessionKeeper {
  private lost = false;
  private closing: Promise<void> | undefined;
  private readonly timer: NodeJS.Timeout;

  private constructor(private readonly store: SessionStore, readonly session: SessionRecord, private readonly log: Logger, intervalMs: number) {
    this.timer = setInterval(() => void this.renew(), intervalMs);
    // The timer alone must not keep a process alive; callers close() when done.
    this.timer.unref();
  }

  /** Opens a session (hostname and pid of this process) and starts renewing it. */
  static async open(store: SessionStore, opts: SessionKeeperOptions): Promise<SessionKeeper> {
    const session = await store.openSession({ owner: opts.owner, hostname: os.hostname(), pid: process.pid, ttlMs: opts.ttlMs });
    return new SessionKeeper(store, session, opts.log, opts.renewIntervalMs ?? renewIntervalMs(opts.ttlMs));
  }

  get id(): string {
    return this.session.id;
  }

  /** Thrown: SessionLostError once a renewal found the session gone, or after close(). */
  check(): void {
    if (this.lost || this.closing) throw new SessionLostError(this.session.id);
  }

  private async renew(): Promise<void> {
    if (this.lost || this.closing) return;
    try {
      if (!(await this.store.renewSession(this.session.id))) {
        this.lost = true;
        clearInterval(this.timer);
        this.log.error('store session lost; its locks and ephemeral requests are gone', { session: this.session.id });
      }
    } catch (err) {
      this.log.warn('renewing the store session failed; retrying', { session: this.session.id, error: coerceError(err).message });
    }
  }

  /** Stops renewing and closes the session (its locks and ephemeral requests go with it). Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      clearInterval(this.timer);
      await this.store.closeSession(this.session.id);
    })();
    return this.closing;
  }
}
