/**
 * The `openstack` driver: servers in an OpenStack cloud (Nova), booted from nodepool's
 * uploads of diskimages or from images the cloud already has; images through Glance; both
 * over one host access per provider (access.ts: the Keystone session from this host's clouds.yaml).
 */
import type { Driver } from '../contract/driver.js';
import { OPENSTACK_HOST_SETTINGS, openstackHostAccess, type OpenStackAccess } from './access.js';
import { OpenStackBuildInstances } from './build-instances.js';
import { openstackConfig, type OpenStackProviderConfig } from './config.js';
import { OpenStackImageService } from './glance-image-service.js';
import { OpenStackProvider } from './provider.js';

export const openstackDriver: Driver<OpenStackProviderConfig, OpenStackAccess> = {
  ...openstackConfig,
  hostSettings: OPENSTACK_HOST_SETTINGS,
  hostAccess: openstackHostAccess,
  createProvider: (c, ctx) => new OpenStackProvider(c, ctx),
  imageService: (c, access) => {
    if (!access) throw new Error(`provider ${c.name}: no host access`);
    return new OpenStackImageService(access);
  },
  buildInstances: (c, access, log) => {
    if (!access) throw new Error(`provider ${c.name}: no host access`);
    return new OpenStackBuildInstances(c, access, log);
  },
};
