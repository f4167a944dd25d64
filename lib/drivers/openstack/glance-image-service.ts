/**
 * The {@link ImageService} of an OpenStack cloud: Keystone v3 for the token and catalog,
 * Glance v2 for the images.
 */
import { silentLogger, type Logger } from '../../log.js';
import type { ImageService, ListedImage, UploadedImage, UploadRequest } from '../image-service.js';
import type { CloudCredentials } from './clouds-yaml.js';
import { GlanceClient, type GlanceClientOptions } from './glance.js';
import { KeystoneSession, type KeystoneSessionOptions } from './keystone.js';

/** Tunables of {@link OpenStackImageService.create}. */
export interface OpenStackImageServiceOptions {
  keystone?: Omit<KeystoneSessionOptions, 'log'>;
  glance?: Omit<GlanceClientOptions, 'log'>;
}

/** Images in one OpenStack cloud (one clouds.yaml entry). */
export class OpenStackImageService implements ImageService {
  private constructor(
    /** The authenticated session (token, catalog). */
    readonly session: KeystoneSession,
    /** The Glance client underneath, for callers needing more than the interface. */
    readonly glance: GlanceClient,
  ) {}

  /**
   * Authenticates against the cloud and finds its image endpoint.
   * Thrown: `CloudError` for bad credentials (status 401), an unreachable Keystone, or a
   * catalog without an image service.
   */
  static async create(creds: CloudCredentials, log: Logger = silentLogger(), opts: OpenStackImageServiceOptions = {}): Promise<OpenStackImageService> {
    const session = await KeystoneSession.authenticate(creds, { ...opts.keystone, log });
    return new OpenStackImageService(session, new GlanceClient(session, { ...opts.glance, log }));
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

  /** Closes the session's idle connections. */
  close(): void {
    this.session.close();
  }
}
