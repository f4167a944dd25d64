/**
 * Which cloud images look like our uploads but no upload record accounts for (`nodepool
 * alien-image-list`, monitoring). Pure: the caller lists the images and reads the uploads.
 */
import type { ListedImage } from '../drivers/contract/image-service.js';
import type { UploadRecord } from '../store/models.js';

/** Upload states whose cloud image is accounted for (a validating upload's image is in use by its validation). */
export const ACCOUNTED_UPLOAD_STATES: readonly UploadRecord['state'][] = ['uploading', 'validating', 'ready', 'deleting'];

/** An image in a provider's cloud that no upload record accounts for. */
export interface AlienImage {
  provider: string;
  name: string;
  externalId: string;
}

/**
 * Images of `provider` that carry `nodepool_build_id` or `nodepool_upload_id` but match no
 * upload of that provider in an accounted state (by cloud image id or by upload id). Images
 * tagged with another provider's `nodepool_provider_name` (a cloud shared by providers) are
 * that provider's business and left out. Sorted by name, then id.
 */
export function alienImages(provider: string, images: readonly ListedImage[], uploads: readonly UploadRecord[]): AlienImage[] {
  const ours = uploads.filter((u) => u.provider === provider && ACCOUNTED_UPLOAD_STATES.includes(u.state));
  const externalIds = new Set(ours.flatMap((u) => (u.externalId === null ? [] : [u.externalId])));
  const uploadIds = new Set(ours.map((u) => u.id));
  return images
    .filter((i) => i.properties.nodepool_build_id !== undefined || i.properties.nodepool_upload_id !== undefined)
    .filter((i) => (i.properties.nodepool_provider_name ?? provider) === provider)
    .filter((i) => !externalIds.has(i.externalId) && !(i.properties.nodepool_upload_id !== undefined && uploadIds.has(i.properties.nodepool_upload_id)))
    .map((i) => ({ provider, name: i.name, externalId: i.externalId }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.externalId < b.externalId ? -1 : a.externalId > b.externalId ? 1 : 0));
}
