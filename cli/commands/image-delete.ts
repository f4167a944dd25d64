/**
 * `nodepool image-delete <build-id>` and `nodepool image-delete --provider P --image I
 * --build-id B --upload-id U`, with Nodepool 3.x semantics: a build is marked `deleting`
 * (the server deletes its uploads first, then its files); an upload is marked `deleting`
 * (the server deletes it from the cloud). Neither while it is still being built or uploaded.
 */
import { CorruptRecordError, StateConflictError } from '../../lib/errors.js';
import type { Store } from '../../lib/store/store.js';
import {
  commandConfig, CommandFailure, EXIT, runCommand, withStore, type CommandContext, type CommandResult,
} from './shared.js';

/** Reason recorded on what an operator deletes. */
export const OPERATOR_DELETE_REASON = 'deleted by operator';

/** Options of {@link imageDelete}: a build id, or all four upload options. */
export interface ImageDeleteOptions extends CommandContext {
  /** The positional build id (`<diskimage>-<10 digits>`). */
  build?: string;
  provider?: string;
  image?: string;
  buildId?: string;
  uploadId?: string;
}

/** What an image-delete invocation names. */
export type DeleteTarget =
  | { kind: 'build'; buildId: string }
  | { kind: 'upload'; provider: string; image: string; buildId: string; uploadId: string };

const UPLOAD_OPTIONS = ['provider', 'image', 'buildId', 'uploadId'] as const;
const flag = (k: (typeof UPLOAD_OPTIONS)[number]): string => `--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;

/** Decides what the options name (pure). Thrown: CommandFailure (exit 2) for a bad combination. */
export function deleteTarget(o: ImageDeleteOptions): DeleteTarget {
  const given = UPLOAD_OPTIONS.filter((k) => o[k] !== undefined && o[k] !== '');
  if (o.build !== undefined && o.build !== '') {
    if (given.length) {
      throw new CommandFailure(EXIT.usage, `Give either a build id or ${UPLOAD_OPTIONS.map(flag).join(', ')}, not both`);
    }
    return { kind: 'build', buildId: o.build };
  }
  if (given.length === 0) {
    throw new CommandFailure(EXIT.usage, `Name a build id, or an upload with ${UPLOAD_OPTIONS.map(flag).join(', ')}`);
  }
  const missing = UPLOAD_OPTIONS.filter((k) => !given.includes(k));
  if (missing.length) {
    throw new CommandFailure(EXIT.usage, `Deleting an upload needs all of ${UPLOAD_OPTIONS.map(flag).join(', ')} (missing ${missing.map(flag).join(', ')})`);
  }
  return { kind: 'upload', provider: o.provider as string, image: o.image as string, buildId: o.buildId as string, uploadId: o.uploadId as string };
}

/** Marks a build or one upload for deletion; exit 0, 1 (in progress), 2 (usage) or 3 (not found). */
export function imageDelete(opts: ImageDeleteOptions): Promise<CommandResult> {
  return runCommand(async (out) => {
    const target = deleteTarget(opts);
    const config = commandConfig(opts);
    const message = await withStore(config, (store) =>
      target.kind === 'build' ? markBuildDeleting(store, target.buildId) : markUploadDeleting(store, target));
    out.out(`${message}\n`);
    return EXIT.ok;
  });
}

/** Marks a ready, failed or lost build `deleting`; returns what to print. Thrown: CommandFailure. */
export async function markBuildDeleting(store: Store, id: string): Promise<string> {
  let build;
  try {
    build = await store.getBuild(id);
  } catch (err) {
    if (!(err instanceof CorruptRecordError)) throw err;
    return removeCorruptBuild(store, id, err.reason);
  }
  if (!build) throw new CommandFailure(EXIT.notFound, `Build ${id} not found`);
  const alreadyDeleting = `Build ${id} is already being deleted`;
  if (build.state === 'deleting') return alreadyDeleting;
  if (build.state === 'building') throw new CommandFailure(EXIT.failed, 'Cannot delete a build in progress');
  try {
    const updated = await store.updateBuild(id, { state: 'deleting', reason: OPERATOR_DELETE_REASON }, { expectStates: ['ready', 'failed', 'lost'] });
    if (!updated) throw new CommandFailure(EXIT.notFound, `Build ${id} not found`);
  } catch (err) {
    // Someone changed it between our read and the update: report what it is now.
    if (!(err instanceof StateConflictError)) throw err;
    if (err.actualState === 'deleting') return alreadyDeleting;
    throw new CommandFailure(EXIT.failed, 'Cannot delete a build in progress');
  }
  return `Build ${id} marked for deletion: its uploads are deleted first, then its files`;
}

/**
 * Removes a corrupt build record (lib/store/corrupt.ts): it cannot be marked `deleting` (its
 * record does not say what it is), so it goes at once, once no upload record of it remains.
 * Files a builder holds for it are then strays the server deletes. Thrown: CommandFailure.
 */
async function removeCorruptBuild(store: Store, id: string, reason: string): Promise<string> {
  // The store refuses (StoreError, exit 1) while upload records of it remain, naming them.
  if (!await store.deleteBuild(id)) throw new CommandFailure(EXIT.notFound, `Build ${id} not found`);
  return `Corrupt build record ${id} removed (${reason}); image files a builder holds for it are deleted as strays`;
}

/** The ids an operator may type for a build: the full id, or the 10-digit sequence (`--image` supplies the diskimage). */
function sameBuild(recordBuildId: string, image: string, given: string): boolean {
  if (recordBuildId === given) return true;
  return /^\d+$/.test(given) && recordBuildId === `${image}-${given.padStart(10, '0')}`;
}

/**
 * Removes a corrupt upload record named with its provider and image: it cannot be marked
 * `deleting`, so it goes at once; a cloud image it stood for is left to the leak check.
 */
async function removeCorruptUpload(store: Store, t: Extract<DeleteTarget, { kind: 'upload' }>, uploadId: string, reason: string): Promise<string> {
  const c = (await store.listCorrupt({ kinds: ['upload'] })).find((x) => x.id === uploadId);
  if (!c || c.provider !== t.provider) throw new CommandFailure(EXIT.notFound, 'Image upload not found');
  if (!await store.deleteUpload(uploadId)) throw new CommandFailure(EXIT.notFound, 'Image upload not found');
  return `Corrupt upload record ${uploadId} on ${t.provider} removed (${reason}); a cloud image it stood for is left to the leak check`;
}

/** Marks a ready or failed upload `deleting`; returns what to print. Thrown: CommandFailure. */
export async function markUploadDeleting(store: Store, t: Extract<DeleteTarget, { kind: 'upload' }>): Promise<string> {
  const uploadId = /^\d+$/.test(t.uploadId) ? t.uploadId.padStart(10, '0') : t.uploadId;
  let upload;
  try {
    upload = await store.getUpload(uploadId);
  } catch (err) {
    if (!(err instanceof CorruptRecordError)) throw err;
    return removeCorruptUpload(store, t, uploadId, err.reason);
  }
  const matches = upload !== undefined && upload.provider === t.provider
    && (upload.diskimage === t.image || upload.imageName === t.image) && sameBuild(upload.buildId, upload.diskimage, t.buildId);
  if (!upload || !matches) throw new CommandFailure(EXIT.notFound, 'Image upload not found');
  const what = `Upload ${upload.id} of ${upload.buildId} to ${upload.provider}`;
  const alreadyDeleting = `${what} is already being deleted`;
  if (upload.state === 'deleting') return alreadyDeleting;
  if (upload.state === 'uploading') throw new CommandFailure(EXIT.failed, 'Cannot delete because image upload in progress');
  try {
    const updated = await store.updateUpload(upload.id, { state: 'deleting', reason: OPERATOR_DELETE_REASON }, { expectStates: ['ready', 'failed'] });
    if (!updated) throw new CommandFailure(EXIT.notFound, 'Image upload not found');
  } catch (err) {
    if (!(err instanceof StateConflictError)) throw err;
    if (err.actualState === 'deleting') return alreadyDeleting;
    throw new CommandFailure(EXIT.failed, 'Cannot delete because image upload in progress');
  }
  return `${what} marked for deletion: the server deletes it from the cloud`;
}
