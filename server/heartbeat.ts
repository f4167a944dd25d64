/**
 * The server's heartbeat in the store (`SERVER_HEARTBEAT_KEY`): written after the passes of
 * its loops (at most once per `minGapMs`) with every loop's health, so "alive" means "passes
 * run" and the CLI and health checks can tell which loop fails and why.
 */
import type { Logger } from '../lib/log.js';
import type { ServerHeartbeat } from '../lib/status/server.js';
import type { Store } from '../lib/store/store.js';
import { SERVER_HEARTBEAT_KEY } from '../lib/status/lifecycle-status.js';

/** Options of {@link Heartbeat}. */
export interface HeartbeatOptions {
  store: Store;
  log: Logger;
  /** The value to write, read at each write. */
  value: () => ServerHeartbeat;
  /** Least time between two writes (default 1000 ms). */
  minGapMs?: number;
}

export class Heartbeat {
  private lastWrite = 0;
  private writing: Promise<void> | undefined;
  private again = false;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(private readonly opts: HeartbeatOptions) {}

  /** A pass ended: write now, or once the gap since the last write is over. */
  note(): void {
    if (this.stopped) return;
    if (this.writing) {
      this.again = true;
      return;
    }
    const wait = this.lastWrite + (this.opts.minGapMs ?? 1000) - Date.now();
    if (wait <= 0) {
      void this.write();
      return;
    }
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      this.note();
    }, wait);
  }

  /** Writes at once (at start); resolves when written. */
  write(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.lastWrite = Date.now();
    this.writing = (async () => {
      try {
        await this.opts.store.putStatus(SERVER_HEARTBEAT_KEY, this.opts.value());
      } catch (err) {
        this.opts.log.warn('could not write the heartbeat', { error: (err as Error).message });
      }
    })().finally(() => {
      this.writing = undefined;
      if (this.again) {
        this.again = false;
        this.note();
      }
    });
    return this.writing;
  }

  /** No more writes; waits for the one in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.writing;
  }
}
