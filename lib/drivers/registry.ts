/**
 * The explicit runtime registry: driver name → Driver (its config part joined with providers
 * and image services). lib/config never imports this (it sees config-registry.ts), so
 * validating a file loads no cloud client. No directory scanning, no magic names.
 */
import { fingerprint } from './common-config.js';
import type { ProviderConfig } from './config-registry.js';
import type { Driver } from './driver.js';
import type { ImageHost, ImageService, ImageServiceFactory } from './image-service.js';
import { openstackDriver } from './openstack/index.js';
import type { OpenStackProviderConfig } from './openstack/config.js';
import { qemuDriver } from './qemu/index.js';
import type { QemuProviderConfig } from './qemu/config.js';
import { staticDriver } from './static/index.js';
import type { StaticProviderConfig } from './static/config.js';

export const drivers: {
  readonly openstack: Driver<OpenStackProviderConfig>;
  readonly static: Driver<StaticProviderConfig>;
  readonly qemu: Driver<QemuProviderConfig>;
} = {
  openstack: openstackDriver,
  static: staticDriver,
  qemu: qemuDriver,
};

/** The driver of a loaded provider. */
export function driverOf(p: ProviderConfig): Driver<ProviderConfig> {
  return drivers[p.driver] as Driver<ProviderConfig>;
}

/**
 * A process's image services: each provider's created on first use through its driver and
 * reused while the provider's config and the clouds file stay the same; a failed creation is
 * not kept. Thrown (rejected): Error for a provider whose driver manages no images.
 */
export function hostImageServices(host: ImageHost): ImageServiceFactory {
  const cache = new Map<string, Promise<ImageService>>();
  return (p) => {
    const driver = driverOf(p);
    if (!driver.imageService) return Promise.reject(new Error(`provider ${p.name} (driver ${p.driver}) manages no images`));
    const key = `${fingerprint(p)}\0${host.cloudsFile() ?? ''}`;
    let service = cache.get(key);
    if (!service) {
      service = driver.imageService(p, host);
      cache.set(key, service);
      service.catch(() => cache.delete(key));
    }
    return service;
  };
}
