/**
 * The explicit registry of drivers' config parts: driver name → DriverConfig, and the
 * top-level keys drivers add. This is what lib/config sees; it loads no runtime code
 * (lib/drivers/registry.ts joins each part with its providers). No directory scanning, no
 * magic names; an unknown driver is a config problem naming the provider (lib/config/schema.ts).
 */
import type { DriverConfig, ImageTarget, PoolInfo } from './contract/driver-config.js';
import { openstackConfig, type OpenStackProviderConfig } from './openstack/config.js';
import { qemuConfig, type QemuProviderConfig } from './qemu/config.js';
import { staticConfig, type StaticProviderConfig } from './static/config.js';

/** Any loaded provider, discriminated by `driver`. */
export type ProviderConfig = OpenStackProviderConfig | StaticProviderConfig | QemuProviderConfig;

export const driverConfigs: {
  readonly openstack: typeof openstackConfig;
  readonly static: DriverConfig<StaticProviderConfig>;
  readonly qemu: DriverConfig<QemuProviderConfig>;
} = {
  openstack: openstackConfig,
  static: staticConfig,
  qemu: qemuConfig,
};

export const DRIVER_NAMES = Object.keys(driverConfigs) as ReadonlyArray<ProviderConfig['driver']>;

/**
 * The top-level keys drivers add to nodepool.yaml (each driver's `settings`), spread into the
 * top-level schema by lib/config/schema.ts. A driver that declares some adds its spread here.
 */
export const driverSettingFields = { ...driverConfigs.openstack.settings.fields };

/** Each top-level key a driver declares, with the driver. */
const declaredSettings = DRIVER_NAMES.flatMap((driver) => Object.keys(driverConfigs[driver].settings?.fields ?? {}).map((key) => ({ driver, key })));
// Checked once at load, so a driver that declares a key twice over or is left out of the spread above fails every test.
const twice = declaredSettings.filter((s, i) => declaredSettings.findIndex((o) => o.key === s.key) !== i);
if (twice.length > 0) throw new Error(`drivers declare the same top-level key: ${twice.map((s) => `${s.key} (${s.driver})`).join(', ')}`);
const unspread = declaredSettings.filter((s) => !(s.key in driverSettingFields));
if (unspread.length > 0) throw new Error(`top-level keys declared by drivers but not spread into driverSettingFields: ${unspread.map((s) => `${s.key} (${s.driver})`).join(', ')}`);

/** The keys of {@link driverSettingFields} that name files (resolved against the config file's directory). */
export const DRIVER_SETTING_PATHS: readonly string[] = DRIVER_NAMES.flatMap((d) => driverConfigs[d].settings?.pathKeys ?? []);

/** The driver of a provider without `driver:` (Nodepool's default). */
export const DEFAULT_DRIVER: ProviderConfig['driver'] = 'openstack';

/** The config part of a loaded provider's driver. */
export function driverConfigOf(p: ProviderConfig): DriverConfig<ProviderConfig> {
  return driverConfigs[p.driver] as DriverConfig<ProviderConfig>;
}

/** The provider's pools as the launcher sees them. */
export function providerPools(p: ProviderConfig): PoolInfo[] {
  return driverConfigOf(p).pools(p);
}

/** The diskimages the provider takes (none unless its driver manages images). */
export function imageTargets(p: ProviderConfig): ImageTarget[] {
  return driverConfigOf(p).imageTargets?.(p) ?? [];
}

/** The provider's target for `diskimage`, if it takes that diskimage. */
export function imageTarget(p: ProviderConfig, diskimage: string): ImageTarget | undefined {
  return imageTargets(p).find((t) => t.diskimage === diskimage);
}

/** Whether the provider's driver manages uploaded images at all (even when it lists none now). */
export function takesImages(p: ProviderConfig): boolean {
  return driverConfigOf(p).imageTargets !== undefined;
}
