/**
 * GearmanClient: submits jobs round-robin across the live gearmand connections and routes
 * their progress and results back.
 *
 * Correlation: gearmand answers a connection's requests in order, so each connection keeps a
 * FIFO of requests awaiting their reply (JOB_CREATED, STATUS_RES, OPTION_RES); an ERROR packet
 * belongs to the head of that FIFO. Results are routed by handle → list of jobs, because
 * gearmand coalesces submits with the same function + unique into one handle.
 */
import { EventEmitter } from 'node:events';
import { GearmanConnectionError, GearmanServerError } from '../errors.js';
import { silentLogger, type Logger } from '../log.js';
import { ClientJob } from './client-job.js';
import { GearmanConnection } from './connection.js';
import { Deadlines } from './deadlines.js';
import { encode, PacketType as T, type Packet } from './protocol.js';
import { MAX_UNIQUE_BYTES, type GearmanClientEvents, type GearmanClientOptions, type JobResult, type JobStatus, type SubmitOptions, type SubmittedJob } from './types.js';

export type { GearmanClientEvents, GearmanClientOptions, JobResult, JobStatus, SubmitOptions, SubmittedJob } from './types.js';

interface StatusRequest {
  kind: 'status';
  settled: boolean;
  resolve(s: JobStatus): void;
  reject(err: Error): void;
}

/** A request awaiting its reply, in the order sent (the FIFO holds the job itself: no wrapper per submit). */
type Pending = ClientJob | StatusRequest | { kind: 'option'; option: string };

interface ServerState {
  conn: GearmanConnection;
  fifo: Pending[];
  jobs: Map<string, ClientJob[]>;
}

const SUBMIT_TYPES = {
  normal: [T.SUBMIT_JOB, T.SUBMIT_JOB_BG],
  high: [T.SUBMIT_JOB_HIGH, T.SUBMIT_JOB_HIGH_BG],
  low: [T.SUBMIT_JOB_LOW, T.SUBMIT_JOB_LOW_BG],
} as const;

const NO_OPTIONS: SubmitOptions = Object.freeze({});
const EMPTY = Buffer.alloc(0);

/** A Gearman client over one connection per server. */
export class GearmanClient extends EventEmitter<GearmanClientEvents> {
  private readonly log: Logger;
  private readonly clientId: string | undefined;
  private readonly servers: ServerState[];
  /** Jobs submitted while no server was up, in submit order. */
  private waiting: ClientJob[] = [];
  private rr = 0;
  private started = false;
  private stopping: Promise<void> | undefined;
  /** Jobs still waiting for their JOB_CREATED (queued or sent), and when they give up. */
  private readonly createdDeadlines = new Deadlines<ClientJob>((job) => this.onCreatedTimeout(job));

  constructor(opts: GearmanClientOptions) {
    super();
    if (!opts.servers.length) throw new TypeError('GearmanClient needs at least one server');
    this.log = (opts.log ?? silentLogger()).child({ component: 'gearman-client' });
    this.clientId = opts.clientId;
    this.servers = opts.servers.map((server) => {
      const conn = new GearmanConnection({ server, log: this.log, ...(opts.reconnect ? { reconnect: opts.reconnect } : {}) });
      const st: ServerState = { conn, fifo: [], jobs: new Map() };
      conn.on('connected', () => this.onConnected(st));
      conn.on('disconnected', (reason) => this.onDisconnected(st, reason));
      conn.on('packet', (p) => this.onPacket(st, p));
      return st;
    });
  }

  /** Connects to every server in the background; resolves at once. */
  start(): Promise<void> {
    if (this.stopping) return Promise.reject(new GearmanConnectionError('client stopped'));
    if (!this.started) {
      this.started = true;
      for (const s of this.servers) s.conn.open();
    }
    return Promise.resolve();
  }

  /** Fails every outstanding job with GearmanConnectionError('client stopped') and closes. Idempotent. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      const err = new GearmanConnectionError('client stopped');
      this.createdDeadlines.clear();
      for (const job of this.waiting) this.fail(job, err);
      this.waiting = [];
      for (const s of this.servers) this.failServer(s, err);
      await Promise.all(this.servers.map((s) => s.conn.close()));
      this.log.info('gearman client stopped');
    })();
    return this.stopping;
  }

  /** Number of servers currently connected. */
  connectedCount(): number {
    return this.servers.filter((s) => s.conn.connected).length;
  }

  /** Jobs not yet finished (queued, awaiting JOB_CREATED, or running). */
  outstanding(): number {
    let n = this.waiting.length;
    for (const s of this.servers) {
      n += s.fifo.filter((p) => p.kind === 'submit' && !p.settled).length;
      for (const list of s.jobs.values()) n += list.length;
    }
    return n;
  }

  /**
   * Submits a job. Never throws: problems (unique too long, client stopped, no server in
   * time, connection lost, server ERROR) reject the returned promises.
   */
  submit(functionName: string, data: string | Buffer, opts: SubmitOptions = NO_OPTIONS): SubmittedJob {
    const unique = opts.unique ?? '';
    const background = opts.background ?? false;
    const job = new ClientJob(functionName, background, opts);
    const uniqueBytes = Buffer.byteLength(unique, 'utf8');
    if (uniqueBytes > MAX_UNIQUE_BYTES) {
      this.fail(job, new RangeError(`Gearman unique is ${uniqueBytes} bytes; gearmand allows at most ${MAX_UNIQUE_BYTES} (it truncates 64 and rejects longer)`));
      return job;
    }
    if (this.stopping) {
      this.fail(job, new GearmanConnectionError('client stopped'));
      return job;
    }
    try {
      const [fg, bg] = SUBMIT_TYPES[opts.priority ?? 'normal'];
      job.packet = encode(background ? bg : fg, [functionName, unique, data]);
    } catch (err) {
      this.fail(job, err as Error);
      return job;
    }
    this.createdDeadlines.add(job, opts.createdTimeoutMs ?? 30_000);
    this.dispatch(job);
    return job;
  }

  /**
   * GET_STATUS for a handle: asks the server that created it, or every connected server
   * (first one that knows it wins).
   * @throws GearmanConnectionError when no server is connected or none answers in time.
   */
  async getStatus(handle: string, opts: { timeoutMs?: number } = {}): Promise<JobStatus> {
    if (this.stopping) throw new GearmanConnectionError('client stopped');
    const owner = this.servers.find((s) => s.conn.connected && s.jobs.has(handle));
    const targets = owner ? [owner] : this.servers.filter((s) => s.conn.connected);
    if (!targets.length) throw new GearmanConnectionError('no gearman server connected');
    const answers = await Promise.all(targets.map((s) => this.queryStatus(s, handle, opts.timeoutMs ?? 30_000)));
    return answers.find((a) => a.known) ?? { known: false, running: false, numerator: 0, denominator: 0 };
  }

  private queryStatus(s: ServerState, handle: string, timeoutMs: number): Promise<JobStatus> {
    return new Promise<JobStatus>((resolve, reject) => {
      const timer = setTimeout(() => {
        req.settled = true;
        reject(new GearmanConnectionError(`no STATUS_RES from ${s.conn.label} within ${timeoutMs} ms`));
      }, timeoutMs);
      const req: StatusRequest = {
        kind: 'status',
        settled: false,
        resolve: (st) => { clearTimeout(timer); resolve(st); },
        reject: (e) => { clearTimeout(timer); reject(e); },
      };
      if (!s.conn.send(encode(T.GET_STATUS, [handle]))) {
        req.reject(new GearmanConnectionError(`not connected to ${s.conn.label}`));
        return;
      }
      s.fifo.push(req);
    });
  }

  /** Sends the job to the next live server, or queues it until one connects. */
  private dispatch(job: ClientJob): void {
    const n = this.servers.length;
    for (let i = 0; i < n; i++) {
      const s = this.servers[(this.rr + i) % n] as ServerState;
      if (!s.conn.connected) continue;
      if (!s.conn.send(job.packet as Buffer)) continue;
      this.rr = (this.rr + i + 1) % n;
      s.fifo.push(job);
      return;
    }
    this.waiting.push(job);
  }

  private onConnected(s: ServerState): void {
    s.fifo = [];
    s.jobs = new Map();
    s.conn.send(encode(T.OPTION_REQ, ['exceptions']));
    s.fifo.push({ kind: 'option', option: 'exceptions' });
    if (this.clientId !== undefined) s.conn.send(encode(T.SET_CLIENT_ID, [this.clientId]));
    this.emit('server:connected', s.conn.label);
    const queued = this.waiting;
    this.waiting = [];
    for (const job of queued) if (!job.settled) this.dispatch(job);
  }

  private onDisconnected(s: ServerState, reason: Error): void {
    this.failServer(s, reason);
    this.emit('server:disconnected', s.conn.label, reason);
  }

  /** Rejects everything that depends on this server's connection. */
  private failServer(s: ServerState, reason: Error): void {
    const fifo = s.fifo;
    const jobs = s.jobs;
    s.fifo = [];
    s.jobs = new Map();
    for (const p of fifo) {
      if (p.kind === 'submit') this.fail(p, reason);
      else if (p.kind === 'status' && !p.settled) { p.settled = true; p.reject(reason); }
    }
    for (const list of jobs.values()) for (const job of list) this.fail(job, reason);
  }

  private onCreatedTimeout(job: ClientJob): void {
    if (job.settled) return;
    const timeoutMs = job.opts.createdTimeoutMs ?? 30_000;
    const queued = this.waiting.indexOf(job);
    if (queued >= 0) {
      this.waiting.splice(queued, 1);
      this.fail(job, new GearmanConnectionError(`no gearman server available within ${timeoutMs} ms to submit ${job.functionName}`));
    } else {
      // its FIFO slot stays: the late JOB_CREATED is consumed and ignored
      this.fail(job, new GearmanConnectionError(`no JOB_CREATED for ${job.functionName} within ${timeoutMs} ms`));
    }
  }

  private onPacket(s: ServerState, p: Packet): void {
    try {
      this.handlePacket(s, p);
    } catch (err) {
      this.log.error('failed to handle gearman packet', { packet: p.name, error: (err as Error).stack });
    }
  }

  private handlePacket(s: ServerState, p: Packet): void {
    switch (p.type) {
      case T.JOB_CREATED: {
        const head = this.shiftFifo(s, 'submit', p);
        if (head?.kind === 'submit') this.onCreated(s, head, str(p, 0));
        return;
      }
      case T.STATUS_RES: {
        const head = this.shiftFifo(s, 'status', p);
        if (head?.kind === 'status' && !head.settled) {
          head.settled = true;
          head.resolve({ known: str(p, 1) === '1', running: str(p, 2) === '1', numerator: num(p, 3), denominator: num(p, 4) });
        }
        return;
      }
      case T.OPTION_RES:
        this.shiftFifo(s, 'option', p);
        return;
      case T.ERROR:
        return this.onError(s, str(p, 0), str(p, 1));
      case T.WORK_STATUS:
      case T.WORK_DATA:
      case T.WORK_WARNING:
      case T.WORK_COMPLETE:
      case T.WORK_FAIL:
      case T.WORK_EXCEPTION:
        return this.onWork(s, p);
      default:
        this.log.debug('ignoring unexpected gearman packet', { packet: p.name });
    }
  }

  /** Pops the FIFO head, which must be of `kind`; otherwise the stream is confused: reconnect. */
  private shiftFifo(s: ServerState, kind: Pending['kind'], p: Packet): Pending | undefined {
    const head = s.fifo[0];
    if (head?.kind !== kind) {
      this.log.error('unexpected gearman reply; resetting connection', { packet: p.name, expected: head?.kind ?? 'nothing' });
      s.conn.reset(new GearmanConnectionError(`unexpected ${p.name} from ${s.conn.label}`));
      return undefined;
    }
    s.fifo.shift();
    return head;
  }

  private onCreated(s: ServerState, job: ClientJob, handle: string): void {
    if (job.settled) {
      this.log.debug('JOB_CREATED after the submitter gave up', { job: handle });
      return;
    }
    this.createdDeadlines.delete(job);
    job.created(handle);
    if (job.background) {
      this.settle(job, { type: 'complete', data: Buffer.alloc(0), warnings: [] });
      return;
    }
    const list = s.jobs.get(handle);
    if (list) list.push(job);
    else s.jobs.set(handle, [job]);
    if (this.log.isDebugEnabled()) this.log.debug('job created', { job: handle, function: job.functionName, coalesced: Boolean(list) });
  }

  private onError(s: ServerState, code: string, text: string): void {
    const err = new GearmanServerError(code, text);
    const head = s.fifo.shift();
    if (!head) {
      this.log.warn('unsolicited gearman ERROR', { server: s.conn.label, code, text });
      return;
    }
    if (head.kind === 'submit') this.fail(head, err);
    else if (head.kind === 'status') { if (!head.settled) { head.settled = true; head.reject(err); } }
    else this.log.warn('gearman option refused', { option: head.option, code, text });
  }

  private onWork(s: ServerState, p: Packet): void {
    const handle = str(p, 0);
    const list = s.jobs.get(handle);
    if (!list) {
      this.log.debug('work packet for unknown handle', { packet: p.name, job: handle });
      return;
    }
    const payload = p.args[1] ?? EMPTY;
    switch (p.type) {
      case T.WORK_STATUS:
        for (const job of list) this.callback(job, () => job.opts.onStatus?.(num(p, 1), num(p, 2)));
        return;
      case T.WORK_DATA:
        for (const job of list) this.callback(job, () => job.opts.onData?.(payload));
        return;
      case T.WORK_WARNING:
        for (const job of list) {
          (job.warnings ??= []).push(payload);
          this.callback(job, () => job.opts.onWarning?.(payload));
        }
        return;
    }
    s.jobs.delete(handle);
    for (const job of list) {
      const warnings = job.warnings ?? [];
      if (p.type === T.WORK_COMPLETE) this.settle(job, { type: 'complete', data: payload, warnings });
      else if (p.type === T.WORK_EXCEPTION) this.settle(job, { type: 'exception', data: payload, warnings });
      else this.settle(job, { type: 'fail', warnings });
    }
  }

  private callback(job: ClientJob, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.log.error('job callback threw', { job: job.jobHandle, error: (err as Error).stack });
    }
  }

  /** Only for created jobs (their deadline is gone already). */
  private settle(job: ClientJob, r: JobResult): void {
    job.settle(r);
  }

  private fail(job: ClientJob, err: Error): void {
    this.createdDeadlines.delete(job);
    job.fail(err);
  }
}

function str(p: Packet, i: number): string {
  return (p.args[i] ?? EMPTY).toString('utf8');
}

function num(p: Packet, i: number): number {
  const n = Number.parseInt(str(p, i), 10);
  return Number.isFinite(n) ? n : 0;
}
