/**
 * A PoolWorker per provider-pool: registers itself as a launcher, takes requested node
 * requests in order (priority, then age) under a store lock, runs the generic request
 * handler for each, and polls the running ones until they finish. A paused handler (no room)
 * blocks new requests for this pool until it can go on — the pool pauses instead of failing.
 */
import type { PoolInfo, Provider } from '../../lib/drivers/contract/driver.js';
import { coerceError } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import { PeriodicLoop } from '../../lib/periodic-loop.js';
import type { NodeRecord, NodeRequestRecord } from '../../lib/store/models.js';
import type { Store } from '../../lib/store/store.js';
import type { TenantResourceLimit } from '../../lib/config/schema.js';
import { takes, yieldsToPreferredProvider } from './decisions.js';
import type { BreakerSettings } from '../../lib/fleet/breaker.js';
import { PoolPlacement } from './pool-placement.js';
import { limitsOf, sumResources, tenantLimitExceeded } from './tenant-limits.js';
import { lockIfFree } from './lock-if-free.js';
import { NodeRequestHandler } from './request-handler.js';
import { CLAIMED, type FleetPool, type LaunchOutcome } from './request-handler-types.js';
import { requestLock } from '../../lib/store/lock-names.js';

/** What a pool worker needs. */
export interface PoolWorkerDeps {
  store: Store;
  log: Logger;
  provider: Provider;
  pool: PoolInfo;
  launcherId: string;
  /** The process's store session (read at every use: it may be renewed as a new one). */
  sessionId: () => string;
  /** Seconds between passes while idle. */
  interval: () => number;
  /** The pool's effective priority (lower is preferred; see poolPriority), published with its registration. */
  priority: number;
  /** The config's `tenant-resource-limits` (read at every use: a reload may change them). */
  tenantLimits: () => readonly TenantResourceLimit[];
  /** The provider's max-concurrency (-1 unlimited, 0 handles nothing). */
  maxConcurrency: number;
  /** Launches in flight across all pools of the provider. */
  providerAlive: () => number;
  /** Called after every pass, failed or not. */
  onLoopPass?: () => void;
  /** Told the outcome of every node launch (metrics). */
  onLaunch?: (outcome: LaunchOutcome) => void;
  /** A fleet member's configured pools (see RequestHandlerDeps.fleetPools). */
  fleetPools?: () => readonly FleetPool[];
  /** The pool's circuit breaker settings (`launcher.breaker`, read at every use: a reload may change them). */
  breaker: () => BreakerSettings;
  /** Epoch ms (the breaker's times). */
  clock?: () => number;
}

/** Requests a pass has in hand at once (see assign; 8 → 32 with the window: each is mostly waiting on round trips). */
const PARALLEL_RUNS = 32;

export class PoolWorker {
  private readonly handlers: NodeRequestHandler[] = [];
  private paused: NodeRequestHandler | undefined;
  private running = false;
  /** The stop in progress or done, returned to every later stop(). */
  private stopping: Promise<void> | undefined;
  /** Requests this pool leaves alone for good (see takes), each logged once. */
  private readonly skipped = new Set<string>();
  /** Runs the passes (named `pool-worker:<provider>/<pool>`); its health goes into the heartbeat. */
  readonly loop: PeriodicLoop;
  private readonly log: Logger;
  private lastRegistered = 0;
  /** The `paused` the registration says (published when it changes). */
  private published = false;
  /** Requests deferred for their tenant's limits, each logged once (bounded as {@link skipped}). */
  private readonly deferred = new Set<string>();
  /**
   * Ready nodes of the pool, read once per pass when a handler first asks. The read itself is
   * kept (not its result), so handlers asking at once share one list and see each other's claims.
   */
  private snapshot: Promise<NodeRecord[]> | undefined;
  /** The pool's standing and breaker, and where its requests go (pool-placement.ts). */
  private readonly placement: PoolPlacement;
  /** Whether the pool's driver launches nodes (else it hands out registered ones), known from its first handler. */
  private launches: boolean | undefined;

  constructor(private readonly deps: PoolWorkerDeps) {
    this.log = deps.log.child({ component: 'pool-worker', provider: deps.provider.name, pool: deps.pool.name });
    this.placement = new PoolPlacement({
      store: deps.store, log: this.log, launcherId: deps.launcherId, provider: deps.provider.name, pool: deps.pool, priority: deps.priority,
      breaker: deps.breaker, ...(deps.clock ? { clock: deps.clock } : {}), isPaused: () => this.isPaused, launches: () => this.launches,
      readyCandidates: (label) => this.readyCandidates(label), labelReady: (label) => deps.provider.labelReady(label), nudge: () => this.loop.nudge(),
    });
    this.loop = new PeriodicLoop({
      name: `pool-worker:${deps.provider.name}/${deps.pool.name}`, log: this.log,
      // Backoff capped at 10 s: after a store outage the pool takes requests again within 10 s of its return.
      intervalMs: () => deps.interval() * 1000, pass: () => this.pass(), backoff: { initialMs: 1000, maxMs: 10_000 },
      ...(deps.onLoopPass ? { onPass: deps.onLoopPass } : {}),
    });
  }

  get id(): string {
    return this.deps.launcherId;
  }

  /** Launches in flight in this pool. */
  get aliveCount(): number {
    return this.handlers.reduce((n, h) => n + h.aliveCount, 0);
  }

  start(): void {
    this.running = true;
    this.loop.start();
    this.log.info('pool worker started', { launcher: this.deps.launcherId, labels: this.deps.pool.labels });
  }

  /** Something changed in the store (a new request, maybe): the idle wait ends now. */
  nudge(): void {
    this.loop.nudge();
  }

  /**
   * Stops: running requests are handed back (requested again) and the registration removed.
   * Idempotent: a second or concurrent call returns the same promise; before start() it does nothing.
   */
  stop(): Promise<void> {
    if (!this.running && !this.stopping) return Promise.resolve();
    this.stopping ??= this.shutdown();
    return this.stopping;
  }

  private async shutdown(): Promise<void> {
    this.running = false;
    await this.loop.stop();
    for (const h of this.handlers) await h.abandon().catch((e: unknown) => this.log.warn('abandoning a request failed', { error: coerceError(e).message }));
    this.handlers.length = 0;
    await this.deps.store.unregisterLauncher(this.deps.launcherId).catch(() => undefined);
    this.log.info('pool worker stopped');
  }

  /** One pass; returns whether anything happened (the loop then goes again at once). */
  async pass(): Promise<boolean> {
    await this.register();
    this.snapshot = undefined;
    let busy = false;
    if (this.paused) {
      await this.paused.run();
      if (!this.paused.paused) {
        this.paused = undefined;
        busy = true;
      }
    }
    if (!this.paused) busy = await this.assign() || busy;
    for (const h of [...this.handlers]) {
      if (await h.poll()) {
        this.handlers.splice(this.handlers.indexOf(h), 1);
        busy = true;
      } else if (h.paused && !this.paused) {
        this.paused = h;
      }
    }
    await this.publishPaused();
    await this.placement.publish();
    return busy;
  }

  /** Whether the pool waits for quota (a paused handler): other pools then take requests before it. */
  get isPaused(): boolean {
    return this.paused !== undefined;
  }

  private async register(): Promise<void> {
    const now = Date.now();
    if (now - this.lastRegistered < 5000) return;
    const paused = this.isPaused;
    await this.deps.store.registerLauncher({
      id: this.deps.launcherId, sessionId: this.deps.sessionId(), provider: this.deps.provider.name,
      pool: this.deps.pool.name, supportedLabels: [...this.deps.pool.labels], priority: this.deps.priority, paused,
    });
    this.published = paused;
    this.lastRegistered = now;
  }

  /** Tells the registration at once when the pool pauses or goes on (Nodepool 11's pool component `paused`). */
  private async publishPaused(): Promise<void> {
    const paused = this.isPaused;
    if (paused === this.published) return;
    await this.deps.store.updateLauncher(this.deps.launcherId, { paused });
    this.published = paused;
    this.log.info(paused ? 'pool paused: waiting for quota' : 'pool unpaused', { priority: this.deps.priority });
  }

  private async readyCandidates(label: string): Promise<NodeRecord[]> {
    const { store, provider, pool } = this.deps;
    this.snapshot ??= store.listNodes({ provider: provider.name, pool: pool.name, states: ['ready'] });
    return (await this.snapshot).filter((n) => n.state === 'ready' && n.allocatedTo === null && n.labels.includes(label));
  }

  /**
   * Takes requested requests in order until one pauses or max-concurrency is reached. Up to
   * {@link PARALLEL_RUNS} requests are in hand at once (locking, reuse checks and writes are
   * store and network round trips), started in order as a window: when one finishes the next
   * starts, with no wait for the others. A handler that may launch runs alone, so max-servers
   * and quota see each new node. A handler whose launches are complete at once (reuse only) is
   * finished at once.
   */
  private async assign(): Promise<boolean> {
    const { store, provider, launcherId, maxConcurrency } = this.deps;
    if (maxConcurrency === 0) return false;
    const inHand = new Set<Promise<void>>();
    const seen = new Set<string>();
    let busy = false;
    let failure: { err: unknown } | undefined;
    const stopped = (): boolean => !this.running || this.paused !== undefined || failure !== undefined
      || (maxConcurrency > 0 && this.deps.providerAlive() >= maxConcurrency);
    // Requests that came in while the pass ran are taken in the same pass (listed again once
    // the list is used up), so the window does not drain to wait for a new pass.
    for (let round = 0; !stopped(); round++) {
      const requests = await store.listRequests({ states: ['requested'] });
      // A request a handler here still has (handed back while its session was being replaced) is left to that handler.
      const mine = requests.filter((r) => !r.declinedBy.includes(launcherId) && !seen.has(r.id) && !this.handlers.some((h) => h.id === r.id));
      if (mine.length === 0) break;
      if (round > 0) this.refreshSnapshot();
      const launchers = await store.listLaunchers();
      for (const r of mine) {
        if (stopped()) break;
        seen.add(r.id);
        if (yieldsToPreferredProvider(r, provider.name, launchers) || await this.placement.leavesToOthers(r, launchers)) continue;
        const handler = this.newHandler(r);
        if (!takes(r, handler.canLaunch)) {
          this.logSkipped(r);
          continue;
        }
        // A request under tenant limits runs alone, so the next one of its tenant sees its nodes.
        const limited = limitsOf(r.tenantName, this.deps.tenantLimits()) !== undefined;
        while (inHand.size >= (handler.canLaunch || limited ? 1 : PARALLEL_RUNS)) await Promise.race(inHand);
        if (limited && inHand.size > 0) await Promise.all(inHand);
        if (stopped()) break;
        if (limited && await this.overTenantLimit(handler)) continue;
        const task: Promise<void> = this.take(handler)
          .then((took) => { busy ||= took; }, (err: unknown) => { failure ??= { err }; })
          .finally(() => inHand.delete(task));
        inHand.add(task);
        if (handler.canLaunch || limited) await task;
      }
    }
    await Promise.all(inHand);
    if (failure) throw failure.err;
    return busy;
  }

  /**
   * Whether the request's tenant would pass one of its `tenant-resource-limits` with it: the
   * resources of every node of the tenant (all providers, any state) plus what this pool needs
   * for the request. Such a request is deferred: left requested and unlocked, tried again at
   * the next pass.
   */
  private async overTenantLimit(handler: NodeRequestHandler): Promise<boolean> {
    const tenant = handler.tenantName;
    const limits = limitsOf(tenant, this.deps.tenantLimits());
    if (!limits) return false;
    const needed = await handler.resourcesNeeded();
    if (!needed) return false;
    const used = sumResources((await this.deps.store.listNodes()).filter((n) => n.tenantName === tenant).map((n) => n.resources));
    const over = tenantLimitExceeded(limits, used, needed);
    if (tenant) this.placement.tenantChecked(tenant, over);
    if (!over) {
      this.deferred.delete(handler.id);
      return false;
    }
    if (!this.deferred.has(handler.id)) {
      if (this.deferred.size >= 1000) this.deferred.clear();
      this.deferred.add(handler.id);
      this.log.info('deferring a request: its tenant is at its resource limit', { request: handler.id, tenant, ...over });
    }
    return true;
  }

  /** Logs once per request that the pool leaves it alone (see takes; the memory of it is bounded). */
  private logSkipped(r: NodeRequestRecord): void {
    if (this.skipped.has(r.id)) return;
    if (this.skipped.size >= 1000) this.skipped.clear();
    this.skipped.add(r.id);
    this.log.info('leaving a request with reuse false alone: this pool only hands out registered nodes', { request: r.id, labels: r.labels });
  }

  /**
   * Reads the ready nodes again at the next ask (nodes came back meanwhile), keeping the claims
   * of handlers still trying a node of the old list, so new handlers do not try it too.
   */
  private refreshSnapshot(): void {
    const old = this.snapshot;
    if (!old) return;
    const { store, provider, pool } = this.deps;
    this.snapshot = Promise.all([old, store.listNodes({ provider: provider.name, pool: pool.name, states: ['ready'] })]).then(([was, now]) => {
      const claimed = new Set(was.filter((n) => n.allocatedTo === CLAIMED).map((n) => n.id));
      for (const n of now) if (claimed.has(n.id) && n.allocatedTo === null) n.allocatedTo = CLAIMED;
      return now;
    });
    // Read only when a handler asks: a failed read (the store unreachable) that no handler
    // asked for must not become an unhandled rejection. Asking still gets the failure.
    this.snapshot.catch(() => undefined);
  }

  /**
   * The handler of a request as the pass listed it (the watched copy, not read again under the
   * lock): the handler marks it pending only if it is still requested, in one conditional
   * write, and leaves it otherwise (see NodeRequestHandler.run).
   */
  private newHandler(request: NodeRequestRecord): NodeRequestHandler {
    const { store, provider, pool, launcherId, sessionId } = this.deps;
    const handler = new NodeRequestHandler({
      store, log: this.log, launcherId, sessionId, provider, pool, readyCandidates: (label) => this.readyCandidates(label),
      // Every record of the pool, in any state, may still exist in the provider: all count against max-servers.
      poolNodeCount: async () => (await store.listNodes({ provider: provider.name, pool: pool.name })).length,
      onLaunch: (outcome) => {
        this.placement.launchEnded(outcome);
        this.deps.onLaunch?.(outcome);
      },
      ...(this.deps.fleetPools ? { fleetPools: this.deps.fleetPools } : {}),
    }, request);
    this.launches ??= handler.canLaunch;
    return handler;
  }

  /**
   * Locks the request and runs its handler; false when another holds the lock, or when the pass
   * stopped meanwhile (the lock is then released again). Thrown: a failure to lock or unlock.
   */
  private async take(handler: NodeRequestHandler): Promise<boolean> {
    const { store } = this.deps;
    const sessionId = handler.session;
    if (!await lockIfFree(store, requestLock(handler.id), sessionId)) {
      await this.placement.launchNotStarted(handler.id);
      return false;
    }
    if (!this.running || this.paused) {
      await store.unlock(requestLock(handler.id), sessionId);
      await this.placement.launchNotStarted(handler.id);
      return false;
    }
    await handler.run();
    if (!handler.paused && !handler.done) await handler.poll();
    // A launch that began is in flight, or has ended and told the breaker; none began: say so (a probe's request).
    if (handler.aliveCount === 0) await this.placement.launchNotStarted(handler.id);
    if (!handler.done) this.handlers.push(handler);
    if (handler.paused) this.paused ??= handler;
    return true;
  }
}
