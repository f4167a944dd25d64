/**
 * Which upload of a diskimage a provider boots now: the one core policy every image-managing
 * driver asks (openstack and qemu used to pick "the newest" each their own way, and compared
 * ids, which says nothing about age once Nodepool 11's uuid builds are adopted). Today: the
 * newest ready upload the driver can use. Pure; the store read is the caller's.
 */
import { byCreated, UPLOAD_SEQ_RE } from '../images/image-file.js';
import type { UploadRecord } from '../store/models.js';

/**
 * Uploads oldest first, as retention ranks them: by sequence when every id has one (a sequence
 * is the order of creation on every host, whatever their clocks), else by creation time.
 */
export function uploadsByAge<T extends Pick<UploadRecord, 'id' | 'created'>>(uploads: readonly T[]): T[] {
  const sequenced = uploads.every((u) => UPLOAD_SEQ_RE.test(u.id));
  return [...uploads].sort(sequenced ? (a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0) : byCreated);
}

/** What a launch of `diskimage` on `provider` may boot, and what the driver can use. */
export interface BootChoice {
  provider: string;
  diskimage: string;
  /** The driver's own check (its file exists, say); every upload passes when absent. */
  usable?: (upload: UploadRecord) => boolean;
}

/**
 * The upload `choice.provider` boots for `choice.diskimage` out of `uploads` (any list the
 * store gave; others are ignored): the newest ready one that has its image in the provider and
 * passes the driver's check; undefined when none does.
 */
export function bootUpload(uploads: readonly UploadRecord[], choice: BootChoice): UploadRecord | undefined {
  const candidates = uploads.filter((u) => u.provider === choice.provider && u.diskimage === choice.diskimage
    && u.state === 'ready' && u.externalId !== null && u.externalId !== '');
  const newestFirst = uploadsByAge(candidates).reverse();
  return newestFirst.find((u) => choice.usable?.(u) ?? true);
}
