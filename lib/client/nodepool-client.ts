/**
 * The consumer library: what a program that wants nodes (a CI system, `nodepool request`)
 * does with the state store. It holds a store session for its lifetime (renewed on a timer),
 * makes node requests (ephemeral by default: they vanish with the session), waits for the
 * launchers to fulfil them, accepts the nodes (in-use), and hands them back (used) or holds
 * them. No process state: bin/ passes the config, logger and signals.
 */
import type { Config } from '../config/schema.js';
import { splitNodeset, type NodesetPart } from './nodeset.js';
import { pollUntil } from '../lifecycle.js';
import { silentLogger, type Logger } from '../log.js';
import type { NodeRecord, NodeRequestRecord } from '../store/models.js';
import { openStore } from '../store/open-store.js';
import type { Store } from '../store/store.js';
import {
  acceptPatch, HOLDABLE_STATES, holdPatch, newRequestInput, RELEASABLE_STATES, releasePatch, type RequestOptions,
} from './client-options.js';
import {
  NodeLockedError, NodeNotFoundError, NodeStateError, RequestFailedError, RequestNotFoundError, RequestStateError,
  RequestTimeoutError,
} from '../errors.js';
import { SessionKeeper } from './session-keeper.js';
import { nodeLock } from '../store/lock-names.js';

export type { RequestOptions } from './client-options.js';

/** How long {@link NodepoolClient.accept} waits for a fulfilled request's node to be unlocked by its launcher. */
export const ACCEPT_LOCK_WAIT_MS = 10_000;

/** Common options of {@link NodepoolClient.open}. */
interface ClientBaseOptions {
  /** Who asks: stored on requests and as the session owner. */
  requestor: string;
  log?: Logger;
  /** Epoch ms for hold expiries (default Date.now). */
  clock?: () => number;
  /** How often the session is renewed (default: three times per TTL). */
  renewIntervalMs?: number;
}

/**
 * Options of {@link NodepoolClient.open}: a config (the client opens its store, or uses
 * `store` when given one) or a store with an explicit session TTL.
 */
export type NodepoolClientOptions = ClientBaseOptions & (
  | { config: Config; store?: Store }
  | { store: Store; sessionTtlSeconds: number; config?: undefined }
);

/** Options of {@link NodepoolClient.waitFor}. */
export interface WaitOptions {
  timeoutMs: number;
  /** Aborting rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Called with the request whenever its state changes (and once at the start). */
  onUpdate?(request: NodeRequestRecord): void;
  /** Between store reads (default 250 ms). */
  pollIntervalMs?: number;
}

/** Options of {@link NodepoolClient.accept}. */
export interface AcceptOptions {
  /**
   * Keep each node locked by this client's session and record the session as its consumer, so
   * the nodes are deleted if this client dies. Default false: the nodes stay in use until
   * released (`nodepool release`).
   */
  keepLocked?: boolean;
}

/** Options of {@link NodepoolClient.requestNodes}. */
export type RequestNodesOptions = RequestOptions & AcceptOptions & WaitOptions;

/** Options of {@link NodepoolClient.hold}. */
export interface HoldOptions {
  reason: string;
  /** Seconds from now after which the launcher deletes the held node (default: only max-hold-age applies). */
  expireSeconds?: number;
}

/** A consumer of nodes with one store session. Create with {@link NodepoolClient.open}; `close()` when done. */
export class NodepoolClient {
  private closing: Promise<void> | undefined;

  private constructor(
    readonly store: Store,
    private readonly ownsStore: boolean,
    private readonly keeper: SessionKeeper,
    readonly requestor: string,
    private readonly log: Logger,
    private readonly clock: () => number,
  ) {}

  /** Opens the store (unless given) and a session owned by `requestor`. Thrown: StoreError. */
  static async open(opts: NodepoolClientOptions): Promise<NodepoolClient> {
    const log = opts.log ?? silentLogger();
    const ttlMs = (opts.config ? opts.config.launcher.sessionTtl : opts.sessionTtlSeconds) * 1000;
    const ownsStore = opts.store === undefined;
    const store = opts.store ?? await openStore(opts.config as Config);
    try {
      const keeper = await SessionKeeper.open(store, { owner: opts.requestor, ttlMs, log, renewIntervalMs: opts.renewIntervalMs });
      return new NodepoolClient(store, ownsStore, keeper, opts.requestor, log, opts.clock ?? Date.now);
    } catch (err) {
      if (ownsStore) await store.close();
      throw err;
    }
  }

  /** The id of the client's store session. */
  get sessionId(): string {
    return this.keeper.id;
  }

  /** Creates a request for `labels` (in order, repeats allowed). Thrown: RangeError, SessionLostError, StoreError. */
  async request(labels: readonly string[], opts: RequestOptions = {}): Promise<NodeRequestRecord> {
    this.keeper.check();
    const request = await this.store.createRequest(newRequestInput(labels, opts, this.requestor, this.sessionId));
    this.log.info('node request created', { request: request.id, labels: request.labels });
    return request;
  }

  /**
   * Polls the request until it is fulfilled or failed and returns it (a failed request is not
   * thrown here). Thrown: RequestNotFoundError when it vanishes, RequestTimeoutError, the
   * signal's reason when aborted.
   */
  async waitFor(requestId: string, opts: WaitOptions): Promise<NodeRequestRecord> {
    let seen = '';
    let state = 'unknown';
    const done = await pollUntil(async () => {
      const r = await this.store.getRequest(requestId);
      if (!r) throw new RequestNotFoundError(requestId);
      const key = `${r.state}\0${r.stateTime}`;
      if (key !== seen) {
        seen = key;
        opts.onUpdate?.(r);
      }
      state = r.state;
      return r.state === 'fulfilled' || r.state === 'failed' ? r : undefined;
    }, { timeoutMs: opts.timeoutMs, intervalMs: opts.pollIntervalMs ?? 250, ...(opts.signal ? { signal: opts.signal } : {}) });
    if (!done) throw new RequestTimeoutError(requestId, opts.timeoutMs, state);
    return done;
  }

  /**
   * Takes the nodes of a fulfilled request: locks each with this session, sets it in-use
   * (only from ready), then deletes the request. Without `keepLocked` the locks are released
   * again. Returns the nodes in request order. On a failure the nodes already taken go back
   * to ready and every lock taken is released. Thrown: RequestStateError, NodeLockedError,
   * NodeNotFoundError, StateConflictError (a node no longer ready), SessionLostError.
   */
  async accept(request: NodeRequestRecord, opts: AcceptOptions = {}): Promise<NodeRecord[]> {
    this.keeper.check();
    if (request.state !== 'fulfilled') throw new RequestStateError(request.id, request.state);
    const keepLocked = opts.keepLocked ?? false;
    const locked: string[] = [];
    const taken: NodeRecord[] = [];
    try {
      for (const id of request.nodes) {
        if (!(await this.lockNode(id))) throw new NodeLockedError(id);
        locked.push(id);
        const node = await this.store.updateNode(id, acceptPatch(this.sessionId, keepLocked), { expectStates: ['ready'] });
        if (!node) throw new NodeNotFoundError(id);
        taken.push(node);
      }
    } catch (err) {
      for (const n of taken) await this.backToReady(n.id);
      for (const id of locked) await this.store.unlock(nodeLock(id), this.sessionId).catch(() => undefined);
      throw err;
    }
    if (!keepLocked) for (const id of locked) await this.store.unlock(nodeLock(id), this.sessionId);
    await this.store.deleteRequest(request.id);
    this.log.info('nodes accepted', { request: request.id, nodes: request.nodes, keepLocked });
    return taken;
  }

  /**
   * Locks node `id` for this session, waiting up to {@link ACCEPT_LOCK_WAIT_MS}: the launcher
   * marks a request fulfilled and then releases its nodes' locks (as Nodepool does, and Zuul
   * waits on the lock likewise), so a consumer quick off the mark may find a node still locked.
   */
  private async lockNode(id: string): Promise<boolean> {
    const taken = await pollUntil(async () => (await this.store.tryLock(nodeLock(id), this.sessionId)) || undefined,
      { timeoutMs: ACCEPT_LOCK_WAIT_MS, intervalMs: (n) => Math.min(25 * 2 ** n, 400) });
    return taken === true;
  }

  /**
   * request + waitFor + accept. A request is served by one pool; when no live launcher serves
   * every label, the nodeset is asked for in parts (see splitNodeset) and the nodes come back
   * in label order all the same; if a part fails, or accepting one fails, the other parts are
   * given up too (nodes already accepted go back to ready).
   * Thrown: RequestFailedError with the launchers' reason (the requests are deleted),
   * RequestTimeoutError or the signal's reason (the requests are deleted first), and whatever
   * {@link accept} throws.
   */
  async requestNodes(labels: readonly string[], opts: RequestNodesOptions): Promise<NodeRecord[]> {
    const parts = splitNodeset(labels, await this.store.listLaunchers());
    const requests: NodeRequestRecord[] = [];
    const done: NodeRequestRecord[] = [];
    try {
      for (const part of parts) requests.push(await this.request(part.labels, opts));
      for (const r of requests) done.push(await this.waitFor(r.id, opts));
    } catch (err) {
      for (const r of requests) await this.store.deleteRequest(r.id).catch(() => undefined);
      throw err;
    }
    const failed = done.find((r) => r.state === 'failed');
    if (failed) {
      for (const r of done) await this.store.deleteRequest(r.id);
      throw new RequestFailedError(failed.id, failed.reason);
    }
    if (parts.length > 1) this.log.info('nodeset served in parts', { labels, requests: done.map((r) => r.id) });
    const nodes: NodeRecord[] = new Array<NodeRecord>(labels.length);
    const accepted: NodeRecord[] = [];
    for (let i = 0; i < done.length; i++) {
      let taken: NodeRecord[];
      try {
        taken = await this.accept(done[i] as NodeRequestRecord, opts);
      } catch (err) {
        await this.giveBack(accepted, done.slice(i));
        throw err;
      }
      accepted.push(...taken);
      taken.forEach((n, j) => { nodes[(parts[i] as NodesetPart).positions[j] as number] = n; });
    }
    return nodes;
  }

  /**
   * Undoes a nodeset served in parts when accepting one part failed: nodes of the parts
   * already accepted go back to ready (unlocked), the failed part and the rest are deleted; the
   * launcher's deleter returns both to stock, as their requests are gone.
   */
  private async giveBack(accepted: readonly NodeRecord[], unaccepted: readonly NodeRequestRecord[]): Promise<void> {
    for (const n of accepted) {
      await this.backToReady(n.id);
      await this.store.unlock(nodeLock(n.id), this.sessionId).catch(() => undefined);
    }
    for (const r of unaccepted) await this.store.deleteRequest(r.id).catch(() => undefined);
    this.log.warn('nodeset given back: a part could not be accepted', { nodes: accepted.map((n) => n.id), requests: unaccepted.map((r) => r.id) });
  }

  /** An accepted node returned unused: in-use → ready (best effort; it may be gone or taken meanwhile). */
  private async backToReady(id: string): Promise<void> {
    await this.store.updateNode(id, { state: 'ready', consumerSession: null, handedOff: false }, { expectStates: ['in-use'] }).catch(() => undefined);
  }

  /**
   * Hands a node back: in-use, hold or ready (allocated or not) → used. The launcher's deleter
   * then deletes a cloud node, or puts a static host's slot back as a new ready node. A lock
   * this session holds on it is released. Thrown: NodeNotFoundError, NodeStateError.
   */
  async release(nodeId: string): Promise<NodeRecord> {
    const node = await this.changeNode(nodeId, RELEASABLE_STATES, releasePatch(), 'released');
    await this.store.unlock(nodeLock(nodeId), this.sessionId);
    this.log.info('node released', { node: nodeId });
    return node;
  }

  /** Holds a node (ready, in-use or already held) with a reason and an optional expiry. Thrown: NodeNotFoundError, NodeStateError, RangeError. */
  async hold(nodeId: string, opts: HoldOptions): Promise<NodeRecord> {
    const node = await this.changeNode(nodeId, HOLDABLE_STATES, holdPatch(opts.reason, opts.expireSeconds, this.clock()), 'held');
    this.log.info('node held', { node: nodeId, reason: opts.reason, holdExpiration: node.holdExpiration });
    return node;
  }

  /** A conditional node update whose conflicts become client errors naming the node. */
  private async changeNode(nodeId: string, from: readonly NodeRecord['state'][], patch: Parameters<Store['updateNode']>[1], verb: string): Promise<NodeRecord> {
    const current = await this.store.getNode(nodeId);
    if (!current) throw new NodeNotFoundError(nodeId);
    const notAllowed = (state: string): NodeStateError =>
      new NodeStateError(nodeId, state, `node ${nodeId} is ${state}; only ${from.join(', ')} nodes can be ${verb}`);
    if (!from.includes(current.state)) throw notAllowed(current.state);
    try {
      const node = await this.store.updateNode(nodeId, patch, { expectStates: from });
      if (!node) throw new NodeNotFoundError(nodeId);
      return node;
    } catch (err) {
      const now = await this.store.getNode(nodeId);
      if (!now) throw new NodeNotFoundError(nodeId);
      if (!from.includes(now.state)) throw notAllowed(now.state);
      throw err;
    }
  }

  /** Closes the session (its locks and ephemeral requests go with it) and a store the client opened. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      try {
        await this.keeper.close();
      } finally {
        if (this.ownsStore) await this.store.close();
      }
    })();
    return this.closing;
  }
}
