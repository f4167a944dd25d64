/**
 * Planner rule 3: what happens to `uploading` (and, through validating.ts, `validating`)
 * records, and when the newest ready build of a diskimage is uploaded to a provider; returns
 * one status per image-provider target. An upload in validation counts as in progress: no
 * new upload to its target starts meanwhile. A revoked build is not uploaded anew: the newest
 * ready build no operator revoked is the one a provider gets. After failures the next upload
 * waits out the retry backoff, unless an operator asked to retry now after the newest failure.
 */
import { fn } from '../../lib/gearman/functions.js';
import { retryDelayMs } from './backoff.js';
import { ADMIN_UNREACHABLE } from './builds.js';
import type { PlanView, UploadTarget, WorkingUpload } from './plan-view.js';
import type { UploadTargetStatus } from '../../lib/status/lifecycle-status.js';
import { planValidating } from './validating.js';
import { missingSource } from './local-files.js';

function failUpload(view: PlanView, u: WorkingUpload, reason: string): void {
  if (!view.emit(u, { type: 'fail-upload', uploadId: u.rec.id, reason })) return;
  u.state = 'failed';
  u.stateTime = view.now;
  u.reason = reason;
}

/** Fails, resumes or leaves one `uploading` upload. */
function planUploading(view: PlanView, u: WorkingUpload): void {
  const { id, buildId, provider, diskimage } = u.rec;
  const held = view.isRegistered(fn.imageUpload(buildId));
  if (view.snapshot.inFlight.uploads.has(id)) {
    if (view.adminReachable && !held) failUpload(view, u, `no builder holds ${buildId} any more`);
    return;
  }
  if (!u.pair.target) failUpload(view, u, `provider ${provider} no longer lists ${diskimage}`);
  else if (!u.build) failUpload(view, u, `build ${buildId} no longer exists`);
  else if (u.build.state !== 'ready') failUpload(view, u, `build ${buildId} is ${u.build.state}`);
  else if (!view.adminReachable) return;
  else if (!held) failUpload(view, u, `no builder holds ${buildId} any more`);
  else view.emit(u, { type: 'resume-upload', uploadId: id });
}

/** Rule 3 for one target; returns its status. */
function planTarget(view: PlanView, t: UploadTarget): UploadTargetStatus {
  const uploads = t.pair.uploads;
  let uploading = false;
  for (const u of uploads) {
    if (u.state === 'uploading') planUploading(view, u);
    else if (u.state === 'validating') planValidating(view, u);
    else continue;
    if (u.state === 'uploading' || u.state === 'validating') uploading = true;
  }
  // Newest first: failures since the newest ready upload drive the backoff.
  let failures = 0;
  let newestFailed: WorkingUpload | undefined;
  let lastFailed: WorkingUpload | undefined;
  let sinceReady = true;
  for (let i = uploads.length - 1; i >= 0; i--) {
    const u = uploads[i] as WorkingUpload;
    if (u.state === 'ready') sinceReady = false;
    else if (u.state === 'failed') {
      lastFailed ??= u;
      if (sinceReady) {
        failures++;
        newestFailed ??= u;
      }
    }
    if (!sinceReady && lastFailed) break;
  }
  // An operator's retry request newer than the newest failure skips the backoff (once: it is cleared when the upload starts).
  const retryRequested = t.pair.retryRequested;
  const retryNow = newestFailed !== undefined && retryRequested !== undefined && retryRequested > newestFailed.stateTime;
  const backoffUntil = newestFailed ? newestFailed.stateTime + retryDelayMs(failures, view.lifecycle) : null;
  const retryAt = retryNow && backoffUntil !== null ? Math.min(backoffUntil, retryRequested) : backoffUntil;
  const status: UploadTargetStatus = {
    diskimage: t.diskimage.name,
    provider: t.provider,
    paused: view.uploadPausedBy(t),
    waiting: null,
    failures,
    lastFailure: lastFailed?.reason ?? null,
    retryAt,
  };

  const build = view.newestGood(t.diskimage.name);
  if (!build || status.paused || uploading) return status;
  if (uploads.some((u) => u.state === 'ready' && u.build === build)) return status;
  if (!retryNow && retryAt !== null && view.now < retryAt) return status;
  const uploadFn = fn.imageUpload(build.rec.id);
  const missing = missingSource(view, build, t);
  if (missing !== null) status.waiting = missing;
  else if (!view.adminReachable) status.waiting = ADMIN_UNREACHABLE;
  else if (!view.isRegistered(uploadFn)) status.waiting = `no builder registers ${uploadFn}`;
  else {
    // Any standing request is served by this upload (a stale one, older than the newest failure, too).
    const servesRetry = retryRequested !== undefined ? { servesRetry: { diskimage: t.diskimage.name, requested: retryRequested } } : {};
    view.actions.push({ type: 'start-upload', buildId: build.rec.id, provider: t.provider, imageName: t.imageName, ...servesRetry });
  }
  return status;
}

/** Rule 3 for every target, then `uploading` and `validating` records whose target left the config. */
export function planUploads(view: PlanView): UploadTargetStatus[] {
  const statuses = view.targets.map((t) => planTarget(view, t));
  for (const u of view.uploads) {
    if (u.pair.target) continue;
    if (u.state === 'uploading') planUploading(view, u);
    else if (u.state === 'validating') planValidating(view, u);
  }
  return statuses;
}
