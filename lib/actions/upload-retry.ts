/**
 * Operator action: retry a failed upload now (`POST /api/upload/<id>/retry`, issue 25 §1). It
 * records a retry request for the upload's diskimage and provider; the server's image lifecycle
 * then starts the next upload there without waiting out the retry backoff
 * (server/image-lifecycle/uploads.ts), and clears the request once that upload starts. Refused
 * for an unknown upload, and for one that is not failed.
 */
import { imageTarget } from '../drivers/config-registry.js';
import { CorruptRecordError } from '../errors.js';
import type { UploadRecord, UploadRetryRequest } from '../store/models.js';
import { refuse, type ActionResult } from './action-result.js';
import type { RolloutActionContext } from './rollout-context.js';

/** What {@link retryUpload} needs: the store, and the config for the pauses it warns of. */
export type UploadRetryContext = Pick<RolloutActionContext, 'store' | 'config'>;

/** The answer of {@link retryUpload}. */
export type UploadRetryResult = ActionResult<{
  upload: UploadRecord;
  request: UploadRetryRequest;
  /** What stands in the way of the retry besides the backoff (a pause, a target gone from the config). */
  warnings: string[];
}, 'unknown-upload' | 'wrong-state' | 'in-progress'>;

/** Upload ids are 10 digits; a shorter number names the same upload. */
export function normalUploadId(id: string): string {
  return /^\d+$/.test(id) ? id.padStart(10, '0') : id;
}

/** Requests a retry, now, of the failed upload `uploadId`'s diskimage to its provider. */
export async function retryUpload({ store, config }: UploadRetryContext, args: { uploadId: string }): Promise<UploadRetryResult> {
  const id = normalUploadId(args.uploadId);
  let upload: UploadRecord | undefined;
  try {
    upload = await store.getUpload(id);
  } catch (err) {
    if (!(err instanceof CorruptRecordError)) throw err;
    return refuse('wrong-state', `Upload ${id}'s record is corrupt (${err.reason}); it cannot be retried`);
  }
  if (!upload) return refuse('unknown-upload', `Image upload ${id} not found`);
  const what = `Upload ${upload.id} of ${upload.buildId} to ${upload.provider}`;
  if (upload.state !== 'failed') return refuse('wrong-state', `${what} is ${upload.state}, not failed; only a failed upload is retried`);
  const running = (await store.listUploads({ diskimage: upload.diskimage, provider: upload.provider, states: ['uploading', 'validating'] }))[0];
  if (running) return refuse('in-progress', `Upload ${running.id} of ${upload.diskimage} to ${upload.provider} is ${running.state}; nothing to retry now`);
  const request = await store.requestUploadRetry(upload.diskimage, upload.provider);
  return {
    ok: true, upload, request, warnings: await retryWarnings({ store, config }, upload),
    message: `Retry of ${upload.diskimage} to ${upload.provider} requested: the server starts the next upload without waiting out the backoff`,
  };
}

/** A pause or a config without the target, which keep the server from retrying. */
async function retryWarnings({ store, config }: UploadRetryContext, upload: UploadRecord): Promise<string[]> {
  const provider = config.providers.find((p) => p.name === upload.provider);
  const target = provider && imageTarget(provider, upload.diskimage);
  if (!target) return [`${config.file} does not list ${upload.diskimage} on ${upload.provider}; the server uploads nothing there`];
  const warnings: string[] = [];
  if (target.pause) warnings.push(`${config.file} pauses uploads of ${upload.diskimage} to ${upload.provider} (pause: true)`);
  const pause = (await store.listPauses()).find((p) => p.diskimage === upload.diskimage && p.provider === upload.provider);
  if (pause) warnings.push(`uploads of ${upload.diskimage} to ${upload.provider} are paused by an operator; the retry starts once unpaused`);
  return warnings;
}
