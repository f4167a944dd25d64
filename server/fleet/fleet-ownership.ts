/**
 * Pool ownership of a fleet member (issue 35 §1, docs/fleet.md): a nodepool-server started
 * without `--provider` runs only the provider-pools whose lease it holds. Every pass (1 s) it
 * reads the live members (store sessions of owner {@link FLEET_SESSION_OWNER}), the leases
 * (`fleet-pool:<provider>/<pool>` locks) and the launcher registrations (pools that a server
 * outside the fleet registers are left to it), plans with ownership-plan.ts and carries the
 * plan out: stop first, then release, then take and start. On ZooKeeper a guard checks the
 * session every second without store I/O: a session the server has not confirmed for 3/4 of
 * its timeout may already be gone, so every pool stops before another member can take it.
 */
import type { Config } from '../../lib/config/schema.js';
import { providerPools } from '../../lib/drivers/config-registry.js';
import { poolKey } from '../../lib/fleet/placement.js';
import { coerceError } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import { PeriodicLoop } from '../../lib/periodic-loop.js';
import { FLEET_POOL_LOCK_PREFIX, fleetPoolLock } from '../../lib/store/lock-names.js';
import type { Store } from '../../lib/store/store.js';
import { planOwnership } from './ownership-plan.js';

/** The store session owner of a fleet member (a fixed server's is `nodepool-server`). */
export const FLEET_SESSION_OWNER = 'nodepool-server (fleet)';

/** How often a member looks at ownership, and its guard at its session. */
export const FLEET_PASS_MS = 1000;

/** What the ownership loop needs. */
export interface FleetOwnershipDeps {
  store: Store;
  log: Logger;
  config: () => Config;
  /** The server's store session (read at every use: a lapsed one is replaced). */
  sessionId: () => string;
  /** The session's granted timeout, ms. */
  sessionTimeoutMs: () => number;
  /**
   * When the store's server last confirmed the session (epoch ms): a networked store's
   * (ZooKeeper's). Absent for a store of this host alone (SQLite), whose session lapses only
   * when this process stalls, and then its guard is stalled too: no guard.
   */
  confirmedAt?: () => number;
  /** Applies a change of {@link FleetOwnership.owned} (the launcher's reconfigure). */
  apply: () => Promise<void>;
  clock?: () => number;
  onLoopPass?: () => void;
  /**
   * A store only this host uses (SQLite): a member session of this hostname whose process is
   * gone (killed with -9) is ended at once, so its restart runs the pools without waiting for
   * the session to lapse.
   */
  localHost?: { hostname: string };
}

/** Whether process `pid` of this host exists (EPERM: it does, as another user's). */
function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export class FleetOwnership {
  /** The pools the launcher may run here. */
  private readonly owned = new Set<string>();
  private readonly log: Logger;
  private readonly clock: () => number;
  readonly loop: PeriodicLoop;
  private guard: NodeJS.Timeout | undefined;
  /** Pools owned here whose lease another session holds, each logged once per wait. */
  private readonly waiting = new Set<string>();

  constructor(private readonly deps: FleetOwnershipDeps) {
    this.log = deps.log.child({ component: 'fleet' });
    this.clock = deps.clock ?? Date.now;
    this.loop = new PeriodicLoop({
      name: 'fleet-ownership', log: this.log, intervalMs: () => FLEET_PASS_MS, pass: () => this.pass(),
      ...(deps.onLoopPass ? { onPass: deps.onLoopPass } : {}),
    });
  }

  /** The pools this member may run now (the launcher's `ownedPools`). */
  readonly ownedPools = (): ReadonlySet<string> => this.owned;

  start(): void {
    this.loop.start();
    this.guard = setInterval(() => {
      if (this.owned.size && !this.confirmed()) void this.giveUpAll('the store has not confirmed this server\'s session for 3/4 of its timeout');
    }, FLEET_PASS_MS);
    this.guard.unref();
  }

  /** Stops the loop and every pool, and releases the leases (the session's close would too). */
  async stop(): Promise<void> {
    clearInterval(this.guard);
    await this.loop.stop();
    const held = [...this.owned];
    this.owned.clear();
    await this.deps.apply();
    const me = this.deps.sessionId();
    for (const pool of held) await this.deps.store.unlock(fleetPoolLock(pool), me).catch(() => false);
  }

  private confirmed(): boolean {
    const at = this.deps.confirmedAt?.();
    return at === undefined || this.clock() - at < this.deps.sessionTimeoutMs() * 0.75;
  }

  private async giveUpAll(why: string): Promise<void> {
    if (!this.owned.size) return;
    this.log.error('stopping every pool of this fleet member', { why, pools: [...this.owned] });
    this.owned.clear();
    await this.deps.apply();
  }

  /** One pass: read, plan, stop, release, take, start. */
  async pass(): Promise<void> {
    const { store } = this.deps;
    const me = this.deps.sessionId();
    if (!this.confirmed()) {
      await this.giveUpAll('the store has not confirmed this server\'s session for 3/4 of its timeout');
      return;
    }
    const now = this.clock();
    const [sessions, locks, launchers] = await Promise.all([store.listSessions(), store.listLocks(FLEET_POOL_LOCK_PREFIX), store.listLaunchers()]);
    const live = sessions.filter((s) => s.owner === FLEET_SESSION_OWNER && now - s.renewed <= s.ttlMs);
    const local = this.deps.localHost;
    if (local) {
      const dead = live.filter((s) => s.id !== me && s.hostname === local.hostname && s.pid !== process.pid && !pidAlive(s.pid));
      for (const s of dead) {
        await store.closeSession(s.id);
        this.log.warn('ended the session of a fleet member on this host whose process is gone', { session: s.id, pid: s.pid });
      }
      // Read again: the ended sessions' leases and registrations went with them.
      if (dead.length) return this.pass();
    }
    const members = live.map((s) => s.id);
    const memberSet = new Set([...members, me]);
    const leases = new Map(locks.filter((l) => l.live).map((l) => [l.resource.slice(FLEET_POOL_LOCK_PREFIX.length), l.sessionId]));
    const fixed = new Set(launchers.filter((l) => !memberSet.has(l.sessionId)).map((l) => poolKey(l)));
    const pools = this.deps.config().providers.flatMap((p) => providerPools(p).map((pool) => poolKey({ provider: p.name, pool: pool.name })));
    const plan = planOwnership({ me, members, pools, fixed, leases, running: new Set(this.owned), confirmed: true });
    if (plan.stop.length) {
      for (const pool of plan.stop) this.owned.delete(pool);
      await this.deps.apply();
      this.log.info('pools stopped here', { pools: plan.stop });
    }
    for (const pool of plan.release) await store.unlock(fleetPoolLock(pool), me);
    const started: string[] = [...plan.start];
    for (const pool of plan.take) {
      try {
        if (await store.tryLock(fleetPoolLock(pool), me)) started.push(pool);
      } catch (err) {
        this.log.warn('taking a pool lease failed', { pool, error: coerceError(err).message });
      }
    }
    for (const pool of plan.waiting) {
      if (this.waiting.has(pool)) continue;
      this.waiting.add(pool);
      this.log.info('waiting for the lease of a pool this member owns (its holder stops it, or its session lapses)', { pool, holder: leases.get(pool) });
    }
    for (const pool of this.waiting) if (!plan.waiting.includes(pool)) this.waiting.delete(pool);
    if (started.length) {
      for (const pool of started) this.owned.add(pool);
      await this.deps.apply();
      this.log.info('pools run here', { pools: started, members: memberSet.size });
    }
  }
}
