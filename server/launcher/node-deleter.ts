/**
 * The deleter (Nodepool's DeletedNodeWorker): every `launcher.delete-interval` seconds it
 * deletes nodes of this process's providers that are used, failed, aborted, marked deleting,
 * or abandoned (building without a live lock, in-use by a consumer session that lapsed):
 * lock → deleting → the provider's cleanupNode → record removed → nodeDeleted (a static slot
 * is registered again). Ready nodes allocated to a request that no longer exists go back to
 * stock. Validation nodes (validation-worker.ts) never go back to stock: one nobody locks is
 * deleted in any state but hold. A failed delete is retried at the next pass.
 */
import type { Provider } from '../../lib/drivers/driver.js';
import { removeNode } from '../../lib/drivers/remove-node.js';
import { coerceError } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import type { NodeRecord } from '../../lib/store/models.js';
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
  /** Deletes in flight at most (default 10). */
  maxParallel?: number;
}

/** An `init` node is only abandoned after this long (a launcher creates, then locks it). */
const INIT_GRACE_MS = 60_000;

export class NodeDeleter {
  private readonly inFlight = new Map<string, Promise<void>>();
  /** Nodes whose lock could not be asked for (the store away), warned about once. */
  private readonly lockFailing = new Set<string>();
  private readonly log: Logger;

  constructor(private readonly deps: NodeDeleterDeps) {
    this.log = deps.log.child({ component: 'node-deleter' });
  }

  /** One pass: starts deletes (up to the cap) and deallocates orphaned ready nodes. */
  async pass(): Promise<void> {
    const { store } = this.deps;
    const providers = this.deps.providers();
    const [nodes, requests] = await Promise.all([store.listNodes(), store.listRequests()]);
    const requestIds = new Set(requests.map((r) => r.id));
    const liveness = new Map<string, boolean>();
    const consumerLive = async (id: string | null): Promise<boolean> => {
      if (id === null) return true;
      if (!liveness.has(id)) liveness.set(id, await store.isSessionLive(id));
      return liveness.get(id) as boolean;
    };
    for (const node of nodes) {
      const provider = providers.get(node.provider);
      if (!provider || this.inFlight.has(node.id)) continue;
      if (node.state === 'ready' && node.allocatedTo !== null && !requestIds.has(node.allocatedTo) && mayReturnToStock(node)) {
        await this.deallocate(node);
        continue;
      }
      if (node.state === 'init' && Date.now() - node.stateTime < INIT_GRACE_MS) continue; // being created right now
      if (deleterVerdictWithValidation(node, await consumerLive(node.consumerSession)) !== 'delete') continue;
      if (this.inFlight.size >= (this.deps.maxParallel ?? 10)) break;
      const p = this.delete(node, provider).finally(() => this.inFlight.delete(node.id));
      this.inFlight.set(node.id, p);
    }
  }

  /** Resolves when every delete started so far has finished. */
  async settled(): Promise<void> {
    await Promise.all([...this.inFlight.values()]);
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
    try {
      const locked = await lockIfFree(store, lock, sessionId);
      this.lockFailing.delete(node.id);
      if (!locked) return; // owned by a live launcher or consumer
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
      if (!fresh || deleterVerdictWithValidation(fresh, fresh.consumerSession === null || await store.isSessionLive(fresh.consumerSession)) !== 'delete') {
        await store.unlock(lock, sessionId);
        return;
      }
      const deleting = fresh.state === 'deleting' ? fresh : await store.updateNode(fresh.id, { state: 'deleting' }) ?? fresh;
      log.info('deleting node', { was: fresh.state, externalId: fresh.externalId, reason: fresh.reason });
      await removeNode(store, provider, deleting);
      log.info('node deleted');
    } catch (err) {
      log.warn('node delete failed; retrying at the next pass', { error: coerceError(err).message });
      await store.unlock(lock, sessionId).catch(() => undefined);
    }
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
