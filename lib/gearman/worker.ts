/**
 * GearmanWorker: registers functions on every gearmand, grabs jobs up to a concurrency limit
 * (GRAB_JOB_UNIQ → NO_JOB → PRE_SLEEP → NOOP → GRAB…), runs handlers and reports exactly one
 * terminal packet per job. Re-registers (RESET_ABILITIES, SET_CLIENT_ID, CAN_DO…) after every
 * reconnect. Results of jobs whose connection died are logged and dropped.
 */
import { EventEmitter } from 'node:events';
import { AbortedError, GearmanConnectionError, coerceError } from '../errors.js';
import { silentLogger, type Logger } from '../log.js';
import { GearmanConnection } from './connection.js';
import { IdleWaiters } from './idle-waiters.js';
import { encode, PacketType as T, type Packet } from './protocol.js';
import { RunningJob } from './running-job.js';
import { EMPTY, GRAB_JOB_UNIQ, PRE_SLEEP, packetArg, type WorkerServer } from './worker-server.js';
import type { GearmanWorkerEvents, GearmanWorkerOptions, JobHandler, JobOutcome, WorkerStopOptions } from './types.js';

export type { GearmanWorkerEvents, GearmanWorkerOptions, JobHandler, JobOutcome, WorkerJob, WorkerJobInfo, WorkerStopOptions } from './types.js';

/** A Gearman worker over one connection per server. */
export class GearmanWorker extends EventEmitter<GearmanWorkerEvents> {
  private readonly log: Logger;
  private readonly clientId: string | undefined;
  private readonly concurrency: number;
  private readonly servers: WorkerServer[];
  private readonly handlers = new Map<string, JobHandler>();
  /** Unregistered functions whose CANT_DO waits for running jobs; `resolve` runs once all are sent. */
  private readonly draining = new Map<string, { done: Promise<void>; resolve: () => void }>();
  private readonly jobs = new Set<RunningJob>();
  private state: 'created' | 'running' | 'stopping' | 'stopped' = 'created';
  private stopping: Promise<void> | undefined;
  private rr = 0;
  private readonly idle = new IdleWaiters(() => this.isIdle());
  private readonly grabTimeoutMs: number;
  private watchdog: NodeJS.Timeout | undefined;

  constructor(opts: GearmanWorkerOptions) {
    super();
    if (!opts.servers.length) throw new TypeError('GearmanWorker needs at least one server');
    const concurrency = opts.concurrency ?? 1;
    if (!Number.isInteger(concurrency) || concurrency < 1) throw new RangeError(`concurrency must be a positive integer, got ${concurrency}`);
    this.concurrency = concurrency;
    this.log = (opts.log ?? silentLogger()).child({ component: 'gearman-worker' });
    this.clientId = opts.clientId;
    this.grabTimeoutMs = opts.grabTimeoutMs ?? 30_000;
    this.servers = opts.servers.map((server) => {
      const conn = new GearmanConnection({ server, log: this.log, ...(opts.reconnect ? { reconnect: opts.reconnect } : {}) });
      const st: WorkerServer = { conn, awake: false, grabbing: false, grabSentAt: 0, cantDoPending: new Set() };
      conn.on('connected', () => this.onConnected(st));
      conn.on('disconnected', (reason) => this.onDisconnected(st, reason));
      conn.on('packet', (p) => this.onPacket(st, p));
      return st;
    });
  }

  /**
   * Registers (or replaces) a handler: CAN_DO now on every connected server, and after every
   * reconnect. A function still draining from {@link unregister} is taken back as it is.
   */
  register(name: string, handler: JobHandler): void {
    const isNew = !this.handlers.has(name);
    this.handlers.set(name, handler);
    if (!isNew) return;
    const draining = this.draining.get(name);
    this.log.info('registering gearman function', { function: name, ...(draining ? { wasDraining: true } : {}) });
    if (draining) {
      // the unregister is superseded: whoever waits for it stops waiting
      this.draining.delete(name);
      draining.resolve();
    }
    for (const s of this.servers) {
      // never CANT_DOed there: still registered with that server
      if (s.cantDoPending.delete(name)) continue;
      // CAN_DO does not wake a sleeping worker even when jobs are queued: grab explicitly
      if (s.conn.send(encode(T.CAN_DO, [name]))) s.awake = true;
    }
    this.pump();
  }

  /**
   * Unregisters: no new job of `name` is run here from now on, and CANT_DO goes to each server
   * once no job of `name` from that server runs here any more. Jobs already running continue and
   * report their own outcome: gearmand fails (or, without a retry limit, requeues) a job whose
   * worker CANT_DOes its function while holding it, so the CANT_DO waits for the job's end.
   * A job of `name` that a server assigns meanwhile (GRAB_JOB cannot name functions) is failed
   * at once, saying the function is being unregistered here. Resolves once every CANT_DO is sent.
   */
  unregister(name: string): Promise<void> {
    if (!this.handlers.delete(name)) return this.draining.get(name)?.done ?? Promise.resolve();
    let pending = false;
    for (const s of this.servers) {
      if (this.runsJobOf(s, name)) {
        s.cantDoPending.add(name);
        pending = true;
      } else {
        s.conn.send(encode(T.CANT_DO, [name]));
      }
    }
    if (!pending) {
      this.log.info('unregistering gearman function', { function: name });
      return Promise.resolve();
    }
    this.log.info('unregistering gearman function once its running jobs end', {
      function: name, jobs: [...this.jobs].filter((j) => j.info.functionName === name).map((j) => j.handle),
    });
    let resolve!: () => void;
    const done = new Promise<void>((r) => { resolve = r; });
    this.draining.set(name, { done, resolve });
    return done;
  }

  /** True while `name` is unregistered but a job of it still runs here (its CANT_DO waits). */
  isDraining(name: string): boolean {
    return this.draining.has(name);
  }

  /** True when `name` is registered. */
  isRegistered(name: string): boolean {
    return this.handlers.has(name);
  }

  /** Registered function names, in registration order. */
  registeredFunctions(): string[] {
    return [...this.handlers.keys()];
  }

  /** Jobs whose handler has not settled yet. */
  inFlight(): number {
    return this.jobs.size;
  }

  /** Jobs of `name` whose handler has not settled yet. */
  inFlightOf(name: string): number {
    let n = 0;
    for (const j of this.jobs) if (j.info.functionName === name) n += 1;
    return n;
  }

  /** Number of servers currently connected. */
  connectedCount(): number {
    return this.servers.filter((s) => s.conn.connected).length;
  }

  /** Connects to every server in the background (reconnecting forever); resolves at once. */
  start(): Promise<void> {
    if (this.state !== 'created') {
      return this.state === 'running' ? Promise.resolve() : Promise.reject(new GearmanConnectionError('worker stopped'));
    }
    this.state = 'running';
    this.log.info('gearman worker starting', { servers: this.servers.map((s) => s.conn.label), concurrency: this.concurrency });
    for (const s of this.servers) s.conn.open();
    this.watchdog = setInterval(() => this.checkGrabs(), Math.max(10, Math.min(5000, this.grabTimeoutMs / 2)));
    this.watchdog.unref();
    return Promise.resolve();
  }

  /**
   * Stops grabbing, waits for in-flight handlers (a job assigned by a grab already on the wire
   * is run too), aborts their signals after `abortAfterMs`, then closes. Idempotent.
   */
  stop(opts: WorkerStopOptions = {}): Promise<void> {
    this.stopping ??= (async () => {
      this.state = 'stopping';
      this.log.info('gearman worker stopping', { inFlight: this.jobs.size });
      let idle = await this.idle.wait(opts.abortAfterMs);
      if (!idle) {
        const reason = new AbortedError(`worker stopping: job aborted after ${opts.abortAfterMs} ms`);
        this.log.warn('aborting gearman jobs still running', { jobs: [...this.jobs].map((j) => j.handle) });
        for (const j of this.jobs) j.abort(reason);
        idle = await this.idle.wait(opts.abortGraceMs ?? 10_000);
        if (!idle) this.log.error('gearman jobs did not settle after abort; closing anyway', { jobs: [...this.jobs].map((j) => j.handle) });
      }
      if (this.watchdog) clearInterval(this.watchdog);
      await Promise.all(this.servers.map((s) => s.conn.close()));
      for (const s of this.servers) this.dropPendingCantDo(s);
      this.state = 'stopped';
      this.idle.notify();
      this.log.info('gearman worker stopped');
    })();
    return this.stopping;
  }

  private isIdle(): boolean {
    return this.jobs.size === 0 && !this.servers.some((s) => s.grabbing && s.conn.connected);
  }

  /** Grabs from awake servers while below the concurrency limit (one grab per server at a time). */
  private pump(): void {
    if (this.state !== 'running' || this.handlers.size === 0) return;
    const n = this.servers.length;
    let capacity = this.concurrency - this.jobs.size;
    for (let i = 0; i < n; i++) if ((this.servers[i] as WorkerServer).grabbing) capacity -= 1;
    for (let i = 0; i < n && capacity > 0; i++) {
      const idx = (this.rr + i) % n;
      const s = this.servers[idx] as WorkerServer;
      if (!s.awake || s.grabbing || !s.conn.connected) continue;
      if (!s.conn.send(GRAB_JOB_UNIQ)) continue;
      s.grabbing = true;
      s.grabSentAt = Date.now();
      capacity -= 1;
      this.rr = (idx + 1) % n;
    }
  }

  private checkGrabs(): void {
    const now = Date.now();
    for (const s of this.servers) {
      if (s.grabbing && s.conn.connected && now - s.grabSentAt > this.grabTimeoutMs) {
        this.log.warn('gearman server did not answer GRAB_JOB_UNIQ; reconnecting', { server: s.conn.label, waitedMs: now - s.grabSentAt });
        s.conn.reset(new GearmanConnectionError(`no answer to GRAB_JOB_UNIQ within ${this.grabTimeoutMs} ms`));
      }
    }
  }

  private onConnected(s: WorkerServer): void {
    s.grabbing = false;
    s.awake = true;
    // RESET_ABILITIES below drops every function, draining ones too: nothing left to CANT_DO
    this.dropPendingCantDo(s);
    s.conn.send(encode(T.RESET_ABILITIES));
    if (this.clientId !== undefined) s.conn.send(encode(T.SET_CLIENT_ID, [this.clientId]));
    for (const name of this.handlers.keys()) s.conn.send(encode(T.CAN_DO, [name]));
    this.log.info('gearman worker registered', { server: s.conn.label, functions: this.handlers.size });
    this.safeEmit('server:connected', s.conn.label);
    this.pump();
  }

  private onDisconnected(s: WorkerServer, reason: Error): void {
    s.grabbing = false;
    s.awake = false;
    // the server forgets this worker's functions with the connection
    this.dropPendingCantDo(s);
    for (const j of this.jobs) {
      if (j.conn === s.conn) j.abort(reason);
    }
    this.safeEmit('server:disconnected', s.conn.label, reason);
    this.idle.notify();
    this.pump();
  }

  private onPacket(s: WorkerServer, p: Packet): void {
    try {
      this.handlePacket(s, p);
    } catch (err) {
      this.log.error('failed to handle gearman packet', { packet: p.name, error: coerceError(err).stack });
    }
  }

  private handlePacket(s: WorkerServer, p: Packet): void {
    switch (p.type) {
      case T.NOOP:
        s.awake = true;
        this.pump();
        return;
      case T.NO_JOB:
        s.grabbing = false;
        s.awake = false;
        s.conn.send(PRE_SLEEP);
        this.idle.notify();
        this.pump();
        return;
      case T.JOB_ASSIGN_UNIQ:
      case T.JOB_ASSIGN: {
        s.grabbing = false;
        s.awake = true;
        const uniq = p.type === T.JOB_ASSIGN_UNIQ;
        const handle = packetArg(p, 0);
        const functionName = packetArg(p, 1);
        const unique = uniq ? packetArg(p, 2) : '';
        const data = p.args[uniq ? 3 : 2] ?? EMPTY;
        this.runJob(s, handle, functionName, unique, data);
        this.pump();
        return;
      }
      case T.ERROR: {
        const code = packetArg(p, 0);
        // JOB_NOT_FOUND: a result for a job the server forgot (e.g. after its restart): harmless
        const level = code === 'JOB_NOT_FOUND' ? 'info' : 'warn';
        this.log.log(level, 'gearman server reported an error', { server: s.conn.label, code, text: packetArg(p, 1) });
        return;
      }
      default:
        this.log.debug('ignoring unexpected gearman packet', { packet: p.name });
    }
  }

  private runJob(s: WorkerServer, handle: string, functionName: string, unique: string, data: Buffer): void {
    const job = new RunningJob(s.conn, this.log, handle, functionName, unique, data);
    this.jobs.add(job);
    if (this.log.isDebugEnabled()) job.log().debug('job assigned', { unique, bytes: data.length });
    this.safeEmit('job:start', job.info);
    let handler = this.handlers.get(functionName);
    if (!handler && s.cantDoPending.has(functionName)) {
      job.log().warn('job for a function being unregistered here; failing it');
      handler = () => Promise.resolve({ type: 'fail', message: `${functionName} is being unregistered on ${this.clientId ?? 'this worker'}: not taking new jobs of it` });
    } else if (!handler) job.log().warn('job for a function not registered here; failing it');
    // the handler starts after this packet is handled, as a microtask (not inside the socket callback)
    queueMicrotask(() => {
      void job.run(handler).then((outcome) => this.jobEnded(job, outcome));
    });
  }

  /** Sends the job's terminal packet, drops it from the running set and grabs the next one. */
  private jobEnded(job: RunningJob, outcome: JobOutcome): void {
    try {
      let delivered = false;
      try {
        delivered = job.finish(outcome);
      } finally {
        this.jobs.delete(job);
        this.sendPendingCantDo(job);
        this.idle.notify();
      }
      this.safeEmit('job:end', job.info, outcome, delivered);
      this.pump();
    } catch (err) {
      this.log.error('job bookkeeping failed', { job: job.handle, error: coerceError(err).stack });
    }
  }

  private runsJobOf(s: WorkerServer, name: string): boolean {
    for (const j of this.jobs) if (j.conn === s.conn && j.info.functionName === name) return true;
    return false;
  }

  /** After `job`'s terminal packet: the CANT_DO its function waited for, if no other job of it runs there. */
  private sendPendingCantDo(job: RunningJob): void {
    const name = job.info.functionName;
    const s = this.servers.find((x) => x.conn === job.conn);
    if (!s?.cantDoPending.has(name) || this.runsJobOf(s, name)) return;
    s.cantDoPending.delete(name);
    s.conn.send(encode(T.CANT_DO, [name]));
    this.settleDraining(name);
  }

  private dropPendingCantDo(s: WorkerServer): void {
    const names = [...s.cantDoPending];
    s.cantDoPending.clear();
    for (const name of names) this.settleDraining(name);
  }

  /** Ends the drain of `name` once no server still waits to CANT_DO it. */
  private settleDraining(name: string): void {
    const d = this.draining.get(name);
    if (!d || this.servers.some((x) => x.cantDoPending.has(name))) return;
    this.draining.delete(name);
    this.log.info('unregistered gearman function after its running jobs ended', { function: name });
    d.resolve();
  }

  private safeEmit<K extends keyof GearmanWorkerEvents>(event: K, ...args: GearmanWorkerEvents[K]): void {
    try {
      (this.emit as (e: K, ...a: GearmanWorkerEvents[K]) => boolean)(event, ...args);
    } catch (err) {
      this.log.error('gearman worker listener threw', { event, error: coerceError(err).stack });
    }
  }
}
