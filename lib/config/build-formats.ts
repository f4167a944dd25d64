/**
 * Which formats a diskimage is built in, read from the loaded config: the diskimage's own
 * `formats`, else the formats of the providers that take it (through the config registry),
 * with vhd made at upload time (lib/images/formats.ts {@link formatsFor}). Pure.
 */
import { imageTarget } from '../drivers/config-registry.js';
import { formatsFor } from '../images/formats.js';
import type { Config, DiskimageConfig } from './schema.js';

/** DIB's `-t` list for a diskimage, in a stable order. */
export function buildFormats(config: Pick<Config, 'providers'>, diskimage: DiskimageConfig): string[] {
  const provided: string[] = [];
  for (const p of config.providers) {
    const target = imageTarget(p, diskimage.name);
    if (target) provided.push(target.format);
  }
  return formatsFor(diskimage, provided);
}
