/**
 * Node and request counts by state over the last hours, kept in the server's memory for the
 * console's charts (issue 25 §3): a sample every `intervalMs` (default 30 s) into a bounded
 * ring (default four hours). A failed read is logged and skipped. {@link CountSampler.stop}
 * ends the timer (the console module's `stop`).
 */
import { coerceError } from '../../../lib/errors.js';
import type { Logger } from '../../../lib/log.js';
import type { Store } from '../../../lib/store/store.js';

/** One sample of the counts. */
export interface CountSample {
  time: number;
  nodes: Record<string, number>;
  requests: Record<string, number>;
}

export interface CountSamplerOptions {
  store: Store;
  clock: () => number;
  log: Logger;
  /** Default 30 000. */
  intervalMs?: number;
  /** Samples kept (default four hours' worth). */
  capacity?: number;
}

export const DEFAULT_SAMPLE_INTERVAL_MS = 30_000;
export const DEFAULT_SAMPLE_WINDOW_MS = 4 * 3_600_000;

/** Counts of `items` by their `state`. */
export function countByState(items: ReadonlyArray<{ state: string }>): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const i of items) counts[i.state] = (counts[i.state] ?? 0) + 1;
  return counts;
}

export class CountSampler {
  private readonly ring: CountSample[] = [];
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  readonly intervalMs: number;
  readonly capacity: number;

  constructor(private readonly opts: CountSamplerOptions) {
    this.intervalMs = opts.intervalMs ?? DEFAULT_SAMPLE_INTERVAL_MS;
    this.capacity = opts.capacity ?? Math.ceil(DEFAULT_SAMPLE_WINDOW_MS / this.intervalMs);
  }

  /** Takes a sample now, then one every interval until {@link stop}. */
  start(): void {
    const tick = (): void => {
      void this.sample().finally(() => {
        if (!this.stopped) this.timer = setTimeout(tick, this.intervalMs).unref();
      });
    };
    tick();
  }

  /** Reads the store once and keeps the sample (the oldest goes past the capacity). */
  async sample(): Promise<void> {
    try {
      const [nodes, requests] = await Promise.all([this.opts.store.listNodes(), this.opts.store.listRequests()]);
      this.ring.push({ time: this.opts.clock(), nodes: countByState(nodes), requests: countByState(requests) });
      while (this.ring.length > this.capacity) this.ring.shift();
    } catch (raw) {
      this.opts.log.warn('console could not sample node and request counts', { error: coerceError(raw).message });
    }
  }

  /** The samples kept, oldest first. */
  samples(): readonly CountSample[] {
    return this.ring;
  }

  /** The window the ring covers when full (ms). */
  get windowMs(): number {
    return this.capacity * this.intervalMs;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }
}
