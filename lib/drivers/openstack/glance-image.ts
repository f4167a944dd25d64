/**
 * Glance's image records: the parsed {@link GlanceImage} and its hash, the reserved (core)
 * keys, and the pure readers that turn Glance's JSON into them.
 */
import type { JsonReader } from './json-reader.js';

/** An image as listed by Glance, with its extra (string) properties split out. */
export interface GlanceImage {
  id: string;
  name: string;
  status: string;
  size: number | null;
  /** md5 of the data (Glance's legacy checksum). */
  checksum: string | null;
  diskFormat: string | null;
  containerFormat: string | null;
  visibility: string;
  /** Every non-core property whose value is a string. */
  properties: Record<string, string>;
}

/** Glance's hash of an image's data. */
export interface GlanceHash {
  /** `os_hash_algo` (e.g. sha512), or `md5` for the legacy `checksum`. */
  algo: string;
  value: string;
}

/** Glance's multihash of a raw image (`os_hash_algo`/`os_hash_value`), else its md5 `checksum`. Pure. */
export function glanceHashOf(raw: Record<string, unknown>): GlanceHash | undefined {
  const algo = raw.os_hash_algo;
  const value = raw.os_hash_value;
  if (typeof algo === 'string' && algo && typeof value === 'string' && value) return { algo: algo.toLowerCase(), value: value.toLowerCase() };
  if (typeof raw.checksum === 'string' && raw.checksum) return { algo: 'md5', value: raw.checksum.toLowerCase() };
  return undefined;
}

/** An uploaded, `active` image. */
export interface UploadedGlanceImage {
  id: string;
  name: string;
  checksum?: string;
  /** Glance's hash of the stored data, when it gives one. */
  hash?: GlanceHash;
  size: number;
  status: string;
}

/** Keys Glance owns; they cannot be used as image properties and are not returned as such. */
export const CORE_KEYS = new Set([
  'id', 'name', 'status', 'visibility', 'protected', 'os_hidden', 'checksum', 'os_hash_algo', 'os_hash_value',
  'owner', 'size', 'virtual_size', 'min_ram', 'min_disk', 'disk_format', 'container_format', 'created_at',
  'updated_at', 'tags', 'self', 'file', 'schema', 'direct_url', 'locations', 'stores', 'member_status',
]);

/** Glance's base URL without a version suffix (`http://h:9292/v2/` → `http://h:9292`). Pure. */
export function imageApiBase(url: string): string {
  return url.replace(/\/+$/, '').replace(/\/v2(\.\d+)?$/, '');
}

/** Turns Glance's image JSON into a {@link GlanceImage}. Pure. */
export function toGlanceImage(raw: Record<string, unknown>): GlanceImage {
  const properties: Record<string, string> = {};
  for (const [k, v] of Object.entries(raw)) {
    if (!CORE_KEYS.has(k) && !k.startsWith('os_glance') && typeof v === 'string') properties[k] = v;
  }
  const s = (k: string): string | null => (typeof raw[k] === 'string' ? (raw[k] as string) : null);
  return {
    id: String(raw.id),
    name: s('name') ?? '',
    status: s('status') ?? 'unknown',
    size: typeof raw.size === 'number' ? raw.size : null,
    checksum: s('checksum'),
    diskFormat: s('disk_format'),
    containerFormat: s('container_format'),
    visibility: s('visibility') ?? 'unknown',
    properties,
  };
}

/**
 * Reads an image object of a Glance answer, checking the type of every field used.
 * Thrown: {@link CloudError} naming the call and the field.
 */
export function readGlanceImage(r: JsonReader): GlanceImage {
  r.id('id');
  r.str('status');
  for (const k of ['name', 'checksum', 'disk_format', 'container_format', 'visibility']) r.optStr(k);
  r.optNum('size');
  return toGlanceImage(r.value);
}
