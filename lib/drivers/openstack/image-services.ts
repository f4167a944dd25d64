/**
 * An ImageServiceFactory for openstack providers: a provider's image service from the
 * process's own clouds.yaml (builder or server), authenticated once and cached per cloud (a
 * failed attempt is not cached).
 */
import type { ImageService } from '../image-service.js';
import type { Logger } from '../../log.js';
import { loadCloud } from './clouds-yaml.js';
import type { OpenStackProviderConfig } from './config.js';
import { OpenStackImageService } from './image-service.js';

/** Gives the image service of a provider (credentials come from the process's own clouds.yaml). */
export type ImageServiceFactory = (provider: OpenStackProviderConfig) => Promise<ImageService>;

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
