/**
 * The boot choice, whole (issue 32 §1): the one core call an image-managing driver makes to
 * learn which upload a launch boots. It reads the ready uploads and the rollout view once,
 * chooses with boot-upload.ts and says what the launch's outcome is counted on. A driver only
 * maps the chosen upload to what it boots and says which uploads it can use.
 */
import type { UploadRecord } from '../store/models.js';
import { bootUpload } from './boot-upload.js';
import { rolloutView, type CountedUpload, type RolloutSource } from './count-launch.js';

/** A launch's boot choice as a driver asks it. */
export interface BootRequest {
  provider: string;
  diskimage: string;
  /** The launch's key (its node id) for a canary's share; absent (an availability check): the newest that may serve. */
  key?: string;
  /** The driver's own check (its file exists, say); every upload passes when absent. */
  usable?: (upload: UploadRecord) => boolean;
}

/** The upload a launch boots, with its image's id in the provider, and what its outcome counts on. */
export interface ChosenUpload {
  upload: UploadRecord;
  externalId: string;
  countOn: CountedUpload;
}

/** The upload `req.provider` boots for `req.diskimage` now, read from `src`'s store and config; undefined when none can. */
export async function chooseBootUpload(src: RolloutSource, req: BootRequest): Promise<ChosenUpload | undefined> {
  const [uploads, rollout] = await Promise.all([
    src.store.listUploads({ provider: req.provider, diskimage: req.diskimage, states: ['ready'] }),
    rolloutView(src, req.provider, req.diskimage),
  ]);
  const upload = bootUpload(uploads, { ...req, rollout });
  if (!upload?.externalId) return undefined;
  return { upload, externalId: upload.externalId, countOn: { uploadId: upload.id, settings: rollout.settings } };
}
