/**
 * The builder's ImageServiceFactory: a provider's image service from the builder's own
 * clouds.yaml, authenticated once and cached per cloud (a failed attempt is not cached).
 */
import type { ImageService } from '../../lib/drivers/image-service.js';
import { loadCloud } from '../../lib/drivers/openstack/clouds-yaml.js';
import type { OpenStackProviderConfig } from '../../lib/drivers/openstack/config.js';
import { OpenStackImageService } from '../../lib/drivers/openstack/image-service.js';
import type { Logger } from '../../lib/log.js';
import type { ImageServiceFactory } from './upload-service.js';

/** Options of {@link openstackImageServices}. */
export interface OpenStackImageServicesOptions {
  /** `clouds-file` from the config; else the first of `searchPaths` that exists. */
  cloudsFile: () => string | undefined;
  searchPaths: string[];
  log: Logger;
}

export function openstackImageServices(opts: OpenStackImageServicesOptions): ImageServiceFactory {
  const cache = new Map<string, Promise<ImageService>>();
  return (provider: OpenStackProviderConfig) => {
    const file = opts.cloudsFile();
    const key = JSON.stringify([provider.cloud, provider.regionName ?? '', file ?? '']);
    let service = cache.get(key);
    if (!service) {
      service = (async () => {
        const creds = await loadCloud(provider.cloud, file === undefined ? { searchPaths: opts.searchPaths } : { path: file });
        if (provider.regionName !== undefined) creds.regionName = provider.regionName;
        return OpenStackImageService.create(creds, opts.log.child({ provider: provider.name }));
      })();
      cache.set(key, service);
      service.catch(() => cache.delete(key));
    }
    return service;
  };
}
