/**
 * The `openstack` driver: servers in an OpenStack cloud (Nova), booted from nodepool's
 * uploads of diskimages or from images the cloud already has; images through Glance.
 */
import type { Driver } from '../driver.js';
import { openstackConfig, type OpenStackProviderConfig } from './config.js';
import { openstackImageService } from './images.js';
import { OpenStackProvider } from './provider.js';

export const openstackDriver: Driver<OpenStackProviderConfig> = {
  ...openstackConfig,
  createProvider: (c, ctx) => new OpenStackProvider(c, ctx),
  imageService: openstackImageService,
};
