/**
 * Refused write attempts (issue 31 §3): those no verified token names (no or a bad token, the
 * write API not configured, a page on another origin, a body not declared JSON, a write to a
 * path or with a method no route takes, a request whose headers are too large), and a verified
 * user's refusals before any action runs (a role too weak or none, a bad body). None of them is
 * a store write of its own: each is counted in memory, per source and minute when no verified
 * token names it, per user and minute when one does, and the minutes that have ended are
 * written as one aggregate each (lib/store/audit.ts), in one store write a flush, apart from
 * the audit trail, which they can never push out. Each source (and user) may be refused
 * {@link REFUSAL_BURST} times at once and once a second after that; past it the answer is 429.
 * The log has one line an aggregate, not one a request.
 */
import { coerceError } from '../../../lib/errors.js';
import { RateLimiter } from '../../../lib/http/rate-limit.js';
import type { Logger } from '../../../lib/log.js';
import { escapeControlChars } from '../../../lib/outside-text.js';
import { REFUSAL_PATHS_KEPT, refusalAggregatesFrom, REFUSALS_KEEP, REFUSALS_STATUS_KEY, type RefusalAggregate } from '../../../lib/store/audit.js';
import type { Store } from '../../../lib/store/store.js';

/** Refusals a source (or user) may have at once before 429. */
export const REFUSAL_BURST = 30;
/** Refusals a source earns back per second. */
export const REFUSALS_PER_SECOND = 1;
/** Sources one minute tracks; more count under `(other)`. */
export const MAX_SOURCES_PER_MINUTE = 1000;
/** The source of a user's minute of refusals that came from more than one source. */
export const SEVERAL_SOURCES = '(several)';
/** Aggregates held unwritten while the store fails; the oldest go past it. */
const MAX_PENDING = 5000;
const MINUTE_MS = 60_000;

/** One refused attempt. */
export interface RefusalNote {
  /** The peer's address ('' when unknown). */
  remote: string;
  method: string;
  path: string;
  status: number;
  /** One word: `no-token`, `bad-token`, `not-configured`, `no-role`, `role`, `body`, `cross-origin`, `content-type`, `unrouted`, `header-too-large`. */
  reason: string;
  /** The user a verified token named, if any. */
  user?: string | null;
}

/** Options of {@link RefusalLedger}. */
export interface RefusalLedgerOptions {
  store: Store;
  log: Logger;
  clock?: () => number;
  /** How often ended minutes are written (default 10 s). */
  flushIntervalMs?: number;
}

/** The source a limit and an aggregate count by: an IPv4 address, or an IPv6 address's /64 (a host holds a whole /64). Pure. */
export function refusalSource(remote: string): string {
  const v4 = /^(?:::ffff:)?(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(remote);
  if (v4) return v4[1] as string;
  if (!remote.includes(':')) return remote === '' ? '(unknown)' : escapeControlChars(remote);
  const [head = '', tail = ''] = remote.split('::');
  const h = head === '' ? [] : head.split(':');
  const t = tail === '' ? [] : tail.split(':');
  const groups = remote.includes('::') ? [...h, ...Array<string>(Math.max(0, 8 - h.length - t.length)).fill('0'), ...t] : h;
  return `${groups.slice(0, 4).map((g) => g.toLowerCase().replace(/^0+(?=.)/, '')).join(':')}::/64`;
}

export class RefusalLedger {
  private readonly bySource: RateLimiter;
  private readonly byUser: RateLimiter;
  /** Aggregates of the minutes not yet written, by minute and source (no user) or by minute and user. */
  private readonly open = new Map<string, RefusalAggregate>();
  private readonly sourcesIn = new Map<number, Set<string>>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();
  private readonly clock: () => number;
  /** Store writes the ledger made (for the figures of tests and logs). */
  writes = 0;

  constructor(private readonly opts: RefusalLedgerOptions) {
    this.clock = opts.clock ?? Date.now;
    const limits = { burst: REFUSAL_BURST, perSecond: REFUSALS_PER_SECOND, clock: this.clock };
    this.bySource = new RateLimiter(limits);
    this.byUser = new RateLimiter(limits);
  }

  /** Writes ended minutes every `flushIntervalMs`. */
  start(): void {
    this.timer ??= setInterval(() => void this.flush(false), this.opts.flushIntervalMs ?? 10_000);
    this.timer.unref();
  }

  /** Stops the timer and writes every minute held, the current one too. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.flush(true);
  }

  /**
   * Counts a refused attempt (under its source, or its user when a verified token named one);
   * true when its source (or user) is over its limit, and the answer is to be 429 instead (the
   * attempt counts as limited).
   */
  note(n: RefusalNote): boolean {
    const source = refusalSource(n.remote);
    const user = n.user ?? null;
    const within = user === null ? this.bySource.take(`a:${source}`) : this.byUser.take(`u:${user}`);
    const now = this.clock();
    const minute = now - (now % MINUTE_MS);
    let src = source;
    if (user === null) {
      let sources = this.sourcesIn.get(minute);
      if (!sources) this.sourcesIn.set(minute, (sources = new Set()));
      const tracked = sources.has(source) || sources.size < MAX_SOURCES_PER_MINUTE;
      if (tracked) sources.add(source);
      else src = '(other)';
    }
    const key = user === null ? `${minute}\u0000a\u0000${src}` : `${minute}\u0000u\u0000${user}`;
    let a = this.open.get(key);
    if (!a) {
      a = { minute, source: src, user: user === null ? null : escapeControlChars(user), count: 0, limited: 0, first: now, last: now, statuses: {}, reasons: {}, requests: {} };
      this.open.set(key, a);
      this.trimPending();
    }
    // A user's minute names the one source it came from, or none when it came from several.
    if (a.source !== src && a.source !== SEVERAL_SOURCES) a.source = SEVERAL_SOURCES;
    a.count += 1;
    a.last = now;
    const status = within ? n.status : 429;
    if (!within) a.limited += 1;
    bump(a.statuses, String(status));
    bump(a.reasons, n.reason);
    const request = escapeControlChars(`${n.method} ${n.path}`.slice(0, 200));
    bump(a.requests, request in a.requests || Object.keys(a.requests).length < REFUSAL_PATHS_KEPT ? request : '(other)');
    this.opts.log.debug('write refused', { source: src, user, status, reason: n.reason, request });
    return !within;
  }

  /** Seconds a source over its limit should wait (Retry-After). */
  retryAfterSeconds(remote: string, user?: string | null): number {
    const a = this.bySource.retryAfterSeconds(`a:${refusalSource(remote)}`);
    return user ? Math.max(a, this.byUser.retryAfterSeconds(`u:${user}`)) : a;
  }

  /** The newest aggregates, written and not yet written, newest first (`limit` of them). */
  async recent(limit: number): Promise<RefusalAggregate[]> {
    const stored = refusalAggregatesFrom((await this.opts.store.getStatus(REFUSALS_STATUS_KEY))?.value).aggregates;
    return [...stored, ...this.open.values()].sort((x, y) => y.minute - x.minute || y.last - x.last).slice(0, limit);
  }

  /** Writes the aggregates of ended minutes (all with `all`) in one store write; a failed write keeps them for the next flush. */
  flush(all: boolean): Promise<void> {
    this.flushing = this.flushing.then(() => this.flushNow(all));
    return this.flushing;
  }

  private async flushNow(all: boolean): Promise<void> {
    const now = this.clock();
    const current = now - (now % MINUTE_MS);
    const due = [...this.open.entries()].filter(([, a]) => all || a.minute < current);
    if (due.length === 0) return;
    try {
      const stored = refusalAggregatesFrom((await this.opts.store.getStatus(REFUSALS_STATUS_KEY))?.value);
      if (stored.dropped > 0) this.opts.log.warn('malformed refusal counts in the store are dropped', { key: REFUSALS_STATUS_KEY, dropped: stored.dropped });
      const aggregates = [...stored.aggregates, ...due.map(([, a]) => a)].slice(-REFUSALS_KEEP);
      this.writes += 1;
      await this.opts.store.putStatus(REFUSALS_STATUS_KEY, { aggregates });
    } catch (err) {
      this.opts.log.error('could not write the counts of refused writes (kept for the next try)', { error: coerceError(err).message, aggregates: due.length });
      return;
    }
    for (const [key, a] of due) {
      this.open.delete(key);
      this.opts.log.warn('write attempts refused', {
        minute: new Date(a.minute).toISOString(), source: a.source, user: a.user, count: a.count, limited: a.limited, statuses: a.statuses, reasons: a.reasons,
      });
    }
    for (const m of this.sourcesIn.keys()) if (m < current) this.sourcesIn.delete(m);
  }

  /** Past {@link MAX_PENDING} unwritten aggregates (a store that keeps failing), the oldest go. */
  private trimPending(): void {
    if (this.open.size <= MAX_PENDING) return;
    const oldest = this.open.keys().next().value;
    if (oldest !== undefined) this.open.delete(oldest);
  }
}

function bump(counts: Record<string, number>, key: string): void {
  counts[key] = (counts[key] ?? 0) + 1;
}
