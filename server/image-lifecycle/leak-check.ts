/**
 * Finds cloud images our uploads left behind that no record accounts for (an upload that
 * finished after its job was given up, a gearmand restart mid-upload) and deletes them.
 * Only images carrying this provider's `nodepool_provider_name` and a `nodepool_upload_id`
 * are considered, so operators' own images and other providers' uploads are never touched.
 */
import type { Config } from '../../lib/config/schema.js';
import { takesImages } from '../../lib/drivers/config-registry.js';
import type { ImageService, ImageServiceFactory, ListedImage } from '../../lib/drivers/image-service.js';
import { coerceError } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import type { UploadRecord } from '../../lib/store/models.js';

/**
 * The cloud images of one provider that no upload record accounts for. An `uploading` record
 * accounts for every image carrying its id (one of them may be the upload in flight); a
 * `validating`, `ready` or `deleting` record with an external id accounts for that image only, so an earlier attempt
 * of the same upload (re-run after a server or gearmand restart) is a leak too. Failed records and
 * missing records account for nothing. Pure: the caller lists the images before reading records.
 */
export function unaccountedImages(provider: string, images: ListedImage[], uploads: UploadRecord[]): ListedImage[] {
  const byId = new Map(uploads.filter((u) => u.provider === provider).map((u) => [u.id, u]));
  return images.filter((image) => {
    const uploadId = image.properties.nodepool_upload_id;
    if (!uploadId) return false;
    const record = byId.get(uploadId);
    if (!record || record.state === 'failed') return true;
    if (record.state === 'uploading' || record.externalId === null) return false;
    return record.externalId !== image.externalId;
  });
}

/** One leaked image that was deleted. */
export interface LeakedImage {
  provider: string;
  externalId: string;
  name: string;
  uploadId: string;
}

/** Longest one provider's listing may take: a frozen cloud must not hold up the lifecycle pass. */
const LIST_TIMEOUT_MS = 60_000;

/**
 * Lists each image-managing provider's images, then reads the upload records (in that order, so an
 * upload that starts meanwhile is never mistaken for a leak), and deletes images whose upload
 * record does not account for them (`unaccountedImages`).
 */
export async function deleteLeakedImages(
  config: Pick<Config, 'providers'>, readUploads: () => Promise<UploadRecord[]>, imageServices: ImageServiceFactory, log: Logger,
): Promise<LeakedImage[]> {
  const listed: Array<{ provider: string; service: ImageService; images: ListedImage[] }> = [];
  for (const provider of config.providers) {
    if (!takesImages(provider)) continue;
    try {
      const service = await imageServices(provider);
      const images = await service.list({ properties: { nodepool_provider_name: provider.name } }, AbortSignal.timeout(LIST_TIMEOUT_MS));
      listed.push({ provider: provider.name, service, images });
    } catch (err) {
      log.warn('leak check could not list images of a provider', { provider: provider.name, error: coerceError(err).message });
    }
  }
  if (listed.length === 0) return [];
  const uploads = await readUploads();
  const deleted: LeakedImage[] = [];
  for (const { provider, service, images } of listed) {
    for (const image of unaccountedImages(provider, images, uploads)) {
      const uploadId = image.properties.nodepool_upload_id as string;
      log.warn('deleting a leaked image no upload record accounts for', { provider, externalId: image.externalId, name: image.name, uploadId });
      try {
        await service.delete(image.externalId);
        deleted.push({ provider, externalId: image.externalId, name: image.name, uploadId });
      } catch (err) {
        log.warn('deleting a leaked image failed; the next check retries', { provider, externalId: image.externalId, error: coerceError(err).message });
      }
    }
  }
  return deleted;
}
