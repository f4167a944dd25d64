/**
 * ClientJob: one job submitted by GearmanClient, and the {@link SubmittedJob} its submitter
 * holds. It settles exactly once. The `handle` promise is made only when someone reads it,
 * and a promise is marked handled only when it rejects: most callers await `result` alone,
 * and the spare promises were a measurable share of a round trip.
 */
import type { JobResult, SubmitOptions, SubmittedJob } from './types.js';

const noop = (): void => undefined;

/**
 * One submitted job. `submit()` returns it typed as {@link SubmittedJob} (no wrapper object per
 * job); its other members are GearmanClient's.
 */
export class ClientJob implements SubmittedJob {
  /** Tells a job apart from the other requests in a connection's reply FIFO. */
  readonly kind = 'submit';
  readonly result: Promise<JobResult>;
  /** The encoded SUBMIT_JOB* packet (undefined when the job failed before it was encoded). */
  packet: Buffer | undefined;
  /** The job handle, once gearmand created the job. */
  jobHandle: string | undefined;
  /** WORK_WARNING payloads so far (made on the first one). */
  warnings: Buffer[] | undefined;
  settled = false;
  private resolveResult!: (r: JobResult) => void;
  private rejectResult!: (e: Error) => void;
  private handlePromise: Promise<string> | undefined;
  private resolveHandle: ((h: string) => void) | undefined;
  private rejectHandle: ((e: Error) => void) | undefined;
  private error: Error | undefined;

  constructor(readonly functionName: string, readonly background: boolean, readonly opts: SubmitOptions) {
    this.result = new Promise<JobResult>((resolve, reject) => {
      this.resolveResult = resolve;
      this.rejectResult = reject;
    });
  }

  /** The job handle, once gearmand created the job (pre-handled, like `result`). */
  get handle(): Promise<string> {
    if (!this.handlePromise) {
      if (this.jobHandle !== undefined) {
        this.handlePromise = Promise.resolve(this.jobHandle);
      } else if (this.error) {
        this.handlePromise = Promise.reject(this.error);
        this.handlePromise.catch(noop);
      } else {
        this.handlePromise = new Promise<string>((resolve, reject) => {
          this.resolveHandle = resolve;
          this.rejectHandle = reject;
        });
        this.handlePromise.catch(noop);
      }
    }
    return this.handlePromise;
  }

  /** JOB_CREATED arrived: resolves `handle`. */
  created(handle: string): void {
    this.jobHandle = handle;
    this.resolveHandle?.(handle);
  }

  /** Resolves `result` (once; later calls do nothing). */
  settle(r: JobResult): void {
    if (this.settled) return;
    this.settled = true;
    this.resolveResult(r);
  }

  /** Rejects `result`, and `handle` unless the job was created (once; later calls do nothing). */
  fail(err: Error): void {
    if (this.settled) return;
    this.settled = true;
    this.error = err;
    this.result.catch(noop);
    this.rejectResult(err);
    if (this.jobHandle === undefined) this.rejectHandle?.(err);
  }
}
