/**
 * Finding what an action names in the config, as a value or a refusal naming the config file.
 */
import type { Config } from '../config/schema.js';
import type { ProviderConfig } from '../drivers/config-registry.js';
import { refuse, type Refused } from './action-result.js';

/** A configured diskimage. */
export type DiskimageConfig = Config['diskimages'][number];

/** The configured diskimage `name`, or an `unknown-diskimage` refusal. */
export function findDiskimage(config: Config, name: string): DiskimageConfig | Refused<'unknown-diskimage'> {
  return config.diskimages.find((x) => x.name === name) ?? refuse('unknown-diskimage', `Diskimage ${name} not found in ${config.file}`);
}

/** The configured provider `name`, or an `unknown-provider` refusal. */
export function findProvider(config: Config, name: string): ProviderConfig | Refused<'unknown-provider'> {
  return config.providers.find((x) => x.name === name) ?? refuse('unknown-provider', `Provider ${name} not found in ${config.file}`);
}

/** Whether a lookup answered a refusal. */
export function isRefused<T extends object>(x: T | Refused): x is Refused {
  return (x as Partial<Refused>).ok === false && typeof (x as Partial<Refused>).refusal === 'string';
}
