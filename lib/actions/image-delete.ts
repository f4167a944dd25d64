/**
 * Operator actions: delete a build or one upload (`nodepool image-delete`, `dib-image-delete`),
 * with Nodepool 3.x semantics: a build is marked `deleting` (the server deletes its uploads
 * first, then its files); an upload is marked `deleting` (the server deletes it from the cloud).
 * Neither while it is still being built or uploaded, nor while a pin holds it (unpin first). A
 * corrupt record (lib/store/corrupt.ts) cannot be marked, so it is removed at once.
 */
import { CorruptRecordError, StateConflictError } from '../errors.js';
import type { PinRecord } from '../store/models.js';
import type { Store } from '../store/store.js';
import { refuse, type ActionResult, type Refused } from './action-result.js';

/** Reason recorded on what an operator deletes. */
export const OPERATOR_DELETE_REASON = 'deleted by operator';

/** What a delete did: marked the record, found it already deleting, or removed a corrupt record. */
export type DeleteOutcome = 'marked' | 'already-deleting' | 'corrupt-removed';

/** The answer of {@link deleteBuild}. */
export type DeleteBuildResult = ActionResult<{ buildId: string; outcome: DeleteOutcome }, 'unknown-build' | 'in-progress' | 'wrong-state'>;

/** An upload as the operator names it (Nodepool's `image-delete --provider --image --build-id --upload-id`). */
export interface UploadName {
  provider: string;
  /** The diskimage, or the upload's image name. */
  image: string;
  /** The full build id, or its sequence number. */
  buildId: string;
  /** The upload id, or its sequence number. */
  uploadId: string;
}

/** The answer of {@link deleteUpload}. */
export type DeleteUploadResult = ActionResult<{ uploadId: string; outcome: DeleteOutcome }, 'unknown-upload' | 'in-progress' | 'wrong-state'>;

/** `nodepool image-unpin <diskimage> [--provider <p>]`, the command that removes `pin`. */
function unpinCommand(pin: PinRecord): string {
  return `nodepool image-unpin ${pin.diskimage}${pin.provider === null ? '' : ` --provider ${pin.provider}`}`;
}

/**
 * A refusal to delete what a pin holds (issue 31 §8): deleting it would leave the pin naming a
 * deleted build while launches quietly boot the newest upload. The operator unpins first.
 */
function pinnedRefusal(what: string, pins: readonly PinRecord[]): Refused<'wrong-state'> {
  const where = pins.map((p) => `${p.diskimage} on ${p.provider ?? 'every provider'}`).join(', ');
  return refuse('wrong-state', `${what} is pinned (${where}); unpin it first (${pins.map(unpinCommand).join('; ')}), then delete it`);
}

/**
 * Marks a ready, failed or lost build `deleting`. Thrown: StoreError (e.g. the store refuses to
 * remove a corrupt build while upload records of it remain, naming them).
 */
export async function deleteBuild(store: Store, args: { buildId: string }): Promise<DeleteBuildResult> {
  const id = args.buildId;
  let build;
  try {
    build = await store.getBuild(id);
  } catch (err) {
    if (!(err instanceof CorruptRecordError)) throw err;
    if (!await store.deleteBuild(id)) return refuse('unknown-build', `Build ${id} not found`);
    return {
      ok: true, buildId: id, outcome: 'corrupt-removed',
      message: `Corrupt build record ${id} removed (${err.reason}); image files a builder holds for it are deleted as strays`,
    };
  }
  if (!build) return refuse('unknown-build', `Build ${id} not found`);
  const alreadyDeleting = { ok: true as const, buildId: id, outcome: 'already-deleting' as const, message: `Build ${id} is already being deleted` };
  const inProgress = refuse('in-progress', 'Cannot delete a build in progress');
  if (build.state === 'deleting') return alreadyDeleting;
  if (build.state === 'building') return inProgress;
  const pins = (await store.listPins()).filter((p) => p.buildId === id);
  if (pins.length > 0) return pinnedRefusal(`Build ${id}`, pins);
  try {
    const updated = await store.updateBuild(id, { state: 'deleting', reason: OPERATOR_DELETE_REASON }, { expectStates: ['ready', 'failed', 'lost'] });
    if (!updated) return refuse('unknown-build', `Build ${id} not found`);
  } catch (err) {
    // Someone changed it between our read and the update: report what it is now.
    if (!(err instanceof StateConflictError)) throw err;
    return err.actualState === 'deleting' ? alreadyDeleting : inProgress;
  }
  return { ok: true, buildId: id, outcome: 'marked', message: `Build ${id} marked for deletion: its uploads are deleted first, then its files` };
}

/** The ids an operator may type for a build: the full id, or the 10-digit sequence (`image` supplies the diskimage). */
function sameBuild(recordBuildId: string, image: string, given: string): boolean {
  if (recordBuildId === given) return true;
  return /^\d+$/.test(given) && recordBuildId === `${image}-${given.padStart(10, '0')}`;
}

const UPLOAD_NOT_FOUND = 'Image upload not found';

/** Marks a ready or failed upload `deleting`. Thrown: StoreError. */
export async function deleteUpload(store: Store, t: UploadName): Promise<DeleteUploadResult> {
  const uploadId = /^\d+$/.test(t.uploadId) ? t.uploadId.padStart(10, '0') : t.uploadId;
  let upload;
  try {
    upload = await store.getUpload(uploadId);
  } catch (err) {
    if (!(err instanceof CorruptRecordError)) throw err;
    // Named with its provider and image: removed at once; a cloud image it stood for is left to the leak check.
    const c = (await store.listCorrupt({ kinds: ['upload'] })).find((x) => x.id === uploadId);
    if (!c || c.provider !== t.provider || !await store.deleteUpload(uploadId)) return refuse('unknown-upload', UPLOAD_NOT_FOUND);
    return {
      ok: true, uploadId, outcome: 'corrupt-removed',
      message: `Corrupt upload record ${uploadId} on ${t.provider} removed (${err.reason}); a cloud image it stood for is left to the leak check`,
    };
  }
  const matches = upload !== undefined && upload.provider === t.provider
    && (upload.diskimage === t.image || upload.imageName === t.image) && sameBuild(upload.buildId, upload.diskimage, t.buildId);
  if (!upload || !matches) return refuse('unknown-upload', UPLOAD_NOT_FOUND);
  const what = `Upload ${upload.id} of ${upload.buildId} to ${upload.provider}`;
  const alreadyDeleting = { ok: true as const, uploadId: upload.id, outcome: 'already-deleting' as const, message: `${what} is already being deleted` };
  const inProgress = refuse('in-progress', 'Cannot delete because image upload in progress');
  if (upload.state === 'deleting') return alreadyDeleting;
  if (upload.state === 'uploading') return inProgress;
  // A pin serves this upload where it applies: its provider's own pin, or the diskimage-wide one.
  const pins = (await store.listPins()).filter((p) => p.buildId === upload.buildId && p.diskimage === upload.diskimage
    && (p.provider === null || p.provider === upload.provider));
  if (upload.state === 'ready' && pins.length > 0) return pinnedRefusal(what, pins);
  try {
    const updated = await store.updateUpload(upload.id, { state: 'deleting', reason: OPERATOR_DELETE_REASON }, { expectStates: ['ready', 'failed'] });
    if (!updated) return refuse('unknown-upload', UPLOAD_NOT_FOUND);
  } catch (err) {
    if (!(err instanceof StateConflictError)) throw err;
    return err.actualState === 'deleting' ? alreadyDeleting : inProgress;
  }
  return { ok: true, uploadId: upload.id, outcome: 'marked', message: `${what} marked for deletion: the server deletes it from the cloud` };
}
