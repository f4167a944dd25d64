/**
 * RunningJob: the worker-side state of one assigned job. It runs the handler, turns whatever
 * the handler does into one outcome and sends exactly one terminal packet, and only on the
 * socket the job came from. A job is on the hot path of every round trip, so nothing per job
 * is made before it is used: no closures, no child logger, no AbortController.
 */
import { coerceError } from '../errors.js';
import type { Logger } from '../log.js';
import type { GearmanConnection } from './connection.js';
import { encode, PacketType as T } from './protocol.js';
import type { JobHandler, JobOutcome, WorkerJob, WorkerJobInfo } from './types.js';

const EMPTY = Buffer.alloc(0);

/** What a handler sees: the job's data, its signal and its progress packets. */
class HandlerJob implements WorkerJob {
  readonly #job: RunningJob;

  constructor(job: RunningJob, readonly handle: string, readonly functionName: string, readonly unique: string, readonly data: Buffer) {
    this.#job = job;
  }

  get signal(): AbortSignal {
    return this.#job.signal();
  }

  sendStatus(numerator: number, denominator: number): void {
    this.#job.progress(T.WORK_STATUS, String(Math.trunc(numerator)), String(Math.trunc(denominator)));
  }

  sendData(data: string | Buffer): void {
    this.#job.progress(T.WORK_DATA, data);
  }

  sendWarning(data: string | Buffer): void {
    this.#job.progress(T.WORK_WARNING, data);
  }
}

/** Worker-side state of one assigned job; guards the single terminal packet. */
export class RunningJob {
  readonly conn: GearmanConnection;
  readonly handle: string;
  readonly info: WorkerJobInfo;
  readonly api: WorkerJob;
  /** The connection's generation when the job was assigned: results go only to that socket. */
  private readonly generation: number;
  private readonly baseLog: Logger;
  private jobLog: Logger | undefined;
  private controller: AbortController | undefined;
  private abortReason: Error | undefined;
  private done = false;

  constructor(conn: GearmanConnection, log: Logger, handle: string, functionName: string, unique: string, data: Buffer) {
    this.conn = conn;
    this.handle = handle;
    this.generation = conn.generation;
    this.baseLog = log;
    this.info = { handle, functionName, unique, server: conn.label };
    this.api = new HandlerJob(this, handle, functionName, unique, data);
  }

  /** The job's child logger (made on first use). */
  log(): Logger {
    return (this.jobLog ??= this.baseLog.child({ job: this.handle, function: this.info.functionName }));
  }

  /** The signal handed to the handler (made on first use; already aborted if the job was). */
  signal(): AbortSignal {
    this.controller ??= new AbortController();
    if (this.abortReason && !this.controller.signal.aborted) this.controller.abort(this.abortReason);
    return this.controller.signal;
  }

  abort(reason: Error): void {
    if (this.abortReason) return;
    this.abortReason = reason;
    this.controller?.abort(reason);
  }

  /**
   * Runs `handler` and resolves with its outcome; never rejects. A throw, a rejection or a
   * malformed outcome becomes an exception; no handler becomes a failure.
   */
  async run(handler: JobHandler | undefined): Promise<JobOutcome> {
    if (!handler) return { type: 'fail', message: `no handler registered for ${this.info.functionName}` };
    try {
      return checkOutcome(await handler(this.api));
    } catch (err) {
      const e = coerceError(err);
      this.log().error('job handler threw', { error: e.stack ?? e.message });
      return { type: 'exception', message: e.stack ?? e.message };
    }
  }

  /** Sends the terminal packet(s) once; returns whether they reached the socket. */
  finish(outcome: JobOutcome): boolean {
    if (this.done) return false;
    this.done = true;
    if (!this.writable()) {
      this.log().warn('job finished after its gearman connection was lost; result dropped', { outcome: outcome.type });
      return false;
    }
    const h = this.handle;
    if (outcome.type === 'complete') {
      this.conn.send(encode(T.WORK_COMPLETE, [h, outcome.data ?? EMPTY]));
    } else if (outcome.type === 'fail') {
      if (outcome.message) this.conn.send(encode(T.WORK_WARNING, [h, outcome.message]));
      this.conn.send(encode(T.WORK_FAIL, [h]));
    } else {
      this.conn.send(encode(T.WORK_EXCEPTION, [h, outcome.message]));
    }
    if (this.baseLog.isDebugEnabled()) this.log().debug('job finished', { outcome: outcome.type });
    return true;
  }

  /** WORK_STATUS / WORK_DATA / WORK_WARNING while the job runs on a live connection. */
  progress(type: number, ...rest: Array<string | Buffer>): void {
    if (this.done) {
      this.log().debug('progress after the job ended ignored');
    } else if (!this.writable()) {
      this.log().debug('progress dropped: gearman connection lost');
    } else {
      this.conn.send(encode(type, [this.handle, ...rest]));
    }
  }

  private writable(): boolean {
    return this.conn.connected && this.conn.generation === this.generation;
  }
}

function isBytes(v: unknown): boolean {
  return v === undefined || typeof v === 'string' || Buffer.isBuffer(v);
}

/** Anything but a well-formed outcome from a handler is a bug: report it as an exception. */
function checkOutcome(o: unknown): JobOutcome {
  if (o && typeof o === 'object') {
    const r = o as Record<string, unknown>;
    if (r.type === 'complete' && isBytes(r.data)) return o as JobOutcome;
    if (r.type === 'fail' && (r.message === undefined || typeof r.message === 'string')) return o as JobOutcome;
    if (r.type === 'exception' && typeof r.message === 'string') return o as JobOutcome;
  }
  let shown: string;
  try {
    shown = JSON.stringify(o) ?? String(o);
  } catch {
    shown = String(o);
  }
  return { type: 'exception', message: `job handler returned an invalid outcome: ${shown.slice(0, 200)}` };
}
