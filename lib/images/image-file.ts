/**
 * Image ids and the names of an image's files in `images-dir`:
 * `<id>.<format>`, `<id>.<format>.sha256`, `<id>.<format>.md5` (DIB), DIB's `<id>.d/`,
 * and the `<id>.json` sidecar written last (a build without it is incomplete).
 * Every id is validated here before any path is built from it.
 */
import path from 'node:path';
import { InvalidJobError } from '../errors.js';

/** Diskimage names: what Nodepool allows in practice, and nothing that can climb a path. */
export const DISKIMAGE_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,50}$/;
/** `<diskimage>-<10 digits>`. */
export const IMAGE_ID_RE = /^([A-Za-z0-9][A-Za-z0-9._-]{0,50})-(\d{10})$/;

/** A validated image id with its parts. */
export interface ImageId {
  id: string;
  diskimage: string;
  sequence: number;
}

/** Formats a new id from a diskimage name and a store sequence number. */
export function formatImageId(diskimage: string, sequence: number): string {
  if (!DISKIMAGE_NAME_RE.test(diskimage)) throw new InvalidJobError(`invalid diskimage name ${JSON.stringify(diskimage)}`);
  if (!Number.isInteger(sequence) || sequence < 0 || sequence > 9_999_999_999) {
    throw new InvalidJobError(`invalid image sequence ${sequence}`);
  }
  return `${diskimage}-${String(sequence).padStart(10, '0')}`;
}

/**
 * Validates an image id; `knownDiskimages`, when given, must contain its diskimage.
 * Thrown: {@link InvalidJobError} for anything that is not `<diskimage>-<10 digits>` (so no
 * `/`, no `..`, no NUL), or names a diskimage not in `knownDiskimages`.
 */
export function parseImageId(id: unknown, knownDiskimages?: ReadonlySet<string>): ImageId {
  if (typeof id !== 'string') throw new InvalidJobError(`image id must be a string, got ${typeof id}`);
  const m = IMAGE_ID_RE.exec(id);
  if (!m || id.includes('..')) throw new InvalidJobError(`invalid image id ${JSON.stringify(id.slice(0, 100))}: expected <diskimage>-<10 digits>`);
  const diskimage = m[1] as string;
  if (knownDiskimages && !knownDiskimages.has(diskimage)) {
    throw new InvalidJobError(`image id ${id} names diskimage ${JSON.stringify(diskimage)}, which this builder does not know`);
  }
  return { id, diskimage, sequence: Number(m[2]) };
}

/** Formats (file extensions) the builder handles. */
export const IMAGE_FORMATS = ['qcow2', 'raw', 'vhd', 'tar', 'squashfs'] as const;
export type ImageFormat = (typeof IMAGE_FORMATS)[number];

export function isImageFormat(s: string): s is ImageFormat {
  return (IMAGE_FORMATS as readonly string[]).includes(s);
}

/** The paths of one image's files. `id` must have passed {@link parseImageId}. */
export const imagePaths = {
  base: (dir: string, id: string): string => path.join(dir, id),
  file: (dir: string, id: string, format: string): string => path.join(dir, `${id}.${format}`),
  sha256: (dir: string, id: string, format: string): string => path.join(dir, `${id}.${format}.sha256`),
  sidecar: (dir: string, id: string): string => path.join(dir, `${id}.json`),
  dibDir: (dir: string, id: string): string => path.join(dir, `${id}.d`),
};

/** What one directory entry in images-dir is. */
export type ImageDirEntry =
  | { kind: 'sidecar'; id: string }
  | { kind: 'image'; id: string; format: string }
  | { kind: 'checksum'; id: string; format: string; algo: 'sha256' | 'md5' }
  | { kind: 'dib-dir'; id: string }
  | { kind: 'partial'; id: string; name: string }
  | { kind: 'other'; name: string };

/**
 * Classifies an entry of images-dir by name (pure; the caller says whether it is a directory).
 * Anything that does not start with a valid image id (`lost+found`, stray files) is `other`.
 */
export function classifyEntry(name: string, isDirectory: boolean): ImageDirEntry {
  const dot = name.indexOf('.');
  const id = dot < 0 ? name : name.slice(0, dot);
  if (!IMAGE_ID_RE.test(id)) return { kind: 'other', name };
  const rest = dot < 0 ? '' : name.slice(dot + 1);
  if (isDirectory) return rest === 'd' ? { kind: 'dib-dir', id } : { kind: 'partial', id, name };
  if (rest === 'json') return { kind: 'sidecar', id };
  const parts = rest.split('.');
  if (parts.length === 1 && parts[0] && isImageFormat(parts[0])) return { kind: 'image', id, format: parts[0] };
  if (parts.length === 2 && parts[0] && (parts[1] === 'sha256' || parts[1] === 'md5')) {
    return { kind: 'checksum', id, format: parts[0], algo: parts[1] };
  }
  return { kind: 'partial', id, name };
}
