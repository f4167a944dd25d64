/**
 * The openstack driver's image capability at run time: a provider's Glance image service,
 * authenticated with the cloud's entry in the process's own clouds.yaml (builder or server;
 * nothing secret crosses Gearman). Cached per provider by the caller (`hostImageServices`).
 */
import type { ImageHost, ImageService } from '../image-service.js';
import { loadCloud, standardSearchPaths } from './clouds-yaml.js';
import type { OpenStackProviderConfig } from './config.js';
import { OpenStackImageService } from './glance-image-service.js';

/** The provider's image service. Thrown: CloudError (credentials, Keystone). */
export async function openstackImageService(provider: OpenStackProviderConfig, host: ImageHost): Promise<ImageService> {
  const file = host.cloudsFile();
  const creds = await loadCloud(provider.cloud, file === undefined ? { searchPaths: standardSearchPaths(host) } : { path: file });
  if (provider.regionName !== undefined) creds.regionName = provider.regionName;
  return OpenStackImageService.create(creds, host.log.child({ provider: provider.name }));
}
