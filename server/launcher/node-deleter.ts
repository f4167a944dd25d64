/**
 * The deleter (Nodepool's DeletedNodeWorker): deletes nodes of this process's providers that
 * are used, failed, aborted, marked deleting, or abandoned (building without a live lock,
 * in-use by a consumer session that lapsed): lock → deleting → the provider's cleanupNode →
 * record removed → nodeDeleted (a static slot is registered again at once; a provider whose
 * cleanup deletes nothing, static, skips the `deleting` write). Ready nodes
 * allocated to a request that no longer exists go back to stock. Validation nodes
 * (validation-worker.ts) never go back to stock: one nobody locks is deleted in any state but
 * hold. A failed delete is retried at the next pass.
 *
 * Two kinds of pass: a quick one whenever the store tells of a change (the launcher calls
 * {@link NodeDeleter.pass} on each wake), which takes nodes already returned (used, failed,
 * aborted, deleting), and a full one every `delete-interval` (the backstop: abandonment,
 * orphaned allocations, validation nodes), which needs lock and session checks the quick one
 * leaves out so a wake costs one read. Deletes run up to `delete-concurrency` at once with no
 * per-pass cap: one finishing starts the next waiting one at once; a node is never deleted
 * twice at the same time.
 */
import type { Provider } from '../../lib/drivers/contract/driver.js';
import { removeNode } from '../../lib/drivers/core/remove-node.js';
import { coerceError } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import type { NodeRecord, NodeState } from '../../lib/store/models.js';
import type { Store } from '../../lib/store/store.js';
import { deleterVerdictWithValidation, mayReturnToStock } from './validation-decisions.js';
import { lockIfFree } from './lock-if-free.js';
import { nodeLock } from '../../lib/store/lock-names.js';

/** What the deleter needs. */
export interface NodeDeleterDeps {
  store: Store;
  log: Logger;
  /** This process's running providers by name. */
  providers: () => ReadonlyMap<string, Provider>;
  sessionId: () => string;
  /** Deletes in flight at most (`launcher.delete-concurrency`, read at each start; default 10). */
  concurrency?: () => number;
  /**
   * Ms between full passes (`launcher.delete-interval`); passes in between are quick ones.
   * Absent: every pass is a full one.
   */
  fullPassEveryMs?: () => number;
  /** Told when a node is gone (a static slot may be ready again: pool workers look at once). */
  onDeleted?: (node: NodeRecord) => void;
  clock?: () => number;
}

/** An `init` node is only abandoned after this long (a launcher creates, then locks it). */
const INIT_GRACE_MS = 60_000;

/** States a node is returned in: what a quick pass takes (no lock or session check needed to find them). */
export const RETURNED_STATES: readonly NodeState[] = ['used', 'failed', 'aborted', 'deleting'];

interface Waiting { node: NodeRecord; provider: Provider }

export class NodeDeleter {
  private readonly inFlight = new Map<string, Promise<void>>();
  /** Nodes the last pass found to delete that wait for a place (pass order); replaced by each pass. */
  private waiting = new Map<string, Waiting>();
  /**
   * Nodes whose lock another held at our last try. A quick pass reads their lock before trying
   * again: a refused try writes (a ZooKeeper contender made and removed), and those writes wake
   * the deleter again, which must not spin while a consumer or a CLI holds a node.
   */
  private readonly refused = new Set<string>();
  /** Nodes in flight that a pass met meanwhile (a change woke it: maybe the lock it tries was freed). */
  private readonly metInFlight = new Set<string>();
  /** Nodes whose lock could not be asked for (the store away), warned about once. */
  private readonly lockFailing = new Set<string>();
  private readonly log: Logger;
  private readonly clock: () => number;
  private lastFull = -Infinity;
  private stopped = false;

  constructor(private readonly deps: NodeDeleterDeps) {
    this.log = deps.log.child({ component: 'node-deleter' });
    this.clock = deps.clock ?? Date.now;
  }

  /** Deletes in flight now. */
  get inFlightCount(): number {
    return this.inFlight.size;
  }

  /**
   * One pass, full or quick (see the file's comment): finds the nodes to delete and starts as
   * many as there is room for; the rest start as running ones finish. A full pass also returns
   * orphaned ready nodes to stock.
   */
  async pass(): Promise<void> {
    if (this.stopped) return;
    const every = this.deps.fullPassEveryMs?.();
    const full = every === undefined || this.clock() - this.lastFull >= every;
    if (full) this.lastFull = this.clock();
    const { store } = this.deps;
    const providers = this.deps.providers();
    const nodes = await store.listNodes(full ? undefined : { states: [...RETURNED_STATES] });
    let requestIds: Promise<Set<string>> | undefined;
    const liveness = new Map<string, boolean>();
    const consumerLive = async (node: NodeRecord): Promise<boolean> => {
      const id = node.consumerSession;
      if (id === null || node.state !== 'in-use') return true; // only an in-use node's verdict asks
      if (!liveness.has(id)) liveness.set(id, await store.isSessionLive(id));
      return liveness.get(id) as boolean;
    };
    const found = new Map<string, Waiting>();
    for (const node of nodes) {
      const provider = providers.get(node.provider);
      if (!provider) continue;
      if (this.inFlight.has(node.id)) {
        this.metInFlight.add(node.id);
        continue;
      }
      if (full && node.state === 'ready' && node.allocatedTo !== null && mayReturnToStock(node)) {
        // Requests are read only when a pass meets an allocated ready node (rare outside a burst).
        requestIds ??= store.listRequests().then((rs) => new Set(rs.map((r) => r.id)));
        if (!(await requestIds).has(node.allocatedTo)) await this.deallocate(node);
        continue;
      }
      if (node.state === 'init' && this.clock() - node.stateTime < INIT_GRACE_MS) continue; // being created right now
      if (deleterVerdictWithValidation(node, await consumerLive(node)) !== 'delete') continue;
      if (!full && this.refused.has(node.id) && (await store.getLock(nodeLock(node.id)))?.live) continue;
      found.set(node.id, { node, provider });
    }
    // A quick pass sees only returned nodes: older finds of a full pass (abandoned ones) stay queued.
    if (!full) for (const [id, w] of this.waiting) if (!found.has(id) && !RETURNED_STATES.includes(w.node.state)) found.set(id, w);
    this.waiting = found;
    this.startWaiting();
  }

  /** Resolves when no delete is in flight or waiting for a place (those that wait are started meanwhile). */
  async settled(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight.values()]);
  }

  /** Starts no more deletes (the waiting ones are dropped) and waits for the running ones. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.waiting.clear();
    await this.settled();
  }

  /** Starts waiting deletes while there is room. */
  private startWaiting(): void {
    const limit = Math.max(1, this.deps.concurrency?.() ?? 10);
    for (const [id, w] of this.waiting) {
      if (this.stopped || this.inFlight.size >= limit) return;
      this.waiting.delete(id);
      if (this.inFlight.has(id)) continue;
      const p = this.delete(w.node, w.provider).finally(() => {
        this.inFlight.delete(id);
        this.metInFlight.delete(id);
        this.startWaiting();
      });
      this.inFlight.set(id, p);
    }
  }

  /**
   * Deletes one node under its lock. Runs in the background (kept in `inFlight`), so it never
   * rejects: any failure, taking the lock included (the store unreachable), is logged and the
   * node is tried again at the next pass.
   */
  private async delete(node: NodeRecord, provider: Provider): Promise<void> {
    const { store } = this.deps;
    const sessionId = this.deps.sessionId();
    const lock = nodeLock(node.id);
    const log = this.log.child({ node: node.id, provider: node.provider });
    if (provider.cleanupFree && await this.deleteIdle(node, provider, log)) return;
    try {
      const locked = await lockIfFree(store, lock, sessionId);
      this.lockFailing.delete(node.id);
      if (!locked) { // owned by a live launcher or consumer
        // A consumer marks a node used, then unlocks it: when the unlock's wake came while this
        // try ran, nothing wakes the deleter again, so the lock is read and tried again if free.
        if (this.metInFlight.delete(node.id) && !(await store.getLock(lock))?.live) return await this.delete(node, provider);
        if (this.refused.size >= 1000) this.refused.clear();
        this.refused.add(node.id);
        return;
      }
      this.refused.delete(node.id);
    } catch (err) {
      // Every pass meets it again while the store is away: told once per node, then at debug.
      const level = this.lockFailing.has(node.id) ? 'debug' : 'warn';
      if (this.lockFailing.size >= 1000) this.lockFailing.clear();
      this.lockFailing.add(node.id);
      log.log(level, 'could not lock the node to delete it; retrying at the next pass', { error: coerceError(err).message });
      return;
    }
    try {
      const fresh = await store.getNode(node.id);
      // Only an in-use node's verdict depends on its consumer's session: others skip that read.
      const live = fresh?.state !== 'in-use' || fresh.consumerSession === null || await store.isSessionLive(fresh.consumerSession);
      if (!fresh || deleterVerdictWithValidation(fresh, live) !== 'delete') {
        await store.unlock(lock, sessionId);
        return;
      }
      // A provider with nothing to clean up (static) leaves nothing half-deleted: no `deleting` write.
      const deleting = fresh.state === 'deleting' || provider.cleanupFree ? fresh : await store.updateNode(fresh.id, { state: 'deleting' }) ?? fresh;
      log.info('deleting node', { was: fresh.state, externalId: fresh.externalId, reason: fresh.reason });
      await removeNode(store, provider, deleting);
      log.info('node deleted');
      this.deps.onDeleted?.(deleting);
    } catch (err) {
      log.warn('node delete failed; retrying at the next pass', { error: coerceError(err).message });
      await store.unlock(lock, sessionId).catch(() => undefined);
    }
  }

  /**
   * A node whose provider cleans up nothing (static) goes in one store step when nobody holds
   * its lock and it is still as listed (no lock taken, no read: on ZooKeeper one round trip
   * instead of four). True when that settled it; false leaves it to the way through the lock
   * (locked, changed since the list, or the store failed). The pass that queued the node gave
   * this very record its verdict already.
   */
  private async deleteIdle(node: NodeRecord, provider: Provider, log: Logger): Promise<boolean> {
    try {
      const outcome = await this.deps.store.deleteNodeIfIdle(node);
      if (outcome === 'gone') return true;
      if (outcome !== 'deleted') return false;
    } catch {
      return false;
    }
    this.refused.delete(node.id);
    log.info('deleting node', { was: node.state, externalId: node.externalId, reason: node.reason });
    try {
      await provider.nodeDeleted(node);
      log.info('node deleted');
    } catch (err) {
      log.warn('node deleted; its provider failed to take it back', { error: coerceError(err).message });
    }
    this.deps.onDeleted?.(node);
    return true;
  }

  private async deallocate(node: NodeRecord): Promise<void> {
    const { store } = this.deps;
    const sessionId = this.deps.sessionId();
    if (!await lockIfFree(store, nodeLock(node.id), sessionId)) return;
    try {
      const fresh = await store.getNode(node.id);
      if (fresh?.state === 'ready' && fresh.allocatedTo === node.allocatedTo && mayReturnToStock(fresh)) {
        await store.updateNode(node.id, { allocatedTo: null });
        this.log.info('node returned to stock: its request is gone', { node: node.id, request: node.allocatedTo });
      }
    } finally {
      await store.unlock(nodeLock(node.id), sessionId);
    }
  }
}
