/**
 * The dispatcher's build executors: start or resume `image-build` jobs (recording who runs each
 * and where it serves its log) and record their end, fail builds, mark them lost or found, and
 * delete a build's files (`image-delete`, whole or some formats) or files no record wants.
 * Each carries out one planner action through the {@link DispatchContext}.
 */
import { parseBuilderClientId } from '../../lib/gearman/client-id.js';
import { newLogToken } from '../../lib/http/build-log-protocol.js';
import { processSecrets } from '../../lib/redact.js';
import { fn } from '../../lib/gearman/functions.js';
import type { BuildRecord } from '../../lib/store/models.js';
import type { Action } from './actions.js';
import type { DispatchContext, Registered } from './dispatch-context.js';
import { imageFields } from './image-fields.js';
import { failureReason, parseBuildComplete, parseBuilderIdentity, parseFormatsDeleted } from './job-results.js';
import { FILES_DELETED, filesDeletedReason } from './local-files.js';
import { progressWriter } from './progress-writer.js';
import { advertisedIds } from './registrations.js';

/** Joins a lost build's reason and the note it had while ready. */
const BEFORE = '; before: ';

/** A new build record, its job submitted. */
export async function startBuild(ctx: DispatchContext, action: Extract<Action, { type: 'start-build' }>, registered: Registered): Promise<void> {
  // The build's own credential for its log (issue 31 §9): the builder answers the log only to it.
  const logToken = newLogToken();
  processSecrets.add(logToken, { transient: true });
  const build = await ctx.deps.store.createBuild({
    diskimage: action.diskimage, formats: action.formats, skipIds: advertisedIds(registered, action.diskimage),
    ...imageFields(ctx.deps.config().diskimages.find((d) => d.name === action.diskimage)),
    ...(action.servesRequestsUpTo !== undefined ? { servesRequestsUpTo: action.servesRequestsUpTo } : {}),
    logToken,
  });
  ctx.log.info('build started', { buildId: build.id, reason: action.reason, formats: action.formats, ...(action.baseImage !== undefined ? { baseImage: action.baseImage } : {}) });
  submitBuild(ctx, build, logToken, action.baseImage);
}

/** Submits a `building` record's job again (it attaches to the running job if gearmand still has it). */
export async function resumeBuild(ctx: DispatchContext, buildId: string, baseImage?: string): Promise<void> {
  const build = await ctx.deps.store.getBuild(buildId);
  if (build?.state !== 'building' || ctx.builds.has(build.id)) return;
  // A build recorded before log tokens has none: its builder then serves its log to no one.
  const logToken = await ctx.deps.store.buildLogToken(build.id);
  if (logToken !== undefined) processSecrets.add(logToken, { transient: true });
  ctx.log.info('resubmitting a build (attaches to the running job if gearmand still has it)', { buildId: build.id });
  submitBuild(ctx, build, logToken, baseImage);
}

/** `baseImage`: what a snapshot build on another diskimage boots (that diskimage's newest ready upload's external id). */
function submitBuild(ctx: DispatchContext, build: BuildRecord, logToken: string | undefined, baseImage?: string): void {
  const { store, client } = ctx.deps;
  const { live, follow } = ctx.startJob(ctx.builds, build.id);
  const progress = progressWriter({
    intervalMs: ctx.progressIntervalMs, live,
    write: (p) => ctx.track(store.updateBuild(build.id, { progress: p }, { expectStates: ['building'] }).catch(() => undefined)),
  });
  const job = client.submit(fn.imageBuild(build.diskimage), JSON.stringify({
    'image-id': build.id, created: build.created, ...ctx.installationKey(), ...(logToken !== undefined ? { 'log-token': logToken } : {}),
    ...(baseImage !== undefined ? { 'base-image': baseImage } : {}),
  }), {
    unique: ctx.unique(build.id),
    onStatus: (n, d) => { if (live()) progress(n, d); },
    onData: (data) => {
      const who = parseBuilderIdentity(data);
      if (!who || !live()) return;
      ctx.log.info('build running', { buildId: build.id, builder: who.hostname, logUrl: who.logUrl });
      // The log URL is recorded now, so a running build's log can be followed (null: its builder serves none).
      ctx.track(store.updateBuild(build.id, { builderHostname: who.hostname, builderId: who.builderId, logUrl: who.logUrl }, { expectStates: ['building'] }));
    },
  });
  follow(job.result, {
    what: { buildId: build.id },
    parse: (data) => parseBuildComplete(data, build.id),
    onComplete: (outcome) => recordBuild(ctx, build, outcome),
    fail: (reason) => failBuild(ctx, build.id, reason),
  });
}

async function recordBuild(ctx: DispatchContext, build: BuildRecord, outcome: ReturnType<typeof parseBuildComplete>): Promise<void> {
  const ready = await ctx.guard(() => ctx.deps.store.updateBuild(build.id, {
    state: 'ready', builderHostname: outcome.builderHostname, builderId: outcome.builderId,
    formats: outcome.formats, files: outcome.files, progress: null, reason: null,
  }, { expectStates: ['building'] }), build.id);
  if (!ready) return;
  ctx.log.info('build ready', { buildId: build.id, builder: outcome.builderHostname, formats: outcome.formats });
  ctx.events.emit('build:ready', ready);
}

/** Fails a `building` record (its job is no longer followed). */
export async function failBuild(ctx: DispatchContext, buildId: string, reason: string): Promise<void> {
  const failed = await ctx.guard(() => ctx.deps.store.updateBuild(buildId, { state: 'failed', reason, progress: null }, { expectStates: ['building'] }), buildId);
  if (!failed) return;
  ctx.log.warn('build failed', { buildId, reason });
  ctx.events.emit('build:failed', buildId, reason);
}

/** A ready build no builder advertises any more: lost, keeping a note that its local files were deleted after upload. */
export async function markLost(ctx: DispatchContext, buildId: string): Promise<void> {
  const { store } = ctx.deps;
  const b = await store.getBuild(buildId);
  const lost = `no builder advertises its files any more${b?.builderHostname ? ` (last held by ${b.builderHostname})` : ''}`;
  // A note that its local files were deleted after upload is kept, for when it is found again.
  const reason = b?.reason?.startsWith(FILES_DELETED) ? `${lost}${BEFORE}${b.reason}` : lost;
  await store.updateBuild(buildId, { state: 'lost', reason }, { expectStates: ['ready'] });
  ctx.log.warn('build lost', { buildId, reason });
}

/** A lost build a builder advertises again: ready, held by that builder, with the note it had. */
export async function markFound(ctx: DispatchContext, buildId: string, holders: string[]): Promise<void> {
  const { store } = ctx.deps;
  const holder = parseBuilderClientId(holders[0] ?? '');
  const was = (await store.getBuild(buildId))?.reason ?? '';
  const note = was.includes(`${BEFORE}${FILES_DELETED}`) ? was.slice(was.indexOf(BEFORE) + BEFORE.length) : null;
  await store.updateBuild(buildId, { state: 'ready', reason: note, ...(holder ? { builderHostname: holder.hostname, builderId: holder.builderId } : {}) }, { expectStates: ['lost'] });
  ctx.log.info('lost build found again', { buildId, holders });
}

/** Marks a build deleting and has its builders delete its files; the record goes once they did (or nobody holds any). */
export async function deleteBuild(ctx: DispatchContext, buildId: string, reason: string, registered: Registered): Promise<void> {
  if (ctx.buildDeletes.has(buildId)) return;
  const build = await ctx.deps.store.updateBuild(buildId, { state: 'deleting', reason }, { expectStates: ['ready', 'failed', 'lost', 'deleting'] });
  if (!build) return;
  const holders = registered?.get(fn.imageDelete(buildId)) ?? [];
  if (registered !== null && holders.length === 0) {
    // Nobody holds files of this id: the record is all there is.
    await removeBuildRecord(ctx, buildId, 'no builder holds its files');
    return;
  }
  if (registered === null) return; // cannot tell who holds it; the next pass decides
  ctx.log.info('deleting build files', { buildId, holders, reason });
  submitDelete(ctx, buildId, async () => removeBuildRecord(ctx, buildId, 'its builder deleted the files'));
}

async function removeBuildRecord(ctx: DispatchContext, buildId: string, why: string): Promise<void> {
  if (await ctx.deps.store.deleteBuild(buildId)) {
    ctx.log.info('build deleted', { buildId, why });
    ctx.events.emit('build:deleted', buildId);
  }
}

/** Has the builders delete files of an id no record wants; a refusal is asked again after a grace period. */
export function deleteStray(ctx: DispatchContext, imageId: string, holders: string[]): void {
  if (ctx.buildDeletes.has(imageId)) return;
  const retryAt = ctx.strayRetryAt.get(imageId);
  if (retryAt !== undefined && Date.now() < retryAt) return;
  ctx.log.info('deleting image files no record wants', { buildId: imageId, holders });
  submitDelete(ctx, imageId, async () => { ctx.strayRetryAt.delete(imageId); }, () => {
    // Refused (another installation's files, a build in progress): ask again after another grace period, not every pass.
    const waitS = Math.max(60, ctx.deps.config().imageLifecycle.strayGrace);
    ctx.strayRetryAt.set(imageId, Date.now() + waitS * 1000);
    return `asking again in ${waitS} s`;
  });
}

/**
 * `delete-after-upload`: asks the builder holding a ready build to delete the local files of
 * `formats` (`image-delete:<id>` with `formats`); the build stays ready, its record's `files`
 * then list what remains and its reason says what was deleted.
 */
export function deleteFormats(ctx: DispatchContext, buildId: string, formats: string[], kept: string[]): void {
  if (ctx.buildDeletes.has(buildId)) return;
  ctx.log.info('deleting local files uploaded everywhere (delete-after-upload)', { buildId, formats, kept });
  submitDelete(ctx, buildId, async (data) => {
    const outcome = parseFormatsDeleted(data, buildId);
    if (!outcome) {
      // A builder that knows only whole deletes (an older one) ignored `formats`.
      ctx.log.warn('the builder deleted the whole build instead of some formats (a builder without partial deletes); the build is marked lost once no builder advertises it', { buildId, formats });
      return;
    }
    const build = await ctx.guard(() => ctx.deps.store.updateBuild(buildId, {
      files: outcome.files, reason: filesDeletedReason(outcome.deleted, kept),
    }, { expectStates: ['ready'] }), buildId);
    ctx.log.info('local files deleted after upload', { buildId, deleted: outcome.deleted, freedBytes: outcome.freedBytes, remaining: outcome.files.map((f) => f.format) });
    if (build) ctx.events.emit('build:files-deleted', build, outcome);
  }, undefined, formats);
}

/**
 * Submits `image-delete:<id>` (with `formats`: only those files); `done` runs with the
 * builder's WORK_COMPLETE data, `refused` (saying when it retries) after another end.
 */
function submitDelete(ctx: DispatchContext, buildId: string, done: (data: Buffer) => Promise<void>, refused: () => string = () => 'the next pass retries', formats?: string[]): void {
  ctx.buildDeletes.add(buildId);
  const key = ctx.installationKey();
  const payload = formats ? JSON.stringify({ ...key, formats }) : key.installation ? JSON.stringify(key) : '';
  // Its own unique: gearmand must not merge it with a whole delete of the id.
  const unique = ctx.unique(formats ? `${buildId}:formats:${formats.join(',')}` : buildId);
  const job = ctx.deps.client.submit(fn.imageDelete(buildId), payload, { unique });
  ctx.track(job.result.then(
    async (result) => {
      if (ctx.stopped) return;
      if (result.type === 'complete') await done(result.data);
      else ctx.log.warn('image-delete did not complete', { buildId, reason: failureReason(result), retry: refused() });
    },
    (err: Error) => ctx.log.warn('image-delete job lost; the next pass retries', { buildId, error: err.message }),
  ).finally(() => ctx.buildDeletes.delete(buildId)), ctx.jobs);
}

