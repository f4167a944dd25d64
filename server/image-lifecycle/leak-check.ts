/**
 * Finds cloud images our uploads left behind that no record accounts for (an upload that
 * finished after its job was given up, a gearmand restart mid-upload) and deletes them.
 * Only images carrying this provider's `nodepool_provider_name` and a `nodepool_upload_id`
 * are considered, so operators' own images and other providers' uploads are never touched;
 * of those only this installation's (see {@link isOurs}), only once they have stayed
 * unaccounted for `image-lifecycle.stray-grace`, and not while {@link unknownGuard} refuses.
 */
import type { Config } from '../../lib/config/schema.js';
import { takesImages } from '../../lib/drivers/config-registry.js';
import type { ImageService, ListedImage } from '../../lib/drivers/contract/image-service.js';
import type { ImageServiceFactory } from '../../lib/drivers/core/driver-hosts.js';
import { coerceError } from '../../lib/errors.js';
import type { Logger } from '../../lib/log.js';
import { INSTALLATION_PROPERTY } from '../../lib/store/installation.js';
import type { BuildRecord, UploadRecord } from '../../lib/store/models.js';
import { graceOver, trackUnknown, UNKNOWN_ADVICE, unknownGuard } from './unknown-ids.js';

/**
 * The cloud images of one provider that no upload record accounts for. An `uploading` record
 * accounts for every image carrying its id (one of them may be the upload in flight); a
 * `validating`, `ready` or `deleting` record with an external id accounts for that image only, so an earlier attempt
 * of the same upload (re-run after a server or gearmand restart) is a leak too. Failed records and
 * missing records account for nothing. An upload record that does not validate (`corrupt`, its
 * id) accounts for every image carrying its id, as an `uploading` one does, whatever it says: a
 * record we refuse must never get its image deleted. Pure: the caller lists the images before
 * reading records.
 */
export function unaccountedImages(provider: string, images: ListedImage[], uploads: UploadRecord[], corrupt: ReadonlySet<string> = new Set()): ListedImage[] {
  const byId = new Map(uploads.filter((u) => u.provider === provider).map((u) => [u.id, u]));
  return images.filter((image) => {
    const uploadId = image.properties.nodepool_upload_id;
    if (!uploadId || corrupt.has(uploadId)) return false;
    const record = byId.get(uploadId);
    if (!record || record.state === 'failed') return true;
    if (record.state === 'uploading' || record.externalId === null) return false;
    return record.externalId !== image.externalId;
  });
}

/**
 * Whether a cloud image is this installation's: it carries our `nodepool_installation_id`; or,
 * uploaded before images carried one, its `nodepool_build_id` names a build this store has.
 * Another installation's images (another id, or an unknown build without an id) are never ours.
 */
export function isOurs(image: ListedImage, installation: string | undefined, knownBuilds: ReadonlySet<string>): boolean {
  const tagged = image.properties[INSTALLATION_PROPERTY];
  if (tagged !== undefined) return tagged === installation;
  const buildId = image.properties.nodepool_build_id;
  return buildId !== undefined && knownBuilds.has(buildId);
}

/** One leaked image that was deleted. */
export interface LeakedImage {
  provider: string;
  externalId: string;
  name: string;
  uploadId: string;
}

/** What {@link deleteLeakedImages} needs besides the config. */
export interface LeakCheckInput {
  /** Reads the upload records (called after the listings). */
  readUploads: () => Promise<UploadRecord[]>;
  /** Reads the ids of the upload records that do not validate (Store.listCorrupt; called after the listings). */
  readCorruptUploads: () => Promise<string[]>;
  /** The store's builds, for images without an installation id. */
  builds: readonly Pick<BuildRecord, 'id'>[];
  /** The store's installation id. */
  installation: string | undefined;
  /** `<provider>/<external id>` → since when it has been unaccounted; kept by the caller across checks. */
  since: Map<string, number>;
  now: number;
}

/** What one leak check did, and what it refused. */
export interface LeakCheckResult {
  deleted: LeakedImage[];
  held: string[];
}

/** Longest one provider's listing may take: a frozen cloud must not hold up the lifecycle pass. */
const LIST_TIMEOUT_MS = 60_000;

/**
 * Lists each image-managing provider's images, then reads the upload records (in that order, so an
 * upload that starts meanwhile is never mistaken for a leak), and deletes this installation's
 * images whose upload record does not account for them (`unaccountedImages`) once they have been
 * so for the grace period, unless most of the provider's images look leaked (a wrong store).
 */
export async function deleteLeakedImages(
  config: Pick<Config, 'providers' | 'imageLifecycle'>, input: LeakCheckInput, imageServices: ImageServiceFactory, log: Logger,
): Promise<LeakCheckResult> {
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
  const result: LeakCheckResult = { deleted: [], held: [] };
  if (listed.length === 0) return result;
  const [uploads, corrupt] = await Promise.all([input.readUploads(), input.readCorruptUploads().then((ids) => new Set(ids))]);
  const knownBuilds = new Set(input.builds.map((b) => b.id));
  const { strayGrace, deleteUnknown } = config.imageLifecycle;
  const recorded = new Set(uploads.map((u) => u.id));
  const candidates = listed.map(({ provider, service, images }) => {
    const ours = images.filter((i) => i.properties.nodepool_upload_id !== undefined && isOurs(i, input.installation, knownBuilds));
    const leaked = unaccountedImages(provider, ours, uploads, corrupt);
    // An image whose upload record exists (failed, or naming another image) is ours for sure; one without waits.
    const unknown = leaked.filter((i) => !recorded.has(i.properties.nodepool_upload_id as string));
    return { provider, service, ours, leaked, unknown: new Set(unknown) };
  });
  trackUnknown(input.since, candidates.flatMap(({ provider, unknown }) => [...unknown].map((i) => `${provider}/${i.externalId}`)), input.now);
  for (const { provider, service, ours, leaked, unknown } of candidates) {
    const refusal = deleteUnknown ? null : unknownGuard({
      what: `cloud images of this installation in provider ${provider}`, unknown: unknown.size, total: ours.length,
      records: uploads.filter((u) => u.provider === provider).length,
    });
    if (refusal) result.held.push(`${refusal}; ${UNKNOWN_ADVICE}`);
    for (const image of leaked) {
      if (unknown.has(image) && (refusal || !graceOver(input.since.get(`${provider}/${image.externalId}`), input.now, strayGrace))) continue;
      const uploadId = image.properties.nodepool_upload_id as string;
      log.warn('deleting a leaked image no upload record accounts for', { provider, externalId: image.externalId, name: image.name, uploadId });
      try {
        await service.delete(image.externalId);
        input.since.delete(`${provider}/${image.externalId}`);
        result.deleted.push({ provider, externalId: image.externalId, name: image.name, uploadId });
      } catch (err) {
        log.warn('deleting a leaked image failed; the next check retries', { provider, externalId: image.externalId, error: coerceError(err).message });
      }
    }
  }
  return result;
}
