/**
 * A pool's standing and circuit breaker (issue 35 §2–§3), for its pool worker: launch outcomes
 * move the breaker, the standing (headroom, what fills it, breaker) is published in the pool's
 * registration when it changes, and placement over every registered pool says whether the pool
 * leaves a request to another (lib/fleet/standing.ts, lib/fleet/placement.ts).
 */
import type { PoolInfo } from '../../lib/drivers/contract/driver.js';
import { afterOutcome, breakerVerdict, CLOSED, settleBreaker, startProbe, type BreakerSettings, type BreakerState } from '../../lib/fleet/breaker.js';
import { poolKey } from '../../lib/fleet/placement.js';
import { placeAmong, poolStandingFull, poolHeadroom, standingChanged, standingOf } from '../../lib/fleet/standing.js';
import type { Logger } from '../../lib/log.js';
import type { LauncherRecord, NodeRecord, NodeRequestRecord, PoolStandingRecord } from '../../lib/store/models.js';
import type { Store } from '../../lib/store/store.js';
import type { LaunchOutcome } from './request-handler-types.js';

/** What a pool's placement needs from its pool worker. */
export interface PoolPlacementDeps {
  store: Store;
  log: Logger;
  launcherId: string;
  /** The provider's name. */
  provider: string;
  pool: PoolInfo;
  priority: number;
  /** `launcher.breaker`, read at every use. */
  breaker: () => BreakerSettings;
  clock?: () => number;
  /** Whether the pool waits for room (a paused handler). */
  isPaused: () => boolean;
  /** Whether the pool's driver launches nodes; undefined until its first handler tells. */
  launches: () => boolean | undefined;
  readyCandidates: (label: string) => Promise<NodeRecord[]>;
  /** Ends the pool worker's idle wait. */
  nudge: () => void;
}

export class PoolPlacement {
  /** The pool's circuit breaker (issue 35 §3): launch outcomes move it; published in the standing. */
  private breaker: BreakerState = CLOSED;
  /** The standing as last published in the registration (placement reads it from there). */
  private standing: PoolStandingRecord | undefined;

  constructor(private readonly deps: PoolPlacementDeps) {}

  private now(): number {
    return (this.deps.clock ?? Date.now)();
  }

  /**
   * A launch of this pool ended: the breaker counts it (an aborted launch, over quota, says
   * nothing of the cloud's health). A change of state is logged here and published by the pass.
   */
  launchEnded(outcome: LaunchOutcome): void {
    if (outcome.result === 'aborted') return;
    const before = this.breaker;
    this.breaker = afterOutcome(before, outcome.result === 'ready' ? 'success' : 'failure', this.now(), this.deps.breaker());
    if (before.state !== this.breaker.state) {
      if (this.breaker.state === 'open') {
        this.deps.log.warn('breaker open: launches keep failing; requests another pool can serve go there', {
          failures: this.breaker.failures, probeInS: Math.round(this.breaker.backoffMs / 1000),
        });
      } else if (this.breaker.state === 'closed') {
        this.deps.log.info('breaker closed: a launch succeeded', { node: outcome.nodeId });
      }
    }
    this.deps.nudge();
  }

  /**
   * Publishes the pool's standing (headroom, what fills it, breaker) in its registration when it
   * changed, so every launcher places requests alike. The headroom is the free share of
   * max-servers counting ready unallocated nodes as free, in 5 % steps.
   */
  async publish(): Promise<void> {
    const { store, provider, pool } = this.deps;
    this.breaker = settleBreaker(this.breaker, this.now(), this.deps.breaker());
    const nodes = await store.listNodes({ provider, pool: pool.name });
    const free = nodes.filter((n) => n.state === 'ready' && n.allocatedTo === null).length;
    // A pool that hands out registered nodes has as many as it has records.
    const max = this.deps.launches() === false ? nodes.length : pool.maxServers;
    const next = standingOf({
      headroom: poolHeadroom(nodes.length, free, max, this.deps.isPaused()),
      full: poolStandingFull(nodes.length, free, max, this.deps.isPaused()),
      breaker: this.breaker,
    });
    if (!standingChanged(this.standing, next)) return;
    await store.updateLauncher(this.deps.launcherId, { standing: next });
    if (this.standing?.full?.by !== next.full?.by) this.deps.log.info(next.full ? 'pool full' : 'pool has room again', { ...(next.full ?? {}), headroom: next.headroom });
    this.standing = next;
  }

  /**
   * Whether this pool leaves request `r` to another (issue 35 §2): placement over every
   * registered pool that has not declined it, this one as it stands now, picks another pool;
   * or this pool's breaker holds and the pool has no ready node for it. A breaker whose backoff
   * passed lets this request through as its probe.
   */
  async leavesToOthers(r: NodeRequestRecord, launchers: readonly LauncherRecord[]): Promise<boolean> {
    const settings = this.deps.breaker();
    const now = this.now();
    const self = poolKey({ provider: this.deps.provider, pool: this.deps.pool.name });
    const current = { ...(this.standing ?? standingOf({ headroom: 1, breaker: this.breaker })), breaker: this.breaker };
    const mine = launchers.find((l) => l.id === this.deps.launcherId);
    const others = launchers.filter((l) => l.id !== this.deps.launcherId);
    const selfRecord: LauncherRecord = {
      ...(mine ?? { id: this.deps.launcherId, sessionId: '', provider: this.deps.provider, pool: this.deps.pool.name, supportedLabels: [...this.deps.pool.labels], registered: now }),
      priority: this.deps.priority, paused: this.deps.isPaused(), standing: current,
    };
    const placed = placeAmong(r, [...others, selfRecord], now, settings);
    if (placed.take !== undefined && placed.take !== self) return true;
    const verdict = breakerVerdict(this.breaker, now, settings);
    if (verdict === 'take') return false;
    // A ready node of the pool for every label serves it without the cloud.
    const stocked = await Promise.all(r.labels.map(async (l) => (await this.deps.readyCandidates(l)).length > 0));
    if (stocked.every(Boolean)) return false;
    if (verdict === 'hold') return true;
    this.breaker = startProbe(this.breaker, now, settings);
    this.deps.log.info('breaker: a probe launch after the backoff', { request: r.id, openSinceS: this.breaker.state === 'probing' ? Math.round((now - this.breaker.since) / 1000) : 0 });
    await this.publish();
    return false;
  }
}
