/**
 * The cleanup worker (Nodepool's CleanupWorker): every `launcher.cleanup-interval` seconds,
 * each task on its own so one failing does not stop the others: lapsed sessions with their
 * stale locks, launchers and ephemeral requests; each provider's leaked resources; pending
 * requests whose launcher died (back to requested); ready nodes past `max-ready-age`; held
 * nodes past their expiry or `max-hold-age`. Validation nodes are left to their validator and
 * the deleter: their `allocatedTo` names no request, so neither the lost-request reset nor
 * max-ready-age (unallocated nodes only) touches them.
 */
import type { Config } from '../../lib/config/schema.js';
import type { Provider } from '../../lib/drivers/contract/driver.js';
import { coerceError } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import type { NodeRecord } from '../../lib/store/models.js';
import type { Store } from '../../lib/store/store.js';
import { expiredHeldNodes, expiredReadyNodes } from './decisions.js';
import { lockIfFree } from './lock-if-free.js';
import { nodeLock, requestLock } from '../../lib/store/lock-names.js';

/** What the cleanup worker needs. */
export interface CleanupWorkerDeps {
  store: Store;
  log: Logger;
  config: () => Config;
  providers: () => ReadonlyMap<string, Provider>;
  sessionId: () => string;
  clock: () => number;
}

export class CleanupWorker {
  private readonly log: Logger;

  constructor(private readonly deps: CleanupWorkerDeps) {
    this.log = deps.log.child({ component: 'cleanup-worker' });
  }

  async pass(): Promise<void> {
    await this.task('stale sessions and locks', async () => {
      const reaped = await this.deps.store.reapSessions();
      if (reaped.sessions) this.log.info('reaped lapsed sessions', reaped);
    });
    for (const [name, provider] of this.deps.providers()) {
      await this.task(`leaked resources of ${name}`, () => provider.cleanupLeakedResources());
    }
    await this.task('lost requests', () => this.lostRequests());
    await this.task('max-ready-age and max-hold-age', () => this.maxAges());
  }

  private async task(what: string, fn: () => Promise<void>): Promise<void> {
    try {
      await fn();
    } catch (err) {
      this.log.warn(`cleanup of ${what} failed`, { error: coerceError(err).message });
    }
  }

  /** Pending requests whose handler's lock lapsed: nodes back to stock, request requested again. */
  private async lostRequests(): Promise<void> {
    const { store } = this.deps;
    const sessionId = this.deps.sessionId();
    for (const r of await store.listRequests({ states: ['pending'] })) {
      if (!await lockIfFree(store, requestLock(r.id), sessionId)) continue;
      try {
        const fresh = await store.getRequest(r.id);
        if (fresh?.state !== 'pending') continue;
        for (const n of await store.listNodes({ allocatedTo: r.id })) {
          if (n.state === 'ready') await store.updateNode(n.id, { allocatedTo: null });
        }
        await store.updateRequest(r.id, { state: 'requested', nodes: [] }, { expectStates: ['pending'] });
        this.log.info('lost request reset to requested (its launcher is gone)', { request: r.id });
      } finally {
        await store.unlock(requestLock(r.id), sessionId);
      }
    }
  }

  private async maxAges(): Promise<void> {
    const { store } = this.deps;
    const config = this.deps.config();
    const providers = this.deps.providers();
    const now = this.deps.clock();
    const nodes = (await store.listNodes({ states: ['ready', 'hold'] })).filter((n) => providers.has(n.provider));
    const maxReadyAge = new Map(config.labels.map((l) => [l.name, l.maxReadyAge]));
    for (const n of expiredReadyNodes(nodes, maxReadyAge, now)) await this.markDeleting(n, 'ready', 'max-ready-age reached');
    for (const n of expiredHeldNodes(nodes, config.maxHoldAge, now)) await this.markDeleting(n, 'hold', 'hold expired');
  }

  private async markDeleting(node: NodeRecord, from: 'ready' | 'hold', reason: string): Promise<void> {
    const { store } = this.deps;
    const sessionId = this.deps.sessionId();
    if (!await lockIfFree(store, nodeLock(node.id), sessionId)) return;
    try {
      const fresh = await store.getNode(node.id);
      if (fresh?.state !== from || (from === 'ready' && fresh.allocatedTo !== null)) return;
      await store.updateNode(node.id, { state: 'deleting', reason }, { expectStates: [from] });
      this.log.info('node expired', { node: node.id, reason });
    } finally {
      await store.unlock(nodeLock(node.id), sessionId);
    }
  }
}
