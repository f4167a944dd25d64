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
/**
 * A build id: `<diskimage>-<10 digits>` (ours, and Nodepool before its uuid ids) or
 * `<diskimage>-<32 lowercase hex>` (Nodepool 11's `uuid4().hex`). Group 2 is the build's path
 * segment under `builds/`. Neither form can hold `/`, `..` or NUL.
 */
export const IMAGE_ID_RE = /^([A-Za-z0-9][A-Za-z0-9._-]{0,50})-(\d{10}|[0-9a-f]{32})$/;
/** Only `<diskimage>-<10 digits>`: the ids this project's builders build, and name files after. */
export const SEQ_IMAGE_ID_RE = /^([A-Za-z0-9][A-Za-z0-9._-]{0,50})-(\d{10})$/;
/** A Nodepool 11 build id's path segment (`uuid4().hex`). */
export const UUID_HEX_RE = /^[0-9a-f]{32}$/;

/**
 * An upload id: 10 digits from the store-wide sequence, or, for an upload under a Nodepool 11
 * uuid build (whose upload ids are a sequence per build and provider, so `0000000001` repeats),
 * `<build uuid hex>-<provider>-<10 digits>`. Groups: build hex, provider, the znode's name.
 */
export const UPLOAD_ID_RE = /^(?:\d{10}|([0-9a-f]{32})-([^/\0]+)-(\d{10}))$/;

/** An upload id from the store-wide sequence (not one under a Nodepool 11 uuid build). */
export const UPLOAD_SEQ_RE = /^\d{10}$/;

/** The id of the upload znode `name` under build segment `build` and `provider` (see {@link UPLOAD_ID_RE}). */
export function uploadIdOf(build: string, provider: string, name: string): string {
  return UUID_HEX_RE.test(build) ? `${build}-${provider}-${name}` : name;
}

/** The znode name of an upload id (its last 10 digits). */
export const uploadNodeName = (id: string): string => id.slice(-10);

/** A validated image id with its parts. */
export interface ImageId {
  id: string;
  diskimage: string;
  /** The build's segment under `builds/`: 10 digits, or 32 hex for a Nodepool 11 build. */
  build: string;
  /** The sequence of a 10-digit id; null for a Nodepool 11 uuid id, which has no order of its own. */
  sequence: number | null;
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
 * Thrown: {@link InvalidJobError} for anything that is not `<diskimage>-<10 digits>` or
 * `<diskimage>-<32 hex>` (so no `/`, no `..`, no NUL), or names a diskimage not in
 * `knownDiskimages`.
 */
export function parseImageId(id: unknown, knownDiskimages?: ReadonlySet<string>): ImageId {
  if (typeof id !== 'string') throw new InvalidJobError(`image id must be a string, got ${typeof id}`);
  const m = IMAGE_ID_RE.exec(id);
  if (!m || id.includes('..')) throw new InvalidJobError(`invalid image id ${JSON.stringify(id.slice(0, 100))}: expected <diskimage>-<10 digits or 32 hex>`);
  const diskimage = m[1] as string;
  if (knownDiskimages && !knownDiskimages.has(diskimage)) {
    throw new InvalidJobError(`image id ${id} names diskimage ${JSON.stringify(diskimage)}, which this builder does not know`);
  }
  const build = m[2] as string;
  return { id, diskimage, build, sequence: build.length === 10 ? Number(build) : null };
}

/**
 * Orders image records oldest first: by id sequence when both ids have one (ours), else by
 * when they were created (a Nodepool 11 uuid build, or an upload under one, against anything),
 * then by id. Use {@link hasSequenceOrder} to choose it per list, so the order stays transitive.
 */
export function byCreated(a: { id: string; created: number }, b: { id: string; created: number }): number {
  return a.created - b.created || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/** Whether every build id in `ids` has a sequence (then sequence order is the order of creation). */
export function hasSequenceOrder(ids: Iterable<string>): boolean {
  for (const id of ids) if (!SEQ_IMAGE_ID_RE.test(id)) return false;
  return true;
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
 * Anything that does not start with one of our `<diskimage>-<10 digits>` ids (`lost+found`,
 * stray files, a Nodepool builder's `<diskimage>-<uuid hex>.qcow2`) is `other`, so a builder
 * pointed at a Nodepool images-dir never removes Nodepool's files as incomplete builds.
 */
export function classifyEntry(name: string, isDirectory: boolean): ImageDirEntry {
  const dot = name.indexOf('.');
  const id = dot < 0 ? name : name.slice(0, dot);
  if (!SEQ_IMAGE_ID_RE.test(id)) return { kind: 'other', name };
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
