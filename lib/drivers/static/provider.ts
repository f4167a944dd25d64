/**
 * The static provider: all host and store I/O of the `static` driver. It keeps one READY
 * node record per free slot of every configured host (`max-parallel-jobs` slots): start and
 * every cleanup pass scan the hosts and sync the records with the config (register,
 * deregister, update; the pass right after start checks keys just scanned with a TCP connect);
 * a deleted node's slot is registered again as a fresh record.
 * Deregistering means marking a ready, unallocated record `deleting` under its lock; in-use
 * nodes are never touched.
 */
import { StateConflictError } from '../../errors.js';
import { tcpProbe } from '../../ssh/tcp-probe.js';
import type { Logger } from '../../log.js';
import type { NodeRecord, NodeRequestRecord } from '../../store/models.js';
import type { ExternalNode, Provider, ProviderContext, RequestHandler } from '../contract/driver.js';
import { staticHosts, type StaticHost, type StaticProviderConfig } from './config.js';
import { StaticRequestHandler, type StaticHandlerDeps } from './handler.js';
import { HostScanner } from './host-scanner.js';
import { acceptScan, freeSlots, planRegistration, recordHostId, registrationFields, type RegistrationAction } from './registration-plan.js';
import { SyncGate } from './sync-gate.js';
import { nodeLock } from '../../store/lock-names.js';

/** Tunables of {@link StaticProvider} (tests and benchmarks; the defaults suit production). */
export interface StaticProviderOptions {
  /** Hosts scanned at once during a sync (default 8). */
  scanConcurrency?: number;
  /** Pause between scan attempts on a host that refuses (default 500 ms). */
  scanRetryMs?: number;
  /**
   * A slot refill (nodeDeleted) reuses host keys scanned this recently, checking the host with
   * one TCP connect instead of a key exchange (default 60 s, the cleanup interval; 0: always scan).
   */
  keyReuseMs?: number;
  /**
   * A slot refill does not connect to a host that answered this recently (a scan, a refill's
   * connect or the liveness check at hand-out; default 2 s, 0: always connect). Under churn a
   * host's slots come back many times a second and each connect costs the host a fork of sshd;
   * the hand-out check itself always connects.
   */
  answerReuseMs?: number;
  /**
   * A sync reuses host keys scanned this recently (one TCP connect per host instead of a key
   * exchange). Default: half the launcher's cleanup-interval, so only the cleanup pass that
   * follows the start-up sync at once reuses them; every periodic pass scans afresh.
   */
  syncKeyReuseMs?: number;
}

export class StaticProvider implements Provider, StaticHandlerDeps {
  readonly name: string;
  private readonly log: Logger;
  private readonly hosts: readonly StaticHost[];
  private readonly hostsById: ReadonlyMap<string, StaticHost>;
  private readonly abort = new AbortController();
  private readonly scanner: HostScanner;
  private readonly gate = new SyncGate();
  private readonly inflight = new Set<Promise<unknown>>();
  private stopping: Promise<void> | undefined;
  private readonly keyReuseMs: number;
  private readonly syncKeyReuseMs: number;
  private readonly answerReuseMs: number;
  private readonly probing = new Map<string, ReturnType<typeof tcpProbe>>();
  /** Record ids (with their slots) per host id, from the last sync plus registrations and deletions since (see recordsOf). */
  private readonly known = new Map<string, Map<string, number | null>>();
  /** Whether {@link known} has been filled by a sync. */
  private synced = false;

  constructor(readonly config: StaticProviderConfig, private readonly ctx: ProviderContext, opts: StaticProviderOptions = {}) {
    this.name = config.name;
    this.log = ctx.log.child({ component: 'static-provider', provider: config.name });
    this.hosts = staticHosts(config);
    this.hostsById = new Map(this.hosts.map((h) => [h.id, h]));
    this.scanner = new HostScanner({ signal: this.abort.signal, concurrency: opts.scanConcurrency, retryMs: opts.scanRetryMs });
    this.keyReuseMs = opts.keyReuseMs ?? 60_000;
    this.syncKeyReuseMs = opts.syncKeyReuseMs ?? ctx.config.launcher.cleanupInterval * 500;
    this.answerReuseMs = opts.answerReuseMs ?? 2000;
  }

  /** Registers the configured hosts (see {@link cleanupLeakedResources}). */
  start(): Promise<void> {
    return this.track(() => this.sync('start'));
  }

  /** Stops scanning (running scans are killed) and waits for running work to settle. Idempotent. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.abort.abort(new Error(`static provider ${this.name} stopped`));
      await Promise.allSettled([...this.inflight]);
    })();
    return this.stopping;
  }

  /** One entry per host that has node records (`externalId` = `name:port`, `nodeId` = its first record). */
  async listNodes(): Promise<ExternalNode[]> {
    const seen = new Map<string, ExternalNode>();
    for (const r of await this.ctx.store.listNodes({ provider: this.name })) {
      const id = recordHostId(r);
      if (r.hostname === null || seen.has(id)) continue;
      seen.set(id, { externalId: id, name: r.hostname, provider: this.name, nodeId: r.id, status: 'registered' });
    }
    return [...seen.values()];
  }

  /** Nothing to delete for a returned node: the deleter removes its record directly. */
  readonly cleanupFree = true;

  /** A static host is not deleted: its slot is registered again by {@link nodeDeleted}. */
  cleanupNode(_node: NodeRecord): Promise<void> {
    return Promise.resolve();
  }

  /**
   * Re-syncs every host with the config: registers hosts that came back or whose records
   * vanished, deregisters hosts that stopped answering or are no longer configured.
   */
  cleanupLeakedResources(): Promise<void> {
    return this.track(() => this.sync('cleanup'));
  }

  /** Registers one fresh READY record for the deleted node's host while it has a free slot. */
  nodeDeleted(node: NodeRecord): Promise<void> {
    return this.track(async () => {
      const host = node.provider === this.name ? this.hostOf(node) : undefined;
      if (!host) return;
      // Told only once the record is gone (the deleter's two ways both delete it first): not
      // read again (on ZooKeeper a round trip per returned node).
      this.known.get(host.id)?.delete(node.id);
      const scan = await this.scanner.recheck(host, this.keyReuseMs, this.answerReuseMs);
      const accepted = acceptScan(host, scan);
      if (!accepted.ok) {
        this.logProblem(accepted.kind, `${accepted.message} (slot of deleted node ${node.id} stays free until the next cleanup pass)`, host.id);
        return;
      }
      await this.gate.forHost(host.id, async () => {
        const records = await this.recordsOf(host);
        if (records.length >= host.node.maxParallelJobs) return;
        const [slot] = freeSlots(records, host.node.maxParallelJobs, 1);
        const created = await this.ctx.store.createNode(registrationFields(this.name, host, accepted.keys, slot));
        this.remember(host.id, created.id, created.slot ?? null);
        this.log.info('registered', { host: host.id, nodes: [created.id], after: node.id });
      });
    });
  }

  /** Static labels need no image. */
  labelReady(_label: string): Promise<boolean> {
    return Promise.resolve(true);
  }

  getRequestHandler(pool: string, request: NodeRequestRecord): RequestHandler {
    return new StaticRequestHandler(this, pool, request, this.log);
  }

  /**
   * Whether a host answers a TCP connect now (its configured name and connection port, which
   * its records carry as interface ip and port). Concurrent checks of one host share one connect
   * (each connect costs sshd a fork and exec). No answer is reused here: a host that stopped
   * is never handed out on an old answer (a slot refill may reuse it, see answerReuseMs).
   */
  hostAnswers(host: StaticHost): ReturnType<typeof tcpProbe> {
    // host-key-checking off: Nodepool assumes the host is live and does not connect.
    if (!host.node.hostKeyChecking) return Promise.resolve({ ok: true });
    let probe = this.probing.get(host.id);
    if (!probe) {
      probe = tcpProbe(host.node.name, host.node.connectionPort, host.node.timeout * 1000).then((answer) => {
        this.scanner.answered(host.id, answer.ok);
        return answer;
      }).finally(() => this.probing.delete(host.id));
      this.probing.set(host.id, probe);
    }
    return probe;
  }

  /** The configured host a node record belongs to. */
  hostOf(node: Pick<NodeRecord, 'hostname' | 'connectionPort'>): StaticHost | undefined {
    return this.hostsById.get(recordHostId(node));
  }

  /**
   * Deregisters one ready, unallocated, unlocked record of the node's host: the node itself
   * when possible, else another. Returns the id deregistered, if any.
   */
  async deregisterOne(node: NodeRecord, reason: string): Promise<string | undefined> {
    const host = recordHostId(node);
    if (await this.deregisterRecord(node.id, reason)) return node.id;
    const others = (await this.ctx.store.listNodes({ provider: this.name, states: ['ready'] }))
      .filter((r) => r.id !== node.id && recordHostId(r) === host);
    for (const r of others) if (await this.deregisterRecord(r.id, reason)) return r.id;
    return undefined;
  }

  /**
   * The host's records, any state, by id with their slots: the ones the last sync saw, plus
   * ours registered since, less the ones deleted since (the deleter tells nodeDeleted), so a
   * refill after every returned node reads nothing. When that count says the host is full,
   * the records are read again by id (one that another process deleted would keep the slot
   * free until the next sync). Records another process registered for this host since the
   * last sync are not seen: one launcher per static provider is assumed, as in Nodepool.
   */
  private async recordsOf(host: StaticHost): Promise<Array<Pick<NodeRecord, 'id' | 'slot'>>> {
    if (!this.synced) return (await this.ctx.store.listNodes({ provider: this.name })).filter((r) => recordHostId(r) === host.id);
    const known = this.known.get(host.id) ?? new Map<string, number | null>();
    const records = [...known].map(([id, slot]) => ({ id, slot }));
    if (records.length < host.node.maxParallelJobs) return records;
    // Read at once, not one after the other: on ZooKeeper each is a round trip.
    const read = await Promise.all(records.map(async (r) => [r, await this.ctx.store.getNode(r.id)] as const));
    for (const [r, got] of read) if (!got) known.delete(r.id);
    return read.filter(([, got]) => got !== undefined).map(([r]) => r);
  }

  private remember(hostId: string, id: string, slot: number | null): void {
    const ids = this.known.get(hostId) ?? new Map<string, number | null>();
    ids.set(id, slot);
    this.known.set(hostId, ids);
  }

  /** Runs provider work unless stopped, so stop() can wait for it. */
  private track(fn: () => Promise<void>): Promise<void> {
    if (this.stopping) return Promise.resolve();
    const p = fn().catch((err: unknown) => {
      if (this.abort.signal.aborted) return; // a scan killed by stop()
      throw err;
    });
    this.inflight.add(p);
    void p.finally(() => this.inflight.delete(p)).catch(() => undefined);
    return p;
  }

  /** Scans every host, then plans and applies registrations with no other write running. */
  private async sync(why: 'start' | 'cleanup'): Promise<void> {
    const scans = await this.scanner.scanAll(this.hosts, why === 'cleanup' ? this.syncKeyReuseMs : 0);
    if (this.abort.signal.aborted) return;
    await this.gate.exclusively(async () => {
      const records = await this.ctx.store.listNodes({ provider: this.name });
      this.known.clear();
      for (const r of records) this.remember(recordHostId(r), r.id, r.slot ?? null);
      this.synced = true;
      const plan = planRegistration({ provider: this.name, hosts: this.hosts, records, scans });
      for (const problem of plan.problems) this.logProblem(problem.kind, problem.message, problem.hostId);
      for (const action of plan.actions) await this.apply(action);
      this.log.debug('static hosts synced', { why, hosts: this.hosts.length, actions: plan.actions.length, problems: plan.problems.length });
    });
  }

  private async apply(action: RegistrationAction): Promise<void> {
    const { store } = this.ctx;
    switch (action.kind) {
      case 'register': {
        const ids: string[] = [];
        for (const slot of action.slots) {
          const created = await store.createNode({ ...action.node, slot });
          this.remember(action.hostId, created.id, created.slot ?? null);
          ids.push(created.id);
        }
        this.log.info('registered', { host: action.hostId, nodes: ids });
        return;
      }
      case 'deregister': {
        const ids: string[] = [];
        for (const id of action.candidates) {
          if (ids.length >= action.count) break;
          if (await this.deregisterRecord(id, action.reason)) ids.push(id);
        }
        if (ids.length) this.log.info('deregistered', { host: action.hostId, nodes: ids, reason: action.reason });
        if (ids.length < action.count) this.log.debug('records busy, left for a later pass', { host: action.hostId, wanted: action.count, done: ids.length });
        return;
      }
      case 'update': {
        if (await this.withNodeLock(action.nodeId, async (r) => {
          const updated = await store.updateNode(r.id, action.patch, { expectStates: ['ready'] });
          if (updated) this.remember(action.hostId, updated.id, updated.slot ?? null);
        })) this.log.info('updated from config', { host: action.hostId, node: action.nodeId, fields: Object.keys(action.patch) });
      }
    }
  }

  /** Marks a ready, unallocated record `deleting` under its lock; false when it is busy or gone. */
  private deregisterRecord(id: string, reason: string): Promise<boolean> {
    return this.withNodeLock(id, async (r) => {
      await this.ctx.store.updateNode(r.id, { state: 'deleting', reason }, { expectStates: ['ready'] });
    });
  }

  /** Runs `fn` on the re-read record while holding its lock, if it is still ready and unallocated. */
  private async withNodeLock(id: string, fn: (r: NodeRecord) => Promise<void>): Promise<boolean> {
    const { store } = this.ctx;
    const sessionId = this.ctx.sessionId();
    const resource = nodeLock(id);
    // tryLock is re-entrant per session: a lock this process already holds (a pool worker
    // allocating the node) would be "taken" and then released by us, so it counts as busy.
    if (!(await store.tryLock(resource, sessionId, { exclusive: true }))) return false;
    try {
      const r = await store.getNode(id);
      if (!r || r.state !== 'ready' || r.allocatedTo !== null) return false;
      await fn(r);
      return true;
    } catch (err) {
      if (err instanceof StateConflictError) return false;
      throw err;
    } finally {
      await store.unlock(resource, sessionId);
    }
  }

  private logProblem(kind: 'unreachable' | 'host-key', message: string, host: string): void {
    if (kind === 'host-key') this.log.error(message, { host });
    else this.log.warn(message, { host });
  }
}
