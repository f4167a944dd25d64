/**
 * The explicit driver registry: driver name → Driver. No directory scanning, no magic
 * names; an unknown driver is a config problem naming the provider (lib/config/schema.ts).
 * Driver modules must not import runtime values from lib/config (schema.ts imports this).
 */
import type { Driver, PoolInfo } from './driver.js';
import { openstackDriver } from './openstack/index.js';
import type { OpenStackProviderConfig } from './openstack/config.js';
import { staticDriver } from './static/index.js';
import type { StaticProviderConfig } from './static/config.js';

/** Any loaded provider, discriminated by `driver`. */
export type ProviderConfig = OpenStackProviderConfig | StaticProviderConfig;

export const drivers: { readonly openstack: Driver<OpenStackProviderConfig>; readonly static: Driver<StaticProviderConfig> } = {
  openstack: openstackDriver,
  static: staticDriver,
};

export const DRIVER_NAMES = Object.keys(drivers) as ReadonlyArray<ProviderConfig['driver']>;

/** The driver of a loaded provider. */
export function driverOf(p: ProviderConfig): Driver<ProviderConfig> {
  return drivers[p.driver] as Driver<ProviderConfig>;
}

/** The provider's pools as the launcher sees them. */
export function providerPools(p: ProviderConfig): PoolInfo[] {
  return driverOf(p).pools(p);
}

/** The diskimages a provider uploads (only image-managing drivers have any). */
export function providerDiskimages(p: ProviderConfig): ReadonlyArray<{ name: string; pause: boolean; meta: Record<string, string> }> {
  return p.driver === 'openstack' ? p.diskimages : [];
}
