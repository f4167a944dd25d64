/**
 * A pool's standing and circuit breaker (issue 35 §2–§4), for its pool worker: launch outcomes
 * move the breaker, the standing (headroom, what fills it, breaker, labels with nothing to
 * boot, tenants deferred at their limits) is published in the pool's registration when it
 * changes, and placement over every registered pool says whether the pool leaves a request to
 * another (lib/fleet/standing.ts, lib/fleet/placement.ts). The breaker is also kept in the
 * store's status under `pool-breaker:<provider>/<pool>`, so the pool's next runner (after a
 * restart, or another fleet member after a takeover) goes on from it instead of a closed one.
 */
import type { PoolInfo } from '../../lib/drivers/contract/driver.js';
import { abandonProbe, afterOutcome, breakerVerdict, CLOSED, settleBreaker, startProbe, type BreakerSettings, type BreakerState } from '../../lib/fleet/breaker.js';
import { coerceError } from '../../lib/errors.js';
import { breakerFrom } from '../../lib/store/pool-standing.js';
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
  /** Whether the provider has something to boot for the label now (Provider.labelReady). */
  labelReady: (label: string) => Promise<boolean>;
  /** Ends the pool worker's idle wait. */
  nudge: () => void;
}

/** How often the labels with nothing to boot are looked at again (each look reads the uploads). */
const IMAGE_LOOK_MS = 5000;
/** A tenant deferral not seen again for this long leaves the standing (the pool may not have looked since). */
const TENANT_NOTE_MS = 60_000;

/** The status key the pool's breaker is kept under. */
export const breakerStatusKey = (provider: string, pool: string): string => `pool-breaker:${provider}/${pool}`;

export class PoolPlacement {
  /** The pool's circuit breaker (issue 35 §3): launch outcomes move it; published in the standing. */
  private breaker: BreakerState = CLOSED;
  /** The standing as last published in the registration (placement reads it from there). */
  private standing: PoolStandingRecord | undefined;
  /** The breaker as last kept in the store's status (JSON), undefined before the pool's first look at it. */
  private keptBreaker: string | undefined;
  /** Labels with nothing to boot at the last look, and when that was. */
  private noImage: { labels: string[]; at: number } = { labels: [], at: -Infinity };
  /** The request the breaker's probe was given to, while it is probing. */
  private probeRequest: string | undefined;
  /** Tenants deferred at their limits: the figures and when last seen over. */
  private readonly tenants = new Map<string, { detail: string; at: number }>();

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
    await this.restoreBreaker();
    const now = this.now();
    this.breaker = settleBreaker(this.breaker, now, this.deps.breaker());
    await this.keepBreaker();
    const nodes = await store.listNodes({ provider, pool: pool.name });
    const free = nodes.filter((n) => n.state === 'ready' && n.allocatedTo === null).length;
    // A pool that hands out registered nodes has as many as it has records.
    const max = this.deps.launches() === false ? nodes.length : pool.maxServers;
    for (const [tenant, t] of this.tenants) if (now - t.at > TENANT_NOTE_MS) this.tenants.delete(tenant);
    const next = standingOf({
      headroom: poolHeadroom(nodes.length, free, max, this.deps.isPaused()),
      full: poolStandingFull(nodes.length, free, max, this.deps.isPaused()),
      breaker: this.breaker,
      noReadyImage: await this.labelsWithoutImage(now),
      tenantLimited: [...this.tenants].map(([tenant, t]) => ({ tenant, detail: t.detail })),
    });
    if (!standingChanged(this.standing, next)) return;
    await store.updateLauncher(this.deps.launcherId, { standing: next });
    if (this.standing?.full?.by !== next.full?.by) this.deps.log.info(next.full ? 'pool full' : 'pool has room again', { ...(next.full ?? {}), headroom: next.headroom });
    this.standing = next;
  }

  /**
   * The pool worker's word that request `id` started no launch here (not locked, or served,
   * declined or paused without one): when it was the breaker's probe, the breaker goes back
   * to open with its backoff over, so the next request placed here is the probe (else it would
   * wait out the probe timeout for a launch that never began).
   */
  async launchNotStarted(id: string): Promise<void> {
    if (this.probeRequest !== id) return;
    this.probeRequest = undefined;
    if (this.breaker.state !== 'probing') return;
    this.breaker = abandonProbe(this.breaker, this.now());
    this.deps.log.info('breaker: the probe\'s request started no launch here; the next request is the probe', { request: id });
    await this.publish();
  }

  /**
   * What the pool's tenant-limit check said of a request of `tenant`: over its limit (the
   * figures), or not (null). A tenant over it is published, so that its waiting requests say so.
   */
  tenantChecked(tenant: string, over: { resource: string; limit: number; used: number; needed: number } | null): void {
    if (!over) {
      this.tenants.delete(tenant);
      return;
    }
    this.tenants.set(tenant, { detail: `${over.resource}: ${over.used} of ${over.limit} used, the request needs ${over.needed}`, at: this.now() });
  }

  /** The pool's labels with nothing to boot, looked at again every IMAGE_LOOK_MS (a pool that launches nothing has none). */
  private async labelsWithoutImage(now: number): Promise<string[]> {
    if (this.deps.launches() === false) return [];
    if (now - this.noImage.at < IMAGE_LOOK_MS) return this.noImage.labels;
    const ready = await Promise.all(this.deps.pool.labels.map(async (l) => [l, await this.deps.labelReady(l)] as const));
    this.noImage = { labels: ready.filter(([, r]) => !r).map(([l]) => l), at: now };
    return this.noImage.labels;
  }

  /** On the pool's first look: goes on from the breaker its last runner kept (a corrupt one is reported and left). */
  private async restoreBreaker(): Promise<void> {
    if (this.keptBreaker !== undefined) return;
    const key = breakerStatusKey(this.deps.provider, this.deps.pool.name);
    const kept = await this.deps.store.getStatus(key).catch((err: unknown) => {
      this.deps.log.warn('could not read the pool\'s kept breaker; starting closed', { error: coerceError(err).message });
      return undefined;
    });
    const state = kept === undefined ? undefined : breakerFrom(kept.value);
    if (kept !== undefined && !state) this.deps.log.warn('the pool\'s kept breaker is not a breaker state; starting closed', { key });
    if (state && this.breaker === CLOSED) {
      this.breaker = state;
      if (state.state !== 'closed') this.deps.log.info('breaker taken over from the pool\'s last runner', { state: state.state, failures: state.failures });
    }
    this.keptBreaker = JSON.stringify(state ?? CLOSED);
  }

  /** Keeps the breaker in the store's status when it changed. */
  private async keepBreaker(): Promise<void> {
    const json = JSON.stringify(this.breaker);
    if (json === this.keptBreaker) return;
    await this.deps.store.putStatus(breakerStatusKey(this.deps.provider, this.deps.pool.name), this.breaker);
    this.keptBreaker = json;
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
    this.probeRequest = r.id;
    this.deps.log.info('breaker: a probe launch after the backoff', { request: r.id, openSinceS: this.breaker.state === 'probing' ? Math.round((now - this.breaker.since) / 1000) : 0 });
    await this.publish();
    return false;
  }
}
