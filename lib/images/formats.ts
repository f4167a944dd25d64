/**
 * Which formats a diskimage is built in, and how uploads convert to a provider's format (pure).
 * DIB builds the diskimage's `formats` (or, if none are given, what its providers need);
 * vhd is never asked of DIB (it needs vhd-util, which Debian lacks): it is made by
 * `qemu-img convert -O vpc` at upload time.
 */
import type { DiskimageConfig } from '../config/schema.js';

/**
 * DIB's `-t` list for a diskimage, in a stable order, given the formats of the providers that
 * take it (lib/config/build-formats.ts gathers them from the config).
 */
export function formatsFor(diskimage: DiskimageConfig, providerFormats: Iterable<string>): string[] {
  const wanted = new Set<string>(diskimage.formats ?? providerFormats);
  if (wanted.has('vhd')) {
    wanted.delete('vhd');
    if (!wanted.has('qcow2')) wanted.add('raw');
  }
  if (wanted.size === 0) wanted.add('qcow2');
  return [...wanted].sort();
}

/** qemu-img's name for a format (`-O`/`-f`). */
export function qemuFormatName(format: string): string {
  return format === 'vhd' ? 'vpc' : format;
}

/** Formats qemu-img can convert between. */
export const CONVERTIBLE = new Set(['qcow2', 'raw', 'vhd']);

/**
 * Picks the local file to convert from, preferring raw (fastest to read), then qcow2;
 * `undefined` when no conversion source exists.
 */
export function conversionSource(available: readonly string[], target: string): string | undefined {
  if (!CONVERTIBLE.has(target)) return undefined;
  return ['raw', 'qcow2', 'vhd'].find((f) => f !== target && available.includes(f));
}

/** `qemu-img convert` arguments; vhd gets `force_size` so the virtual size is exact. */
export function convertArgs(src: string, srcFormat: string, dst: string, dstFormat: string): string[] {
  const args = ['convert', '-p', '-f', qemuFormatName(srcFormat), '-O', qemuFormatName(dstFormat)];
  if (dstFormat === 'vhd') args.push('-o', 'force_size');
  args.push(src, dst);
  return args;
}
