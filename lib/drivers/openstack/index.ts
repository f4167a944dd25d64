/**
 * The `openstack` driver: servers in an OpenStack cloud (Nova), booted from nodepool's
 * uploads of diskimages or from images the cloud already has.
 */
import type { Driver } from '../driver.js';
import { checkOpenStackReferences, openstackPools, openstackProviderSchema, type OpenStackProviderConfig } from './config.js';
import { OpenStackProvider } from './provider.js';

export const openstackDriver: Driver<OpenStackProviderConfig> = {
  name: 'openstack',
  providerSchema: openstackProviderSchema,
  manageImages: (c) => c.diskimages.length > 0,
  pools: openstackPools,
  createProvider: (c, ctx) => new OpenStackProvider(c, ctx),
  checkReferences: checkOpenStackReferences,
};
