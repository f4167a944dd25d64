/**
 * The launcher service in nodepool-server: runs one Provider per configured provider (or
 * only those named with `--provider`) and a PoolWorker per provider-pool, plus the deleter,
 * the cleanup worker and the min-ready top-up, and a ValidationWorker per provider whose
 * diskimages have `validate:` (the validation gate runs beside the provider it boots nodes
 * in). A config reload restarts only the providers whose config changed (value equality) and
 * stops removed ones.
 */
import { providerInputs, type ProviderInputs } from '../../lib/config/provider-inputs.js';
import type { Config } from '../../lib/config/schema.js';
import { configEquals } from '../../lib/config/config-equals.js';
import { poolPriority } from '../../lib/drivers/contract/common-config.js';
import type { PoolInfo, Provider } from '../../lib/drivers/contract/driver.js';
import type { DriverHosts } from '../../lib/drivers/core/driver-hosts.js';
import { imageTargets, providerPools, type ProviderConfig } from '../../lib/drivers/config-registry.js';
import { driverOf } from '../../lib/drivers/registry.js';
import { coerceError } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import { poolKey } from '../../lib/fleet/placement.js';
import { breakerSettings } from '../../lib/fleet/standing.js';
import { PeriodicLoop, type LoopHealth } from '../../lib/periodic-loop.js';
import type { Store } from '../../lib/store/store.js';
import { CleanupWorker } from './cleanup-worker.js';
import { launcherId } from './decisions.js';
import { topUpMinReady } from './min-ready.js';
import { NodeDeleter } from './node-deleter.js';
import { PoolWorker } from './pool-worker.js';
import type { FleetPool, LaunchOutcome } from './request-handler-types.js';
import { ValidationWorker } from './validation-worker.js';

/** What the launcher needs. */
export interface LauncherDeps {
  store: Store;
  log: Logger;
  /** The current config (reloads: call {@link Launcher.reconfigure}). */
  config: () => Config;
  /** The process's driver host accesses (a provider's own, through its context's `hostAccess`). */
  imageServices: DriverHosts;
  /** The process's store session. */
  sessionId: () => string;
  hostname: string;
  pid: number;
  /** Only these providers (`--provider`); all when omitted. */
  only?: readonly string[];
  /**
   * Only these provider-pools (`<provider>/<pool>`), read at every reconfigure: a fleet
   * member's leases (server/fleet). All pools of the providers run when omitted.
   */
  ownedPools?: () => ReadonlySet<string>;
  clock?: () => number;
  /** Called after every pass of every loop, failed or not. */
  onLoopPass?: () => void;
  /** Told the outcome of every node launch (metrics). */
  onLaunch?: (outcome: LaunchOutcome) => void;
  /** Told of leaked resources a provider took over for deletion (metrics). */
  onLeak?: (provider: string, resource: string, count: number) => void;
}

interface Running {
  config: ProviderConfig;
  /** What it read of the config beyond its entry when it started (rollouts, diskimage node keys): a change restarts it too. */
  inputs: ProviderInputs;
  provider: Provider;
  pools: PoolInfo[];
  /** The pool workers running, by pool name (a fleet member runs only the pools it owns). */
  workers: Map<string, PoolWorker>;
  /** Validates the provider's new uploads; absent when none of its diskimages has `validate:`. */
  validation: ValidationWorker | undefined;
}

export class Launcher {
  private readonly running = new Map<string, Running>();
  private readonly log: Logger;
  private readonly deleter: NodeDeleter;
  private readonly cleanup: CleanupWorker;
  /** min-ready, deleter and cleanup (pool workers have their own). */
  private readonly loops: PeriodicLoop[] = [];
  private active = false;
  /** The stop in progress or done, returned to every later stop(). */
  private stopping: Promise<void> | undefined;
  private reconciling: Promise<void> = Promise.resolve();
  private unsubscribe: (() => void) | undefined;
  /** The deleter's loop, nudged by store changes. */
  private deleterLoop: PeriodicLoop | undefined;

  constructor(private readonly deps: LauncherDeps) {
    this.log = deps.log.child({ component: 'launcher' });
    const providers = (): ReadonlyMap<string, Provider> => new Map([...this.running].map(([k, v]) => [k, v.provider]));
    this.deleter = new NodeDeleter({
      store: deps.store, log: deps.log, providers, sessionId: deps.sessionId,
      concurrency: () => deps.config().launcher.deleteConcurrency,
      fullPassEveryMs: () => deps.config().launcher.deleteInterval * 1000,
      // A static slot is registered again by then: pool workers with waiting requests take it now
      // (a SQLite store does not announce this process's own writes).
      onDeleted: () => this.nudgeWorkers(),
      ...(deps.clock ? { clock: deps.clock } : {}),
    });
    this.cleanup = new CleanupWorker({
      store: deps.store, log: deps.log, config: deps.config, providers, sessionId: deps.sessionId, clock: deps.clock ?? Date.now,
    });
  }

  /** Names of the providers running here. */
  get providerNames(): string[] {
    return [...this.running.keys()];
  }


  /** Starts the providers and the loops. */
  async start(): Promise<void> {
    this.active = true;
    // A request created by a consumer wakes every pool worker at once instead of at its next
    // interval; a node a consumer returned wakes the deleter (a quick pass, see NodeDeleter).
    this.unsubscribe = this.deps.store.onChange(() => {
      this.nudgeWorkers();
      this.deleterLoop?.nudge();
    });
    await this.reconfigure();
    const cfg = (): Config['launcher'] => this.deps.config().launcher;
    const loop = (name: string, seconds: () => number, pass: () => Promise<unknown>): PeriodicLoop =>
      new PeriodicLoop({
        name, log: this.log, intervalMs: () => seconds() * 1000, pass: async () => { await pass(); },
        ...(this.deps.onLoopPass ? { onPass: this.deps.onLoopPass } : {}),
      });
    this.deleterLoop = loop('deleter', () => cfg().deleteInterval, () => this.deleter.pass());
    this.loops.push(
      loop('min-ready', () => cfg().interval, () => this.topUp()),
      this.deleterLoop,
      loop('cleanup', () => cfg().cleanupInterval, () => this.cleanup.pass()),
    );
    for (const l of this.loops) l.start();
  }

  /** The running providers' own resource limits (cloud quotas), for metrics; a provider that fails to answer is left out. */
  async resourceLimits(): Promise<Array<{ provider: string; resource: string; limit: number }>> {
    const all = await Promise.all([...this.running].map(async ([name, r]) => {
      try {
        return Object.entries(await r.provider.resourceLimits?.() ?? {}).map(([resource, limit]) => ({ provider: name, resource, limit }));
      } catch {
        return [];
      }
    }));
    return all.flat();
  }

  /** Every loop of the launcher, pool workers included (for the heartbeat and health). */
  allLoops(): PeriodicLoop[] {
    return [...this.loops, ...[...this.running.values()].flatMap((r) => [
      ...[...r.workers.values()].map((w) => w.loop), ...(r.validation ? [r.validation.loop] : []),
    ])];
  }

  /** Health of {@link allLoops}. */
  loopHealth(): LoopHealth[] {
    return this.allLoops().map((l) => l.health);
  }

  /** Applies the current config: restarts changed providers, stops removed ones, starts new ones. */
  reconfigure(): Promise<void> {
    this.reconciling = this.reconciling.then(() => this.reconcile()).catch((err: unknown) => {
      this.log.error('applying the provider config failed', { error: coerceError(err).message });
    });
    return this.reconciling;
  }

  /** Stops the loops, the pool workers and the providers. Idempotent: a second or concurrent call returns the same promise. */
  stop(): Promise<void> {
    if (!this.active && !this.stopping) return Promise.resolve();
    this.stopping ??= this.shutdown();
    return this.stopping;
  }

  private async shutdown(): Promise<void> {
    this.active = false;
    this.unsubscribe?.();
    await Promise.all(this.loops.map((l) => l.stop()));
    // No delete starts from here on; those in flight are waited for once the providers stop.
    const deletesDone = this.deleter.stop();
    await this.reconciling;
    for (const name of [...this.running.keys()]) await this.stopProvider(name);
    await deletesDone;
    this.log.info('launcher stopped');
  }


  /** Ends the idle wait of every pool worker and validation worker. */
  private nudgeWorkers(): void {
    for (const r of this.running.values()) {
      for (const w of r.workers.values()) w.nudge();
      r.validation?.nudge();
    }
  }

  /** Every provider-pool of the config, run here or not. */
  private configuredPools(): FleetPool[] {
    return this.deps.config().providers.flatMap((p) => providerPools(p).map((pool) => ({ provider: p.name, pool })));
  }

  /** Whether pool `pool` of provider `provider` may run here. */
  private owns(provider: string, pool: string): boolean {
    return this.deps.ownedPools?.().has(poolKey({ provider, pool })) ?? true;
  }

  private async reconcile(): Promise<void> {
    const config = this.deps.config();
    const only = this.deps.only;
    const wanted = new Map(config.providers
      .filter((p) => !only?.length || only.includes(p.name))
      .filter((p) => providerPools(p).some((pool) => this.owns(p.name, pool.name)))
      .map((p) => [p.name, p]));
    for (const name of only ?? []) {
      if (!config.providers.some((p) => p.name === name)) this.log.warn('--provider names a provider that is not in the config', { provider: name });
    }
    for (const [name, r] of [...this.running]) {
      const next = wanted.get(name);
      if (next && configEquals(next, r.config) && configEquals(providerInputs(config, name), r.inputs)) {
        await this.syncWorkers(r);
        continue;
      }
      this.log.info(next ? 'provider config changed: restarting it' : 'provider removed: stopping it', { provider: name });
      await this.stopProvider(name);
    }
    if (!this.active) return;
    for (const [name, pc] of wanted) {
      if (this.running.has(name)) continue;
      await this.startProvider(pc, config);
    }
  }

  private async startProvider(pc: ProviderConfig, config: Config): Promise<void> {
    const { store, log } = this.deps;
    const provider = driverOf(pc).createProvider(pc, {
      store, log: log.child({ provider: pc.name }), clock: this.deps.clock ?? Date.now, config,
      sessionId: this.deps.sessionId, hostAccess: () => this.deps.imageServices.access(pc),
      ...(this.deps.onLeak ? { onLeak: (resource: string, count: number) => this.deps.onLeak?.(pc.name, resource, count) } : {}),
    });
    const pools = providerPools(pc);
    const entry: Running = { config: pc, inputs: providerInputs(config, pc.name), provider, pools, workers: new Map(), validation: undefined };
    this.running.set(pc.name, entry);
    try {
      await provider.start();
    } catch (err) {
      this.log.error('provider failed to start; its pools run anyway and it is retried by the cleanup', { provider: pc.name, error: coerceError(err).message });
    }
    await this.syncWorkers(entry);
    if (imageTargets(pc).some((t) => t.validate !== null)) {
      entry.validation = new ValidationWorker({
        store, log, provider, config: pc, sessionId: this.deps.sessionId, hostname: this.deps.hostname, pid: this.deps.pid,
        intervalMs: this.deps.config().launcher.interval * 1000,
        ...(this.deps.clock ? { clock: this.deps.clock } : {}),
        ...(this.deps.onLoopPass ? { onLoopPass: this.deps.onLoopPass } : {}),
      });
      entry.validation.start();
    }
    this.log.info('provider started', { provider: pc.name, driver: pc.driver, pools: [...entry.workers.keys()], validates: entry.validation !== undefined });
  }

  /** Starts the workers of the provider's pools that may run here and are not running, stops those that may not. */
  private async syncWorkers(entry: Running): Promise<void> {
    const { store, log } = this.deps;
    const pc = entry.config;
    for (const [name, worker] of [...entry.workers]) {
      if (this.owns(pc.name, name)) continue;
      entry.workers.delete(name);
      await worker.stop();
      this.log.info('pool stopped: no longer run here', { provider: pc.name, pool: name });
    }
    if (!this.active) return;
    const alive = (): number => [...entry.workers.values()].reduce((n, w) => n + w.aliveCount, 0);
    for (const pool of entry.pools) {
      if (entry.workers.has(pool.name) || !this.owns(pc.name, pool.name)) continue;
      const worker = new PoolWorker({
        store, log, provider: entry.provider, pool, launcherId: launcherId(this.deps.hostname, this.deps.pid, pc.name, pool.name),
        sessionId: this.deps.sessionId, interval: () => this.deps.config().launcher.interval,
        maxConcurrency: pc.maxConcurrency, providerAlive: alive, priority: poolPriority(pc, pool.name),
        tenantLimits: () => this.deps.config().tenantResourceLimits,
        breaker: () => breakerSettings(this.deps.config().launcher.breaker),
        ...(this.deps.clock ? { clock: this.deps.clock } : {}),
        ...(this.deps.onLoopPass ? { onLoopPass: this.deps.onLoopPass } : {}),
        ...(this.deps.onLaunch ? { onLaunch: this.deps.onLaunch } : {}),
        ...(this.deps.ownedPools ? { fleetPools: () => this.configuredPools() } : {}),
      });
      entry.workers.set(pool.name, worker);
      worker.start();
    }
  }

  private async stopProvider(name: string): Promise<void> {
    const r = this.running.get(name);
    if (!r) return;
    this.running.delete(name);
    // Validations first: their nodes go to the deleter and their locks are released for the next start.
    await r.validation?.stop();
    for (const w of r.workers.values()) await w.stop();
    await r.provider.stop().catch((err: unknown) => this.log.warn('provider stop failed', { provider: name, error: coerceError(err).message }));
    this.log.info('provider stopped', { provider: name });
  }

  private async topUp(): Promise<void> {
    await topUpMinReady({
      store: this.deps.store, log: this.log, config: this.deps.config(), sessionId: this.deps.sessionId(),
      providers: [...this.running.values()].map((r) => ({ provider: r.provider, pools: r.pools })),
      ...(this.deps.clock ? { clock: this.deps.clock } : {}),
    });
  }
}
