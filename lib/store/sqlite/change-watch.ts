/**
 * Change hints for a SQLite store: `PRAGMA data_version` changes when another connection
 * commits, so polling it (a few microseconds) tells a launcher that a consumer in another
 * process wrote — a new node request, typically — without reading any table. Writes through
 * this connection are announced with {@link ChangeWatch.notify} by the store itself.
 */
import type Database from 'better-sqlite3';

/** How often data_version is read while anyone listens. */
const POLL_MS = 25;

export class ChangeWatch {
  private readonly listeners = new Set<() => void>();
  private readonly versionStmt: Database.Statement<[], number>;
  private timer: NodeJS.Timeout | undefined;
  private version = 0;

  constructor(db: Database.Database, private readonly pollMs = POLL_MS) {
    this.versionStmt = db.prepare<[], number>('PRAGMA data_version').pluck();
  }

  /** Adds a listener; polling runs while there is one. Returns the unsubscribe function. */
  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    if (!this.timer) {
      this.version = this.versionStmt.get() ?? 0;
      this.timer = setInterval(() => this.poll(), this.pollMs);
      this.timer.unref();
    }
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.stop();
    };
  }

  /** Tells the listeners (after the current operation) that this process changed something. */
  notify(): void {
    if (this.listeners.size) queueMicrotask(() => this.fire());
  }

  /** Stops polling (store closed). */
  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private poll(): void {
    let now: number;
    try {
      now = this.versionStmt.get() ?? 0;
    } catch {
      return; // the database is busy or closing: the next tick reads again
    }
    if (now === this.version) return;
    this.version = now;
    this.fire();
  }

  private fire(): void {
    for (const l of [...this.listeners]) {
      try {
        l();
      } catch {
        // a listener's failure is its own; the others still hear about the change
      }
    }
  }
}
