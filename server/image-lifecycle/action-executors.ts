/**
 * Which executor carries out which planner action: one entry per action type (a new action is
 * one more entry and its executor, not another case in the dispatcher). The table is checked
 * by the compiler to cover every type of {@link Action}.
 */
import type { Action } from './actions.js';
import {
  deleteBuild, deleteFormats, deleteStray, failBuild, markFound, markLost, resumeBuild, startBuild,
} from './build-jobs.js';
import type { DispatchContext, Registered } from './dispatch-context.js';
import { deleteUpload, failUpload, failValidation, resumeUpload, skipValidation, startUpload } from './upload-jobs.js';

/** Carries out one action of type `T`. */
type Executor<T extends Action['type']> = (ctx: DispatchContext, action: Extract<Action, { type: T }>, registered: Registered) => Promise<void> | void;

/** Every action type's executor. */
export const ACTION_EXECUTORS: { readonly [T in Action['type']]: Executor<T> } = {
  'start-build': (ctx, a, registered) => startBuild(ctx, a, registered),
  'resume-build': (ctx, a) => resumeBuild(ctx, a.buildId, a.baseImage),
  'fail-build': (ctx, a) => {
    ctx.builds.delete(a.buildId);
    return failBuild(ctx, a.buildId, a.reason);
  },
  'start-upload': async (ctx, a) => {
    await startUpload(ctx, a.buildId, a.provider, a.imageName);
    if (a.servesRetry) await ctx.deps.store.clearUploadRetry(a.servesRetry.diskimage, a.provider, a.servesRetry.requested);
  },
  'resume-upload': (ctx, a) => resumeUpload(ctx, a.uploadId),
  'fail-upload': (ctx, a) => {
    ctx.uploads.delete(a.uploadId);
    return failUpload(ctx, a.uploadId, a.reason);
  },
  'fail-validation': (ctx, a) => failValidation(ctx, a.uploadId, a.reason),
  'skip-validation': (ctx, a) => skipValidation(ctx, a.uploadId, a.reason),
  'delete-upload': (ctx, a) => deleteUpload(ctx, a.uploadId, a.reason),
  'delete-build': (ctx, a, registered) => deleteBuild(ctx, a.buildId, a.reason, registered),
  'delete-formats': (ctx, a) => deleteFormats(ctx, a.buildId, a.formats, a.kept),
  'mark-lost': (ctx, a) => markLost(ctx, a.buildId),
  'mark-found': (ctx, a) => markFound(ctx, a.buildId, a.holders),
  'delete-stray': (ctx, a) => deleteStray(ctx, a.imageId, a.holders),
  'clear-request': async (ctx, a) => { await ctx.deps.store.clearBuildRequest(a.diskimage, a.requested); },
  'forget-revocation': async (ctx, a) => {
    await ctx.deps.store.setRevocation(a.diskimage, a.buildId, false);
    ctx.log.info('revocation removed: the build and its uploads are gone', { diskimage: a.diskimage, build: a.buildId });
  },
};

/** Carries out `action` with its type's executor. */
export function executeAction(ctx: DispatchContext, action: Action, registered: Registered): Promise<void> | void {
  const run = ACTION_EXECUTORS[action.type] as Executor<Action['type']>;
  return run(ctx, action, registered);
}
