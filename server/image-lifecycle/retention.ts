/**
 * Planner rule 5: deletion and retention. Per image-provider the two newest good ready uploads
 * are kept (ready means validated where the target has `validate:`; one in validation is not
 * counted), per diskimage the two newest good ready builds; everything else goes, uploads first
 * (a build is deleted only once the snapshot holds none of its uploads), a lost build once it
 * has been lost for `lost-grace`. Nothing in progress
 * is deleted, and nothing whose delete is already in flight is asked for again. Records of a
 * diskimage or image-provider that left the config wait `config-removal-grace` first.
 *
 * Issue 24: a revoked build (or an upload revoked by its rollout) is not good: it does not count
 * among the two kept, so the next older good one stays too, and it goes only as an old build
 * would, once two good newer ones exist (the operator may unrevoke it). A pinned build, and its
 * ready uploads on the pinned provider (every provider for a diskimage-wide pin), are never
 * deleted while pinned, whatever their age, count or config removal; only an operator's delete
 * already under way (state `deleting`) goes on.
 */
import { removalKey } from './actions.js';
import { failuresKept } from './backoff.js';
import { isGoodBuild, isGoodUpload, isPinnedUpload, type PlanView, type UploadPair, type WorkingBuild, type WorkingUpload } from './plan-view.js';

/** Ready builds kept per diskimage, and ready uploads kept per image-provider. */
export const KEEP = 2;

/**
 * Whether a build has been lost for `lost-grace`, long enough to be given up: a builder back
 * within it (a reboot, a restart under load) finds its builds again instead of building them anew.
 */
function lostLongEnough(view: PlanView, b: WorkingBuild): boolean {
  return view.now - b.stateTime >= view.lifecycle.lostGrace * 1000;
}

/** Builds to delete once their uploads are gone, with the reason. */
function retiredBuilds(view: PlanView): Map<WorkingBuild, string> {
  const retired = new Map<WorkingBuild, string>();
  const retire = (b: WorkingBuild, reason: string): void => {
    if (b.pins.length === 0 || b.state === 'deleting') retired.set(b, reason);
  };
  const keepFailed = failuresKept(view.lifecycle);
  for (const [name, builds] of view.buildsByDiskimage) {
    if (!view.diskimages.has(name)) {
      const due = view.removalDue(removalKey.diskimage(name));
      for (const b of builds) {
        if (due && b.state !== 'building') retire(b, 'diskimage no longer configured');
        else if (b.state === 'deleting') retire(b, 'resuming deletion');
      }
      continue;
    }
    let good = 0;
    let failed = 0;
    let newestReady: WorkingBuild | undefined;
    for (let i = builds.length - 1; i >= 0; i--) {
      const b = builds[i] as WorkingBuild;
      if (b.state === 'ready') {
        newestReady ??= b;
        // Two good newer builds exist: this one goes, good or revoked.
        if (good >= KEEP) retire(b, 'retention');
        if (isGoodBuild(b)) good++;
      } else if (b.state === 'lost' && lostLongEnough(view, b)) retire(b, 'lost and no longer needed');
      else if (b.state === 'deleting') retire(b, 'resuming deletion');
      else if (b.state === 'failed' && newestReady) retire(b, `failed, superseded by ${newestReady.rec.id}`);
      else if (b.state === 'failed' && ++failed > keepFailed) retire(b, `failed, older than the newest ${keepFailed} failures`);
    }
  }
  return retired;
}

/**
 * Marks the kept uploads of a pair (its two newest good ready ones whose build is not being
 * deleted, and the revoked ready ones newer than the second of those), records its newest
 * ready upload, and returns the failures newer than it beyond the newest `keepFailed`.
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
      if (isGoodUpload(u)) kept++;
    }
  }
  pair.newestReady = newestReady;
  return excess;
}

function uploadDeleteReason(view: PlanView, u: WorkingUpload, retired: Map<WorkingBuild, string>): string | null {
  const { diskimage, provider, buildId } = u.rec;
  const newestReady = u.pair.newestReady;
  if (u.state === 'deleting') return 'resuming deletion';
  if (isPinnedUpload(u)) return null;
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
