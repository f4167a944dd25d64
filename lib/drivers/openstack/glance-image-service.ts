/**
 * The {@link ImageService} of an OpenStack cloud: Glance v2 over the driver's host access
 * (access.ts: the Keystone session and Glance client the provider shares).
 */
import { silentLogger, type Logger } from '../../log.js';
import type { ImageService, ListedImage, UploadedImage, UploadRequest } from '../contract/image-service.js';
import { OpenStackAccess, type OpenStackAccessOptions } from './access.js';
import type { CloudCredentials } from './clouds-yaml.js';
import type { GlanceClient } from './glance.js';
import type { KeystoneSession } from './keystone.js';

/** Tunables of {@link OpenStackImageService.create}. */
export type OpenStackImageServiceOptions = OpenStackAccessOptions;

/** Images in one OpenStack cloud (one clouds.yaml entry). */
export class OpenStackImageService implements ImageService {
  /** The authenticated session (token, catalog). */
  readonly session: KeystoneSession;
  /** The Glance client underneath, for callers needing more than the interface. */
  readonly glance: GlanceClient;

  /** The image service over an access; closing the access is its maker's (driver-hosts.ts). */
  constructor(readonly access: OpenStackAccess) {
    this.session = access.session;
    this.glance = access.glance;
  }

  /**
   * An image service with an access of its own (tools and tests; {@link close} closes it).
   * Thrown: `CloudError` for bad credentials (status 401), an unreachable Keystone, or a
   * catalog without an image service.
   */
  static async create(creds: CloudCredentials, log: Logger = silentLogger(), opts: OpenStackImageServiceOptions = {}): Promise<OpenStackImageService> {
    return new OpenStackImageService(await OpenStackAccess.create(creds, log, opts));
  }

  async upload(req: UploadRequest): Promise<UploadedImage> {
    const uploaded = await this.glance.uploadImage({
      name: req.name,
      diskFormat: req.format,
      filePath: req.filePath,
      properties: req.properties,
      ...(req.onProgress ? { onProgress: req.onProgress } : {}),
      ...(req.signal ? { signal: req.signal } : {}),
      ...(req.onData ? { onData: req.onData.bind(req) } : {}),
    });
    const out: UploadedImage = { externalId: uploaded.id, externalName: uploaded.name };
    if (uploaded.hash) out.cloudHash = { ...uploaded.hash, by: 'Glance' };
    return out;
  }

  cloudHashAlgos(): readonly string[] {
    return this.glance.expectedHashAlgos();
  }

  async delete(externalId: string): Promise<void> {
    await this.glance.deleteImage(externalId);
  }

  async list(filter: { properties?: Record<string, string> } = {}, signal?: AbortSignal): Promise<ListedImage[]> {
    const images = await this.glance.listImages(filter, signal);
    return images.map((img) => ({ externalId: img.id, name: img.name, status: img.status, properties: img.properties }));
  }

  /** Closes the access's idle connections (for a service from {@link create}). */
  close(): void {
    this.access.close();
  }
}
