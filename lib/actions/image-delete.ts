/**
 * Operator actions: delete a build or one upload (`nodepool image-delete`, `dib-image-delete`),
 * with Nodepool 3.x semantics: a build is marked `deleting` (the server deletes its uploads
 * first, then its files); an upload is marked `deleting` (the server deletes it from the cloud).
 * Neither while it is still being built or uploaded, nor while a pin holds it (unpin first). A
 * corrupt record (lib/store/corrupt.ts) cannot be marked, so it is removed at once.
 *
 * A delete and a pin (lib/actions/image-pin.ts) at the same time: each writes first, then checks
 * the other's record, so of two at once at least one sees the other. Only the pin ever takes its
 * write back. Marking the build `deleting` cannot be taken back safely: the server's planner
 * deletes every ready upload of a `deleting` build at its next pass, pinned or not
 * (server/image-lifecycle/plan-view.ts `isPinnedUpload`, retention.ts), so a delete put back
 * after that pass would leave a pinned build whose uploads are gone. So the delete's first write
 * is one the planner ignores: it notes on the record that a delete is pending
 * ({@link DELETE_PENDING_REASON}, after the reason it had), then reads the pins, and marks `deleting` only when none appeared (it
 * puts the reason back and refuses otherwise). A pin reads the record after writing itself and
 * withdraws on `deleting` or a pending delete. Either the pin was written before the delete read
 * the pins (the delete refuses), or after the note (the pin sees it and withdraws): never a pin
 * on a build being deleted, never a pinned build half deleted.
 */
import { CorruptRecordError, StateConflictError } from '../errors.js';
import type { BuildState, PinRecord, UploadState } from '../store/models.js';
import type { Store } from '../store/store.js';
import { refuse, type ActionResult, type Refused } from './action-result.js';

/** Reason recorded on what an operator deletes. */
export const OPERATOR_DELETE_REASON = 'deleted by operator';

/** Noted on a build's or upload's reason while a delete checks its pins (see the top of this file). */
export const DELETE_PENDING_REASON = 'deletion requested by operator; checking pins';
/** A pending delete not marked within this long is given up (its process died): it no longer refuses pins. */
const PENDING_FOR_MS = 60_000;

/**
 * The record's reason with a pending delete's note at `now` added (the reason stays: the
 * planner reads notes such as local-files.ts `FILES_DELETED` in it).
 */
function withPending(reason: string | null, now: number): string {
  const base = withoutPending(reason);
  const note = `${DELETE_PENDING_REASON} since ${now}`;
  return base === null ? note : `${base} (${note})`;
}

/** A pending delete's note at the end of `reason`. */
const PENDING_NOTE = /(?: \()?deletion requested by operator; checking pins since (\d+)\)?$/;

/** `reason` without a pending delete's note (of any age). */
function withoutPending(reason: string | null): string | null {
  if (reason === null) return null;
  const base = reason.replace(PENDING_NOTE, '');
  return base === '' ? null : base;
}

/** When `reason` carries a pending delete's note, its time; else undefined. */
function pendingSince(reason: string | null): number | undefined {
  const m = reason === null ? null : PENDING_NOTE.exec(reason);
  return m ? Number(m[1]) : undefined;
}

/** Whether a record's `reason` says a delete is checking its pins (noted less than a minute before `now`). */
export function deletePending(reason: string | null, now = Date.now()): boolean {
  const since = pendingSince(reason);
  return since !== undefined && now - since < PENDING_FOR_MS;
}

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
  const pinsNow = async (): Promise<PinRecord[]> => (await store.listPins()).filter((p) => p.buildId === id);
  let pins = await pinsNow();
  if (pins.length > 0) return pinnedRefusal(`Build ${id}`, pins);
  const deletable = { expectStates: ['ready', 'failed', 'lost'] as BuildState[] };
  try {
    // Note the pending delete, then read the pins again: a pin written after this sees the note.
    const note = withPending(build.reason, Date.now());
    if (!await store.updateBuild(id, { reason: note }, deletable)) return refuse('unknown-build', `Build ${id} not found`);
    pins = await pinsNow();
    if (pins.length > 0) {
      // Nothing was deleted yet: put the reason back (unless the record changed meanwhile) and refuse.
      const now = await store.getBuild(id);
      if (now?.reason === note) await store.updateBuild(id, { reason: withoutPending(build.reason) }, deletable);
      return pinnedRefusal(`Build ${id}`, pins);
    }
    const updated = await store.updateBuild(id, { state: 'deleting', reason: OPERATOR_DELETE_REASON }, deletable);
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
  const pinsNow = async (): Promise<PinRecord[]> => (await store.listPins()).filter((p) => p.buildId === upload.buildId
    && p.diskimage === upload.diskimage && (p.provider === null || p.provider === upload.provider));
  const pins = await pinsNow();
  if (upload.state === 'ready' && pins.length > 0) return pinnedRefusal(what, pins);
  const deletable = { expectStates: ['ready', 'failed'] as UploadState[] };
  try {
    if (upload.state === 'ready') {
      // As for a build: note the pending delete, read the pins again, refuse if one appeared.
      const note = withPending(upload.reason, Date.now());
      if (!await store.updateUpload(upload.id, { reason: note }, deletable)) return refuse('unknown-upload', UPLOAD_NOT_FOUND);
      const appeared = await pinsNow();
      if (appeared.length > 0) {
        const now = await store.getUpload(upload.id);
        if (now?.reason === note) await store.updateUpload(upload.id, { reason: withoutPending(upload.reason) }, deletable);
        return pinnedRefusal(what, appeared);
      }
    }
    const updated = await store.updateUpload(upload.id, { state: 'deleting', reason: OPERATOR_DELETE_REASON }, deletable);
    if (!updated) return refuse('unknown-upload', UPLOAD_NOT_FOUND);
  } catch (err) {
    if (!(err instanceof StateConflictError)) throw err;
    return err.actualState === 'deleting' ? alreadyDeleting : inProgress;
  }
  return { ok: true, uploadId: upload.id, outcome: 'marked', message: `${what} marked for deletion: the server deletes it from the cloud` };
}
