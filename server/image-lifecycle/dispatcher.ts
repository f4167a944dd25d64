/**
 * Carries out the planner's actions: submits `image-build`, `image-upload` and
 * `image-delete` jobs with the record id as Gearman unique, deletes cloud images, and
 * records every result in the store. Jobs run in the background; what is in flight is
 * reported back to the planner so nothing is submitted twice. Each action type has its
 * executor (action-executors.ts → build-jobs.ts, upload-jobs.ts); what they share is the
 * {@link DispatchContext}.
 *
 * A job whose gearmand connection is lost keeps its record in building/uploading: the next
 * pass resubmits it with the same unique, which attaches to the job if gearmand still has it.
 */
import { EventEmitter } from 'node:events';
import { coerceError } from '../../lib/errors.js';
import { executeAction } from './action-executors.js';
import type { Action, PlannerSnapshot } from './actions.js';
import { DispatchContext, type ImageDispatcherDeps, type ImageDispatcherEvents, type Registered } from './dispatch-context.js';

export type { ImageDispatcherDeps, ImageDispatcherEvents } from './dispatch-context.js';

export class ImageDispatcher extends EventEmitter<ImageDispatcherEvents> {
  private readonly ctx: DispatchContext;

  constructor(deps: ImageDispatcherDeps) {
    super();
    this.ctx = new DispatchContext(deps, this);
  }

  /** What is in flight here, for the planner. */
  inFlight(): PlannerSnapshot['inFlight'] {
    const { ctx } = this;
    return {
      builds: new Set(ctx.builds.keys()),
      uploads: new Set(ctx.uploads.keys()),
      buildDeletes: new Set(ctx.buildDeletes),
      uploadDeletes: new Set(ctx.uploadDeletes),
    };
  }

  /** Carries out one pass's actions in order; one failing action does not stop the others. */
  async execute(actions: readonly Action[], registered: Registered): Promise<void> {
    for (const action of actions) {
      if (this.ctx.stopped) return;
      try {
        await executeAction(this.ctx, action, registered);
      } catch (raw) {
        const err = coerceError(raw);
        this.ctx.log.warn('action failed; the next pass retries', { action: action.type, ...describe(action), error: err.message });
      }
    }
  }

  /**
   * Stops acting on results: jobs still running keep their records in building/uploading,
   * and the next server resumes them with the same unique. Waits for store writes and cloud
   * deletes in progress, not for the Gearman jobs (their results are ignored from now on).
   */
  async stop(): Promise<void> {
    this.ctx.stopped = true;
    this.ctx.builds.clear();
    this.ctx.uploads.clear();
    await Promise.allSettled([...this.ctx.background]);
  }

  /** Resolves when every background job and delete has settled (tests). */
  async settled(): Promise<void> {
    const { background, jobs } = this.ctx;
    while (background.size || jobs.size) await Promise.allSettled([...background, ...jobs]);
  }
}

function describe(action: Action): Record<string, unknown> {
  const { type: _type, ...rest } = action;
  return rest;
}
