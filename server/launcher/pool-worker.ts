/**
 * A PoolWorker per provider-pool: registers itself as a launcher, takes requested node
 * requests in order (priority, then age) under a store lock, runs the generic request
 * handler for each, and polls the running ones until they finish. A paused handler (no room)
 * blocks new requests for this pool until it can go on — the pool pauses instead of failing.
 */
import type { PoolInfo, Provider } from '../../lib/drivers/driver.js';
import { coerceError } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import { PeriodicLoop } from '../../lib/periodic-loop.js';
import type { NodeRecord, NodeRequestRecord } from '../../lib/store/models.js';
import type { Store } from '../../lib/store/store.js';
import { yieldsToPreferredProvider } from './decisions.js';
import { lockIfFree } from './lock-if-free.js';
import { NodeRequestHandler, type LaunchOutcome } from './request-handler.js';
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
  /** The provider's max-concurrency (-1 unlimited, 0 handles nothing). */
  maxConcurrency: number;
  /** Launches in flight across all pools of the provider. */
  providerAlive: () => number;
  /** Called after every pass, failed or not. */
  onLoopPass?: () => void;
  /** Told the outcome of every node launch (metrics). */
  onLaunch?: (outcome: LaunchOutcome) => void;
}

/** A request of a chunk after its lock was tried: `fresh` is it read again under the lock. */
interface LockedRequest {
  id: string;
  locked: boolean;
  fresh: NodeRequestRecord | undefined;
}

/** Request handlers a pass runs at once (and requests it locks at once). */
const PARALLEL_RUNS = 8;

export class PoolWorker {
  private readonly handlers: NodeRequestHandler[] = [];
  private paused: NodeRequestHandler | undefined;
  private running = false;
  /** Runs the passes (named `pool-worker:<provider>/<pool>`); its health goes into the heartbeat. */
  readonly loop: PeriodicLoop;
  private readonly log: Logger;
  private lastRegistered = 0;
  /** Ready nodes of the pool, read once per pass when a handler first asks. */
  private snapshot: NodeRecord[] | undefined;

  constructor(private readonly deps: PoolWorkerDeps) {
    this.log = deps.log.child({ component: 'pool-worker', provider: deps.provider.name, pool: deps.pool.name });
    this.loop = new PeriodicLoop({
      name: `pool-worker:${deps.provider.name}/${deps.pool.name}`, log: this.log,
      intervalMs: () => deps.interval() * 1000, pass: () => this.pass(), backoff: { initialMs: 1000, maxMs: 30_000 },
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

  /** Stops: running requests are handed back (requested again) and the registration removed. */
  async stop(): Promise<void> {
    if (!this.running) return;
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
    return busy;
  }

  /**
   * Locks the requests of `chunk` at once and reads each one locked again. Thrown: the first
   * error, once every lock taken here has been released again.
   */
  private async lockChunk(chunk: readonly NodeRequestRecord[], sessionId: string): Promise<LockedRequest[]> {
    const { store } = this.deps;
    const settled = await Promise.allSettled(chunk.map(async (r): Promise<LockedRequest> => {
      if (!await lockIfFree(store, requestLock(r.id), sessionId)) return { id: r.id, locked: false, fresh: undefined };
      try {
        return { id: r.id, locked: true, fresh: await store.getRequest(r.id) };
      } catch (err) {
        await store.unlock(requestLock(r.id), sessionId).catch(() => undefined);
        throw err;
      }
    }));
    const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    const taken = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    if (failed) {
      await this.unlockAll(taken, sessionId).catch(() => undefined);
      throw failed.reason;
    }
    return taken;
  }

  private async unlockAll(taken: readonly LockedRequest[], sessionId: string): Promise<void> {
    await Promise.all(taken.filter((t) => t.locked).map((t) => this.deps.store.unlock(requestLock(t.id), sessionId)));
  }

  private async register(): Promise<void> {
    const now = Date.now();
    if (now - this.lastRegistered < 5000) return;
    await this.deps.store.registerLauncher({
      id: this.deps.launcherId, sessionId: this.deps.sessionId(), provider: this.deps.provider.name,
      pool: this.deps.pool.name, supportedLabels: [...this.deps.pool.labels],
    });
    this.lastRegistered = now;
  }

  private async readyCandidates(label: string): Promise<NodeRecord[]> {
    const { store, provider, pool } = this.deps;
    this.snapshot ??= await store.listNodes({ provider: provider.name, pool: pool.name, states: ['ready'] });
    return this.snapshot.filter((n) => n.state === 'ready' && n.allocatedTo === null && n.labels.includes(label));
  }

  /**
   * Takes requested requests in order until one pauses or max-concurrency is reached. Up to
   * {@link PARALLEL_RUNS} handlers run at once (their reuse checks are I/O); a handler whose
   * launches are already complete (reuse only) is finished at once.
   */
  private async assign(): Promise<boolean> {
    const { store, provider, pool, launcherId, maxConcurrency } = this.deps;
    if (maxConcurrency === 0) return false;
    const requests = await store.listRequests({ states: ['requested'] });
    const mine = requests.filter((r) => !r.declinedBy.includes(launcherId));
    if (mine.length === 0) return false;
    const launchers = requests.some((r) => r.provider) ? await store.listLaunchers() : [];
    let busy = false;
    let batch: NodeRequestHandler[] = [];
    const runBatch = async (): Promise<void> => {
      await Promise.all(batch.map(async (h) => {
        await h.run();
        if (!h.paused && !h.done) await h.poll();
        if (!h.done) this.handlers.push(h);
      }));
      this.paused ??= batch.find((h) => h.paused);
      batch = [];
    };
    // Requests are locked (and read again) a chunk at a time, all of the chunk at once; they are
    // then taken in order exactly as one at a time would, and locks a stop leaves unused are released.
    let at = 0;
    while (at < mine.length && this.running && !this.paused) {
      const room = maxConcurrency > 0 ? maxConcurrency - this.deps.providerAlive() : PARALLEL_RUNS;
      if (room <= 0) break;
      const chunk: NodeRequestRecord[] = [];
      while (at < mine.length && chunk.length < Math.min(room, PARALLEL_RUNS)) {
        const r = mine[at++] as NodeRequestRecord;
        if (!yieldsToPreferredProvider(r, provider.name, launchers)) chunk.push(r);
      }
      const sessionId = this.deps.sessionId();
      const taken = await this.lockChunk(chunk, sessionId);
      for (let i = 0; i < taken.length; i++) {
        const t = taken[i] as LockedRequest;
        if (!t.locked) continue;
        if (!this.running || this.paused || (maxConcurrency > 0 && this.deps.providerAlive() >= maxConcurrency)) {
          await this.unlockAll(taken.slice(i), sessionId);
          break;
        }
        if (t.fresh?.state !== 'requested') {
          await store.unlock(requestLock(t.id), sessionId);
          continue;
        }
        const handler = new NodeRequestHandler({
          store, log: this.log, launcherId, sessionId, provider, pool, readyCandidates: (label) => this.readyCandidates(label),
          // Every record of the pool, in any state, may still exist in the provider: all count against max-servers.
          poolNodeCount: async () => (await store.listNodes({ provider: provider.name, pool: pool.name })).length,
          ...(this.deps.onLaunch ? { onLaunch: this.deps.onLaunch } : {}),
        }, t.fresh);
        batch.push(handler);
        busy = true;
        // Handlers that may launch run one at a time, so max-servers and quota see each new node.
        if (batch.length >= PARALLEL_RUNS || handler.canLaunch) await runBatch();
      }
    }
    if (batch.length) await runBatch();
    return busy;
  }
}
