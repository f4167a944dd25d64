/**
 * Planner rule 5: deletion and retention. Per image-provider the two newest ready uploads
 * are kept (ready means validated where the target has `validate:`; one in validation is not
 * counted), per diskimage the two newest ready builds; everything else goes, uploads first
 * (a build is deleted only once the snapshot holds none of its uploads). Nothing in progress
 * is deleted, and nothing whose delete is already in flight is asked for again. Records of a
 * diskimage or image-provider that left the config wait `config-removal-grace` first.
 */
import { removalKey } from './actions.js';
import { failuresKept } from './backoff.js';
import type { PlanView, UploadPair, WorkingBuild, WorkingUpload } from './plan-view.js';

/** Ready builds kept per diskimage, and ready uploads kept per image-provider. */
export const KEEP = 2;

/** Builds to delete once their uploads are gone, with the reason. */
function retiredBuilds(view: PlanView): Map<WorkingBuild, string> {
  const retired = new Map<WorkingBuild, string>();
  const keepFailed = failuresKept(view.lifecycle);
  for (const [name, builds] of view.buildsByDiskimage) {
    if (!view.diskimages.has(name)) {
      const due = view.removalDue(removalKey.diskimage(name));
      for (const b of builds) {
        if (due && b.state !== 'building') retired.set(b, 'diskimage no longer configured');
        else if (b.state === 'deleting') retired.set(b, 'resuming deletion');
      }
      continue;
    }
    let ready = 0;
    let failed = 0;
    let newestReady: WorkingBuild | undefined;
    for (let i = builds.length - 1; i >= 0; i--) {
      const b = builds[i] as WorkingBuild;
      if (b.state === 'ready') {
        newestReady ??= b;
        if (++ready > KEEP) retired.set(b, 'retention');
      } else if (b.state === 'lost') retired.set(b, 'lost and no longer needed');
      else if (b.state === 'deleting') retired.set(b, 'resuming deletion');
      else if (b.state === 'failed' && newestReady) retired.set(b, `failed, superseded by ${newestReady.rec.id}`);
      else if (b.state === 'failed' && ++failed > keepFailed) retired.set(b, `failed, older than the newest ${keepFailed} failures`);
    }
  }
  return retired;
}

/**
 * Marks the kept uploads of a pair (its two newest ready ones whose build is not being
 * deleted), records its newest ready upload, and returns the failures newer than it beyond
 * the newest `keepFailed`.
 */
function markKept(pair: UploadPair, keepFailed: number): WorkingUpload[] {
  let newestReady: WorkingUpload | undefined;
  let kept = 0;
  let failed = 0;
  const excess: WorkingUpload[] = [];
  for (let i = pair.uploads.length - 1; i >= 0 && kept < KEEP; i--) {
    const u = pair.uploads[i] as WorkingUpload;
    if (u.state === 'failed' && !newestReady && ++failed > keepFailed) excess.push(u);
    if (u.state !== 'ready') continue;
    newestReady ??= u;
    if (u.build?.state !== 'deleting') {
      u.kept = true;
      kept++;
    }
  }
  pair.newestReady = newestReady;
  return excess;
}

function uploadDeleteReason(view: PlanView, u: WorkingUpload, retired: Map<WorkingBuild, string>): string | null {
  const { diskimage, provider, buildId } = u.rec;
  const newestReady = u.pair.newestReady;
  if (u.state === 'deleting') return 'resuming deletion';
  if (!u.pair.target) {
    const listed = view.diskimages.has(diskimage);
    if (!view.removalDue(listed ? removalKey.target(diskimage, provider) : removalKey.diskimage(diskimage))) return null;
    return listed ? `provider ${provider} no longer lists ${diskimage}` : 'diskimage no longer configured';
  }
  if (u.build?.state === 'deleting') return 'build is being deleted';
  if (u.kept) return null;
  if (u.state === 'ready') return 'retention';
  if (u.state === 'failed' && newestReady && u.seq < newestReady.seq) return `failed, superseded by upload ${newestReady.rec.id}`;
  if (!u.build) return `build ${buildId} no longer exists`;
  const buildReason = retired.get(u.build);
  return buildReason === undefined ? null : `build ${buildId} is deleted: ${buildReason}`;
}

/** Rule 5: delete-upload and delete-build actions. */
export function retention(view: PlanView): void {
  const { uploadDeletes, buildDeletes } = view.snapshot.inFlight;
  const retired = retiredBuilds(view);
  const keepFailed = failuresKept(view.lifecycle);
  const excessFailures = new Set(view.pairList.flatMap((pair) => markKept(pair, keepFailed)));
  for (const u of view.uploads) {
    // In progress: never deleted (a validating upload whose target left is failed first by rule 3b).
    if (u.state === 'uploading' || u.state === 'validating' || uploadDeletes.has(u.rec.id)) continue;
    const reason = excessFailures.has(u) && u.pair.target ? `failed, older than the newest ${keepFailed} failures` : uploadDeleteReason(view, u, retired);
    if (reason !== null) view.emit(u, { type: 'delete-upload', uploadId: u.rec.id, reason });
  }
  for (const b of view.builds) {
    const reason = retired.get(b);
    if (reason === undefined || b.uploads.length > 0 || buildDeletes.has(b.rec.id)) continue;
    view.emit(b, { type: 'delete-build', buildId: b.rec.id, reason });
  }
}
