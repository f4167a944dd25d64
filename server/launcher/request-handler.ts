/**
 * The generic request algorithm (Nodepool's NodeRequestHandler), shared by every driver: a
 * pool worker runs one of these per request it has locked. `run()` declines what the pool
 * cannot serve, else marks the request pending and fills its node set — reusing ready nodes
 * first, launching new ones while there is room, pausing when there is none; `poll()`
 * finishes it once every launch has an outcome: fulfilled, paused for a relaunch of aborted
 * nodes, or declined after a failure (another provider may try; it fails only when every
 * launcher has declined). Re-entrant: a paused handler's `run()` is called again.
 */
import type { RequestHandler } from '../../lib/drivers/contract/driver.js';
import { coerceError, isStoreUnreachable, StateConflictError } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import type { NodeRecord, NodeRequestRecord } from '../../lib/store/models.js';
import { declinableStates, declineReason, MIN_READY_REQUESTOR, stateAfterDecline } from './decisions.js';
import { freeOldestUnused } from './free-room.js';
import { relockAll } from './relock.js';
import { releaseNodeSet } from './release-node-set.js';
import type { RequestHandlerDeps } from './request-handler-types.js';
import { requestResources } from './request-resources.js';
import { reuseReadyNode } from './reuse-ready-node.js';
import { nodeLock, requestLock } from '../../lib/store/lock-names.js';

export class NodeRequestHandler {
  /** True while waiting for room; the pool worker takes no new requests meanwhile. */
  paused = false;
  done = false;
  /** Node ids per requested label slot; null until filled. */
  private readonly slots: Array<string | null>;
  private readonly driver: RequestHandler;
  private readonly log: Logger;
  private started = false;
  /** Nodes this handler launched whose outcome is not reported yet, with their label. */
  private readonly launched = new Map<string, string>();
  /** Nodes this handler took ready from stock (allocated under their lock). */
  private readonly reused = new Set<string>();
  /** The store session the request lock and the node locks are held under. */
  private lockedUnder: string;
  /** Locks taken again under a new session so far (see holdsLocks). */
  private readonly relocked = new Set<string>();

  constructor(private readonly deps: RequestHandlerDeps, private request: NodeRequestRecord) {
    this.slots = request.labels.map(() => null);
    this.driver = deps.provider.getRequestHandler(deps.pool.name, request);
    this.log = deps.log.child({ request: request.id });
    this.lockedUnder = deps.sessionId();
  }

  get id(): string {
    return this.request.id;
  }

  /** The store session this handler holds its locks under (the pool worker locks the request with it). */
  get session(): string {
    return this.lockedUnder;
  }

  /** The request's Zuul tenant (`tenant_name`), whose `tenant-resource-limits` apply; null when none. */
  get tenantName(): string | null {
    return this.request.tenantName ?? null;
  }

  /**
   * What this pool needs for the whole request (the sum over its labels of the driver's
   * labelResources); undefined when the driver cannot tell (the request is then not limited).
   */
  async resourcesNeeded(): Promise<Record<string, number> | undefined> {
    return requestResources(this.driver, this.request.labels);
  }

  /** Whether the driver may launch nodes for it (else it only reuses registered ones). */
  get canLaunch(): boolean {
    return this.driver.canLaunch;
  }

  /** Launches still running (for max-concurrency). */
  get aliveCount(): number {
    return this.driver.aliveCount;
  }

  /** Declines, or marks pending and fills the node set. Any error declines. */
  async run(): Promise<void> {
    if (!await this.holdsLocks()) return;
    try {
      if (this.started && await this.vanished()) return;
      if (!this.started) {
        this.started = true;
        const reason = declineReason(this.request, this.deps.pool)
          ?? (await this.driver.imagesAvailable() ? null : 'images are not available')
          ?? (await this.driver.hasProviderQuota(this.request.labels) ? null : 'it would exceed quota');
        // The request is the pool worker's listed copy, not read again under the lock: a decline
        // now applies only if it is still requested, and it is marked pending only if it is still
        // requested (a conditional write); else it was taken or ended meanwhile and is left alone.
        if (reason) return await this.decline(reason);
        // A driver that only reuses nodes takes ready ones first: taking a node has no effect
        // outside the store and is undone (deallocated, unlocked) when the request turns out not
        // to be ours. When that fills it, the request goes from requested to fulfilled in one
        // conditional write, never marked pending (one write, and one read by every watcher,
        // less per request under churn; Zuul waits for fulfilled or failed only). Launching
        // drivers (cloud side effects) and min-ready requests (which may decline while
        // filling) mark it pending first.
        const early = !this.driver.canLaunch && this.request.reuse && this.request.requestor !== MIN_READY_REQUESTOR && this.request.state === 'requested';
        if (early) await this.reuseAll();
        if (!early || this.slots.includes(null)) {
          const marked = await this.markPending();
          if (!marked) {
            await this.releaseNodes(true);
            return await this.finish();
          }
          this.request = marked;
        }
      }
      await this.fillNodeSet();
    } catch (err) {
      const e = coerceError(err);
      if (isStoreUnreachable(e)) {
        // Not the request's fault, and a decline written a moment later (the store back) could
        // fail a request that only this launcher serves: tried again at the next pass instead
        // (re-entry drops a request that was never marked pending, see vanished).
        this.log.warn('the store did not answer while handling the request; trying again at the next pass', { error: e.message });
        this.paused = true;
        return;
      }
      this.log.error('request handling failed; declining', { error: e.message });
      this.paused = false;
      await this.decline(`error: ${e.message}`).catch((e2: unknown) => this.log.error('decline failed', { error: coerceError(e2).message }));
    }
  }

  /** Whether its locks are held under the current store session (relock.ts); false to wait, or when done. */
  private async holdsLocks(): Promise<boolean> {
    const now = this.deps.sessionId();
    if (now === this.lockedUnder || this.done) return true;
    const outcome = await relockAll({
      store: this.deps.store, log: this.log, requestId: this.request.id, slots: this.slots,
      old: this.lockedUnder, now, relocked: this.relocked,
      onLostNode: (i) => {
        const id = this.slots[i];
        this.slots[i] = null;
        if (id) this.reused.delete(id);
      },
    });
    if (outcome === 'wait') return false;
    this.relocked.clear();
    if (outcome === 'left') {
      this.done = true;
      this.paused = false;
      return false;
    }
    this.lockedUnder = now;
    return true;
  }

  /**
   * At a re-entry (a paused handler run again): a request deleted meanwhile, or no longer
   * pending (failed, or handed back by someone), is not filled any more: its nodes are
   * released and the handler is done, so the pool worker takes other requests again.
   */
  private async vanished(): Promise<boolean> {
    const current = await this.deps.store.getRequest(this.request.id);
    if (current?.state === 'pending') return false;
    this.log.info(current ? 'request no longer pending; dropping it' : 'request vanished; releasing its nodes', { state: current?.state ?? null });
    await this.releaseNodes(true);
    await this.finish();
    return true;
  }

  /** Marks the request pending if it is still requested; undefined when it is not (or gone). */
  private async markPending(): Promise<NodeRequestRecord | undefined> {
    try {
      return await this.deps.store.updateRequest(this.request.id, { state: 'pending' }, { expectStates: ['requested'] });
    } catch (err) {
      if (!(err instanceof StateConflictError)) throw err;
      this.log.debug('request no longer requested; leaving it', { state: err.actualState });
      return undefined;
    }
  }

  /** Fills every empty slot it can with a ready node (no launches, no pausing). */
  private async reuseAll(): Promise<void> {
    for (let i = 0; i < this.slots.length; i++) {
      if (this.slots[i] === null) await this.reuse(i, this.request.labels[i] as string);
    }
  }

  /** True when the request is finished (fulfilled, declined or gone). */
  async poll(): Promise<boolean> {
    if (this.done) return true;
    if (!await this.holdsLocks()) return this.done;
    if (this.paused || !this.driver.launchesComplete()) return false;
    try {
      return await this.complete();
    } catch (err) {
      this.log.error('finishing the request failed; declining', { error: coerceError(err).message });
      await this.decline(`error: ${coerceError(err).message}`);
      return true;
    }
  }

  /** Gives up the request without deciding (pool worker stopping): nodes and request are unlocked. */
  async abandon(): Promise<void> {
    if (this.done) return;
    const { store } = this.deps;
    await this.releaseNodes(true);
    await store.updateRequest(this.request.id, { state: 'requested', nodes: [] }, { expectStates: ['pending'] }).catch(() => undefined);
    await this.finish();
  }

  private async fillNodeSet(): Promise<void> {
    const { store, pool, provider, launcherId } = this.deps;
    const sessionId = this.lockedUnder;
    this.paused = false;
    for (let i = 0; i < this.slots.length; i++) {
      if (this.slots[i] !== null) continue;
      const label = this.request.labels[i] as string;
      if (this.request.reuse && await this.reuse(i, label)) continue;
      const room = this.driver.canLaunch
        && await this.deps.poolNodeCount() < pool.maxServers
        && await this.driver.hasRemainingQuota(label);
      if (!room) {
        if (this.request.requestor === MIN_READY_REQUESTOR) return this.decline('no capacity for a min-ready node');
        this.paused = true;
        this.log.debug('pausing: no room for a node', { label });
        if (this.driver.canLaunch) await freeOldestUnused({ store, log: this.log, provider: provider.name, pool: pool.name, sessionId });
        return;
      }
      const node = await store.createNode({
        state: 'init', provider: provider.name, pool: pool.name, labels: [label], launcher: launcherId,
        allocatedTo: this.request.id, attributes: { ...pool.nodeAttributes }, ...this.owner(), ...this.driver.nodeMetadata(label),
      });
      await store.tryLock(nodeLock(node.id), sessionId);
      const building = await store.updateNode(node.id, { state: 'building' }, { expectStates: ['init'] });
      this.slots[i] = node.id;
      this.launched.set(node.id, label);
      this.log.info('launching node', { node: node.id, label });
      this.driver.launch(building ?? node);
    }
  }

  /** Who a node allocated to the request belongs to (Nodepool 11 copies tenant_name and requestor onto it). */
  private owner(): { tenantName: string | null; requestor: string } {
    return { tenantName: this.request.tenantName ?? null, requestor: this.request.requestor };
  }

  /** Takes a ready, unallocated node of the label for slot `i` (reuse-ready-node.ts); false when there is none. */
  private async reuse(i: number, label: string): Promise<boolean> {
    const id = await reuseReadyNode({
      store: this.deps.store, driver: this.driver, sessionId: this.lockedUnder,
      candidates: await this.deps.readyCandidates(label), slots: this.slots, requestId: this.request.id, owner: this.owner(),
    });
    if (id === null) return false;
    this.slots[i] = id;
    this.reused.add(id);
    return true;
  }

  private async complete(): Promise<boolean> {
    const { store } = this.deps;
    // With launches, a request gone meanwhile gives its nodes back before their outcomes are
    // looked at; with reused nodes only, the conditional fulfilling write below finds that out.
    if (this.slots.some((id) => id !== null && !this.reused.has(id)) && !await store.getRequest(this.request.id)) {
      this.log.info('request vanished; releasing its nodes');
      await this.releaseNodes(true);
      await this.finish();
      return true;
    }
    const failed: NodeRecord[] = [];
    let aborted = false;
    for (let i = 0; i < this.slots.length; i++) {
      const id = this.slots[i] ?? null;
      // A reused node was ready when we allocated it under its lock, which we still hold: only
      // launches have an outcome to read (as Nodepool, which reads only its launched nodes).
      if (id === null || this.reused.has(id)) continue;
      const node = await store.getNode(id);
      if (node) this.reportLaunch(node);
      if (node?.state === 'ready') continue;
      if (node?.state === 'aborted') {
        aborted = true;
        this.slots[i] = null;
        await store.unlock(nodeLock(id), this.lockedUnder);
        continue;
      }
      if (node) failed.push(node);
      else this.slots[i] = null;
    }
    if (failed.length) {
      const reasons = failed.map((n) => `node ${n.id}: ${n.reason ?? n.state}`).join('; ');
      await this.decline(`launch failed: ${reasons}`);
      return true;
    }
    if (aborted || this.slots.includes(null)) {
      this.paused = true; // relaunch at the next pass
      return false;
    }
    const nodes = this.slots as string[];
    // Not read again first: the write is conditional (pending), and a request gone meanwhile
    // (undefined) gives its nodes back. One in another state was ended or taken over meanwhile
    // (another handler may have fulfilled it with these very nodes): its nodes are only unlocked.
    let fulfilled: NodeRequestRecord | undefined;
    // Still requested when filled at once from ready nodes (see run), else pending.
    const was = this.request.state === 'requested' ? 'requested' : 'pending';
    try {
      fulfilled = await store.updateRequest(this.request.id, { state: 'fulfilled', nodes, reason: null }, { expectStates: [was] });
    } catch (err) {
      if (!(err instanceof StateConflictError)) throw err;
      this.log.warn(`request no longer ${was} when its nodes were ready; leaving it`, { state: err.actualState });
      // Never ours when it was taken before we marked it: the nodes we allocated go back.
      await Promise.all([this.releaseNodes(was === 'requested'), this.finish()]);
      return true;
    }
    if (!fulfilled) {
      this.log.info('request vanished; releasing its nodes');
      await this.releaseNodes(true);
      await this.finish();
      return true;
    }
    this.log.info('request fulfilled', { nodes, labels: this.request.labels });
    // Once fulfilled, the node locks and the request lock are released together (no order
    // between them matters: the request is fulfilled already, and its nodes are allocated to it).
    await Promise.all([this.releaseNodes(false), this.finish()]);
    return true;
  }

  /** Tells `onLaunch` the outcome of a node this handler launched, once. */
  private reportLaunch(node: NodeRecord): void {
    const label = this.launched.get(node.id);
    if (label === undefined || (node.state !== 'ready' && node.state !== 'failed' && node.state !== 'aborted')) return;
    this.launched.delete(node.id);
    this.deps.onLaunch?.({
      provider: node.provider, pool: node.pool, label, nodeId: node.id, requestor: this.request.requestor, az: node.az,
      result: node.state, durationMs: Math.max(0, node.stateTime - node.created),
    });
  }

  /**
   * Adds this launcher to declinedBy; the request fails when every live launcher declined it.
   * A request found pending is declined only once this handler marked it pending (before, the
   * handler's copy is the pool worker's listed one, and a pending request is someone else's).
   */
  private async decline(reason: string): Promise<void> {
    const { store, launcherId } = this.deps;
    await this.releaseNodes(true);
    const current = await store.getRequest(this.request.id);
    if (current && declinableStates(this.request.state === 'pending').includes(current.state)) {
      const declinedBy = [...new Set([...current.declinedBy, launcherId])];
      const state = stateAfterDecline(declinedBy, await store.listLaunchers(), current, this.deps.fleetPools?.() ?? []);
      // Every decline's reason is kept, so a failed request says why each launcher declined.
      const mine = `${this.deps.provider.name}/${this.deps.pool.name}: ${reason}`;
      const reasons = current.reason && !current.reason.split('; ').includes(mine) ? `${current.reason}; ${mine}` : mine;
      await store.updateRequest(current.id, { state, declinedBy, nodes: [], reason: reasons });
      this.log.info(state === 'failed' ? 'request failed: declined by every launcher' : 'request declined', { reason });
    }
    await this.finish();
  }

  /** Unlocks the node set; with `deallocate`, ready nodes go back to stock and the rest is left for the deleter. */
  private async releaseNodes(deallocate: boolean): Promise<void> {
    await releaseNodeSet({ store: this.deps.store, sessionId: this.lockedUnder, slots: this.slots, reused: this.reused, deallocate });
  }

  private async finish(): Promise<void> {
    this.done = true;
    this.paused = false;
    await this.deps.store.unlock(requestLock(this.request.id), this.lockedUnder);
  }
}
