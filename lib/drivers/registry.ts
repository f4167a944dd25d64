/**
 * The explicit driver registry: driver name → its provider config schema. No directory
 * scanning, no magic names; an unknown driver is a config problem naming the provider.
 */
import type { Schema } from '../config/schema-kit.js';
import { openstackProviderSchema, type OpenStackProviderConfig } from './openstack/config.js';
import { staticProviderSchema, type StaticProviderConfig } from './static/config.js';

/** Any loaded provider, discriminated by `driver`. */
export type ProviderConfig = OpenStackProviderConfig | StaticProviderConfig;

export const providerSchemas: Readonly<Record<ProviderConfig['driver'], Schema<ProviderConfig>>> = {
  openstack: openstackProviderSchema,
  static: staticProviderSchema,
};

export const DRIVER_NAMES = Object.keys(providerSchemas) as ReadonlyArray<ProviderConfig['driver']>;

/** The diskimages a provider uploads (only image-managing drivers have any). */
export function providerDiskimages(p: ProviderConfig): ReadonlyArray<{ name: string; pause: boolean; meta: Record<string, string> }> {
  return p.driver === 'openstack' ? p.diskimages : [];
}
