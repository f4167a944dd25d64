/**
 * The one store-session keeper, for daemons and consumers alike: opened with an owner and
 * TTL, renewed three times per TTL, closed (with its locks and ephemeral requests) on
 * `close()`. A renewal that fails (store busy) is retried next tick. A renewal that finds the
 * session gone (the process stalled past its TTL and another process reaped it) either marks
 * it lost (`onLapse: 'lose'`, a consumer: its requests are gone and it must know) or opens a
 * new one (`'replace'`, a daemon: locks held under the old one are gone, and its next passes
 * take them afresh under the new id). `close()` during a renewal waits for it, then closes the
 * session the renewal leaves (a replacement opened meanwhile included), so none stays open.
 */
import os from 'node:os';
import { coerceError, SessionLostError } from '../errors.js';
import type { Logger } from '../log.js';
import type { SessionRecord } from '../store/models.js';
import type { SessionStore } from '../store/store.js';
import { renewIntervalMs } from './client-options.js';

/** Options of {@link SessionKeeper.open}. */
export interface SessionKeeperOptions {
  /** What holds the session, e.g. `nodepool request` or `nodepool-server`. */
  owner: string;
  /** TTL; a function is read at each renewal (a daemon's config reload may change it). */
  ttlMs: number | (() => number);
  log: Logger;
  /** Default: three times per TTL. */
  renewIntervalMs?: number;
  /** What a lapsed session becomes (default `lose`). */
  onLapse?: 'lose' | 'replace';
  /** Recorded with the session (default: this host and process). */
  hostname?: string;
  pid?: number;
}

/** One open session and its renewal timer. */
export class SessionKeeper {
  private lost = false;
  private closing: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** The renewal in progress, which close() waits for. */
  private renewing: Promise<void> | undefined;
  /** When a renewal last said the session is alive (or it was opened), epoch ms. */
  private renewedAt = Date.now();

  private constructor(private readonly store: SessionStore, private current: SessionRecord, private readonly opts: SessionKeeperOptions) {
    this.schedule();
  }

  /**
   * When the store last confirmed the session, epoch ms: the last answer of a networked store's
   * server (a renewal there only says the client has not given up yet), else the last renewal
   * that found it alive.
   */
  get confirmedAt(): number {
    return this.store.sessionHeardAt(this.current.id) ?? this.renewedAt;
  }

  /** Opens a session and starts renewing it. */
  static async open(store: SessionStore, opts: SessionKeeperOptions): Promise<SessionKeeper> {
    return new SessionKeeper(store, await openFor(store, opts), opts);
  }

  /** The live session (a replaced one has a new id: read it at each use). */
  get session(): SessionRecord {
    return this.current;
  }

  get id(): string {
    return this.current.id;
  }

  /** Thrown: SessionLostError once a renewal found the session gone (`lose`), or after close(). */
  check(): void {
    if (this.lost || this.closing) throw new SessionLostError(this.current.id);
  }

  /**
   * Stops renewing and closes the session (its locks and ephemeral requests go with it); a
   * renewal in progress ends first, so a session it replaced the old one with is the one
   * closed. Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      clearTimeout(this.timer);
      await this.renewing;
      await this.store.closeSession(this.current.id);
    })();
    return this.closing;
  }

  private schedule(): void {
    // The session's own TTL may be shorter than asked for (ZooKeeper grants within its bounds).
    const interval = this.opts.renewIntervalMs ?? renewIntervalMs(Math.min(ttlOf(this.opts), this.current.ttlMs));
    this.timer = setTimeout(() => {
      this.renewing = this.renew().finally(() => {
        this.renewing = undefined;
        if (!this.lost && !this.closing) this.schedule();
      });
    }, interval);
    // The timer alone must not keep a process alive; owners close() when done.
    this.timer.unref();
  }

  private async renew(): Promise<void> {
    if (this.lost || this.closing) return;
    const { log } = this.opts;
    try {
      if (await this.store.renewSession(this.current.id)) {
        this.renewedAt = Date.now();
        return;
      }
      if (this.opts.onLapse === 'replace') {
        const next = await openFor(this.store, this.opts);
        this.renewedAt = Date.now();
        log.error('store session lapsed and was replaced; locks held under it are gone', { old: this.current.id, new: next.id });
        this.current = next;
      } else {
        this.lost = true;
        log.error('store session lost; its locks and ephemeral requests are gone', { session: this.current.id });
      }
    } catch (err) {
      log.warn('renewing the store session failed; retrying', { session: this.current.id, error: coerceError(err).message });
    }
  }
}

function ttlOf(opts: SessionKeeperOptions): number {
  return typeof opts.ttlMs === 'function' ? opts.ttlMs() : opts.ttlMs;
}

function openFor(store: SessionStore, opts: SessionKeeperOptions): Promise<SessionRecord> {
  return store.openSession({ owner: opts.owner, hostname: opts.hostname ?? os.hostname(), pid: opts.pid ?? process.pid, ttlMs: Math.round(ttlOf(opts)) });
}
