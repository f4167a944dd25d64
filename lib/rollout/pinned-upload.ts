/**
 * Which upload a launch pinned to an upload (a validation boot, issue 14 §2) may boot: the
 * checks every image-managing driver makes before it looks at its own image store. Pure.
 */
import type { UploadRecord } from '../store/models.js';

/**
 * Why `upload` (looked up by `uploadId`) cannot be booted by provider `provider` as diskimage
 * `diskimage`, or undefined when it can as far as the record tells: it must exist, be this
 * provider's upload of that diskimage, not be failed or being deleted, and have its image.
 */
export function pinnedUploadProblem(upload: UploadRecord | undefined, provider: string, diskimage: string): string | undefined {
  if (!upload) return 'does not exist';
  if (upload.provider !== provider) return `belongs to provider ${upload.provider}`;
  if (upload.diskimage !== diskimage) return `is of diskimage ${upload.diskimage}, not ${diskimage}`;
  if (upload.state === 'failed' || upload.state === 'deleting') return `is ${upload.state}`;
  if (!upload.externalId) return 'has no image in the provider yet';
  return undefined;
}
