/**
 * The explicit runtime registry: driver name → Driver (its config part joined with its host
 * access, providers and image services). lib/config never imports this (it sees config-registry.ts), so
 * validating a file loads no cloud client. No directory scanning, no magic names.
 */
import type { ProviderConfig } from './config-registry.js';
import type { Driver } from './contract/driver.js';
import { openstackDriver } from './openstack/index.js';
import type { OpenStackAccess } from './openstack/access.js';
import type { OpenStackProviderConfig } from './openstack/config.js';
import { qemuDriver } from './qemu/index.js';
import type { QemuProviderConfig } from './qemu/config.js';
import { staticDriver } from './static/index.js';
import type { StaticProviderConfig } from './static/config.js';

export const drivers: {
  readonly openstack: Driver<OpenStackProviderConfig, OpenStackAccess>;
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
