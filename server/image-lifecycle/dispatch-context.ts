/**
 * What the dispatcher's executors share: its dependencies and events, what is in flight, and
 * the plumbing every job and store write goes through (background tracking, Gearman uniques
 * and installation key, following a job's end, guarded state writes). No decisions: those are
 * the planner's; the executors (build-jobs.ts, upload-jobs.ts) carry them out through this.
 */
import type { EventEmitter } from 'node:events';
import type { Config } from '../../lib/config/schema.js';
import type { ImageServiceFactory } from '../../lib/drivers/core/driver-hosts.js';
import { coerceError, GearmanConnectionError, isStoreUnreachable, StateConflictError } from '../../lib/errors.js';
import type { GearmanClient } from '../../lib/gearman/client.js';
import type { JobResult } from '../../lib/gearman/types.js';
import { retryWithBackoff } from '../../lib/lifecycle.js';
import type { Logger } from '../../lib/log.js';
import type { BuildRecord, UploadRecord } from '../../lib/store/models.js';
import type { Store } from '../../lib/store/store.js';
import type { PlannerSnapshot } from './actions.js';
import { failureReason, jobUnique, type FormatsDeleted } from './job-results.js';

/** Dependencies of the image dispatcher. */
export interface ImageDispatcherDeps {
  store: Store;
  client: GearmanClient;
  config: () => Config;
  /** Image services of image-managing providers (the server's own credentials), for cloud deletes. */
  imageServices: ImageServiceFactory;
  log: Logger;
  /** Least time between two progress writes of one record (default 1000 ms); upload progress carries the rate. */
  progressIntervalMs?: number;
  /**
   * The store's installation id, sent with every build, upload and delete job (an extra key that
   * Nodepool 0.3.x builders ignore) so builders refuse another installation's files.
   */
  installation?: () => string | undefined;
}

/** Events of the image dispatcher, for logs, status and tests. */
export interface ImageDispatcherEvents {
  'build:ready': [build: BuildRecord];
  'build:failed': [buildId: string, reason: string];
  'build:deleted': [buildId: string];
  /** `delete-after-upload`: local files of a ready build deleted on its builder (the record lists what remains). */
  'build:files-deleted': [build: BuildRecord, deleted: FormatsDeleted];
  'upload:ready': [upload: UploadRecord];
  /** Uploaded to a target with `validate:`: a launcher of its provider validates it next. */
  'upload:validating': [upload: UploadRecord];
  'upload:failed': [uploadId: string, reason: string];
  'upload:deleted': [uploadId: string];
}

/** Which builders advertise which functions (null: gearmand's admin protocol did not answer). */
export type Registered = PlannerSnapshot['registered'];

/** Where the end of a job goes ({@link InFlightJob.follow}). */
export interface JobFollower<T> {
  /** Log fields naming the record. */
  what: Record<string, string>;
  /** Reads the builder's WORK_COMPLETE data; what it throws fails the record. */
  parse(data: Buffer): T;
  /** Records the job's outcome. */
  onComplete(outcome: T): Promise<void>;
  /** Fails the record: the job failed, its result did not parse, or gearmand refused it. */
  fail(reason: string): Promise<void>;
}

/** A build or upload job in flight for a record ({@link DispatchContext.startJob}). */
export interface InFlightJob {
  /** Whether its results still count (not stopped, not given up or replaced). */
  live(): boolean;
  /**
   * Follows the job's end while it is live: a completion's outcome goes to `onComplete`, a
   * failure to `fail` (the record stays in flight until either is recorded); a lost gearmand
   * connection only drops it from the in-flight set, so the next pass resubmits it with the
   * same unique; gearmand refusing it fails the record.
   */
  follow<T>(result: Promise<JobResult>, h: JobFollower<T>): void;
}

/** The dispatcher's shared state and plumbing, handed to every executor. */
export class DispatchContext {
  /** Record id → token of the job in flight; a job whose token was replaced or dropped is ignored. */
  readonly builds = new Map<string, symbol>();
  readonly uploads = new Map<string, symbol>();
  readonly buildDeletes = new Set<string>();
  readonly uploadDeletes = new Set<string>();
  /** Stray ids whose delete a builder refused, and when to ask again. */
  readonly strayRetryAt = new Map<string, number>();
  /** Store writes and cloud deletes: a stop waits for them. */
  readonly background = new Set<Promise<unknown>>();
  /** Followers of Gearman jobs, which end with the job (up to build-timeout): a stop does not wait. */
  readonly jobs = new Set<Promise<unknown>>();
  stopped = false;
  readonly log: Logger;
  /** Least time between two progress writes of one record; a failed write is dropped (the next sample writes again). */
  readonly progressIntervalMs: number;

  constructor(readonly deps: ImageDispatcherDeps, readonly events: EventEmitter<ImageDispatcherEvents>) {
    this.log = deps.log;
    this.progressIntervalMs = deps.progressIntervalMs ?? 1000;
  }

  /** Keeps `p` in `set` until it settles; `set` is {@link background} unless it follows a Gearman job. */
  track(p: Promise<unknown>, set = this.background): void {
    const tracked = p.catch((err: unknown) => this.log.error('background image work failed', { error: coerceError(err).message }))
      .finally(() => set.delete(tracked));
    set.add(tracked);
  }

  /**
   * The Gearman unique of a job about `key`, prefixed with the installation id: two installations
   * on one gearmand number their records alike, and gearmand would otherwise merge one's job into
   * the other's (same function and unique) and hand it the other's result.
   */
  unique(key: string): string {
    const installation = this.deps.installation?.();
    return jobUnique(installation ? `${installation}:${key}` : key);
  }

  /** `{installation}` for job payloads, or nothing before the store's id is known. */
  installationKey(): { installation?: string } {
    const installation = this.deps.installation?.();
    return installation ? { installation } : {};
  }

  /** Registers a job for record `id` in `inFlight` (builds or uploads) under a token of its own. */
  startJob(inFlight: Map<string, symbol>, id: string): InFlightJob {
    const token = Symbol(id);
    inFlight.set(id, token);
    const live = (): boolean => !this.stopped && inFlight.get(id) === token;
    const follow = <T>(result: Promise<JobResult>, h: JobFollower<T>): void => {
      const record = async (r: JobResult): Promise<void> => {
        if (r.type !== 'complete') return h.fail(failureReason(r));
        let outcome: T;
        try {
          outcome = h.parse(r.data);
        } catch (err) {
          return h.fail((err as Error).message);
        }
        return h.onComplete(outcome);
      };
      this.track(result.then(
        // Still in flight while its result is being recorded (maybe across a store outage), so no pass resubmits it.
        (r) => (live() ? record(r).finally(() => { if (inFlight.get(id) === token) inFlight.delete(id); }) : undefined),
        (err: Error) => {
          if (!live()) return;
          inFlight.delete(id);
          if (err instanceof GearmanConnectionError) {
            this.log.warn('lost gearmand while a job ran; it is resubmitted next pass', { ...h.what, error: err.message });
            return;
          }
          return h.fail(`gearmand refused the job: ${err.message}`);
        },
      ), this.jobs);
    };
    return { live, follow };
  }

  /**
   * Writes a state change: one that lost a race (the record changed meanwhile) is logged, not
   * thrown; one the store could not take because it is unreachable (ZooKeeper down, the
   * session being replaced) is tried again with capped backoff until the store answers or
   * the dispatcher stops, so a job's result that arrives during an outage is recorded
   * afterwards instead of being dropped (and the job submitted again).
   */
  async guard<T>(write: () => Promise<T | undefined>, id: string): Promise<T | undefined> {
    try {
      return await retryWithBackoff(write, {
        retryable: (err) => isStoreUnreachable(err) && !this.stopped, initialMs: 500, maxMs: 5000,
        onRetry: (err, n) => {
          if (n === 0) this.log.warn('state store unreachable; recording the result when it answers again', { id, error: coerceError(err).message });
        },
      });
    } catch (err) {
      if (err instanceof StateConflictError) {
        this.log.info('record changed meanwhile; result not recorded', { id, state: err.actualState });
        return undefined;
      }
      throw err;
    }
  }
}
