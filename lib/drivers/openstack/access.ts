/**
 * The openstack driver's host access: one authenticated Keystone session to a provider's cloud
 * (the entry `cloud` in this host's clouds.yaml, its `region-name`) and the Glance client over
 * it, shared by the provider (Nova, Neutron, cloud images by name) and its image service
 * (uploads, deletes, alien-image-list). Credentials come from the host's own clouds file
 * (the config's `clouds-file`, else the standard locations); nothing secret crosses Gearman.
 */
import { camel } from '../../config/schema-kit.js';
import { silentLogger, type Logger } from '../../log.js';
import type { DriverHost, HostAccess } from '../contract/host-access.js';
import { loadCloud, standardSearchPaths, type CloudCredentials } from './clouds-yaml.js';
import { openstackSettings, type OpenStackProviderConfig } from './config.js';
import { GlanceClient, type GlanceClientOptions } from './glance.js';
import { KeystoneSession, type KeystoneSessionOptions } from './keystone.js';

/** The top-level settings the driver reads from the host, as loaded (`clouds-file`, absolute): the ones its config declares. */
export const OPENSTACK_HOST_SETTINGS: readonly string[] = Object.keys(openstackSettings.fields).map(camel);

/** Tunables of {@link OpenStackAccess.create}. */
export interface OpenStackAccessOptions {
  keystone?: Omit<KeystoneSessionOptions, 'log'>;
  glance?: Omit<GlanceClientOptions, 'log'>;
}

/** One cloud's session and Glance client, closed once by whoever made it. */
export class OpenStackAccess implements HostAccess {
  private constructor(
    /** The authenticated session (token, catalog). */
    readonly session: KeystoneSession,
    readonly glance: GlanceClient,
  ) {}

  /**
   * Authenticates against the cloud and finds its image endpoint.
   * Thrown: `CloudError` for bad credentials (status 401), an unreachable Keystone, or a
   * catalog without an image service.
   */
  static async create(creds: CloudCredentials, log: Logger = silentLogger(), opts: OpenStackAccessOptions = {}): Promise<OpenStackAccess> {
    const session = await KeystoneSession.authenticate(creds, { ...opts.keystone, log });
    return new OpenStackAccess(session, new GlanceClient(session, { ...opts.glance, log }));
  }

  /** Closes the session's idle connections. */
  close(): void {
    this.session.close();
  }
}

/** The clouds file the host's settings name, if any. Pure. */
function cloudsFileOf(settings: Readonly<Record<string, unknown>>): string | undefined {
  const file = settings.cloudsFile;
  return typeof file === 'string' ? file : undefined;
}

/** The provider's access from this host's clouds.yaml. Thrown: CloudError (credentials, Keystone). */
export async function openstackHostAccess(provider: OpenStackProviderConfig, host: DriverHost): Promise<OpenStackAccess> {
  const file = cloudsFileOf(host.settings);
  const creds = await loadCloud(provider.cloud, file === undefined ? { searchPaths: standardSearchPaths(host) } : { path: file });
  if (provider.regionName !== undefined) creds.regionName = provider.regionName;
  return OpenStackAccess.create(creds, host.log);
}
