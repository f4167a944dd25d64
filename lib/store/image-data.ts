/**
 * Image data: the image records of a state store (builds, uploads, pauses, build requests and
 * the id sequences behind them) as one versioned JSON document, so a site can back its state
 * up and move it between stores (SQLite → ZooKeeper) with the ids intact.
 *
 * Writing records with given ids is not part of the {@link Store} contract, so this is a
 * separate, optional capability ({@link ImageDataStore}); `nodepool export-image-data` and
 * `import-image-data` check for it with {@link hasImageData}. The field-by-field validator of a
 * document is image-data-check.ts (which builds on this file). What every backend shares lives
 * here and is pure: the format and the conflict check an import runs against the target
 * ({@link findImportConflict}).
 */
import { ImageDataConflictError, StoreError } from '../errors.js';
import { IMAGE_ID_RE, UPLOAD_ID_RE } from '../images/image-file.js';
import type { BuildRecord, BuildRequest, PauseRecord, PinRecord, RevocationRecord, UploadRecord, UploadRetryRequest } from './models.js';

/** The `format` field of an image data document. */
export const IMAGE_DATA_FORMAT = 'nodepool-ts-image-data';
/** The version this code writes and reads. */
export const IMAGE_DATA_VERSION = 1;
/** Largest image data file the CLI reads or writes (64 MiB: some 150,000 uploads). */
export const IMAGE_DATA_MAX_BYTES = 64 * 1024 * 1024;

/** The id sequences of image records: where the next build or upload id continues from. */
export interface ImageDataSequences {
  /** Last build sequence handed out per diskimage (the next build of `d` is `d-<value + 1>`). */
  build: Record<string, number>;
  /** Last upload sequence handed out in the store. */
  upload: number;
}

/**
 * One store's image records (version 1). Nodes, node requests, sessions, locks, launchers and
 * the server's published status are not image data: they are rebuilt by the launchers.
 */
export interface ImageData {
  format: typeof IMAGE_DATA_FORMAT;
  version: typeof IMAGE_DATA_VERSION;
  /** When the export was taken (epoch ms, the source store's clock). */
  exported: number;
  /** Ordered by diskimage, then id (as {@link Store.listBuilds}). */
  builds: BuildRecord[];
  /** Ordered by diskimage, provider, then id (as {@link Store.listUploads}). */
  uploads: UploadRecord[];
  pauses: PauseRecord[];
  buildRequests: BuildRequest[];
  /**
   * Pins and revoked builds (issue 24), as listPins and listRevocations order them: present when
   * the store has any, so a file without them (older, or of a store without any) imports as before.
   */
  pins?: PinRecord[];
  revocations?: RevocationRecord[];
  /**
   * Upload retry requests (issue 25, exported since issue 31 §12), by diskimage then provider:
   * present when the store has any, so a file without them imports as before.
   */
  uploadRetries?: UploadRetryRequest[];
  sequences: ImageDataSequences;
  /**
   * The source store's installation id (lib/store/installation.ts), when a server had made one:
   * an import into a store without one adopts it, so builders keep serving the imported builds.
   */
  installation?: string;
}

/** What an import wrote. */
export interface ImportCounts {
  builds: number;
  uploads: number;
  pauses: number;
  buildRequests: number;
  /** Pauses the target already had for the same diskimage and provider: kept as they were. */
  pausesKept: number;
  /** Build requests the target already had for the same diskimage: kept as they were. */
  buildRequestsKept: number;
  /** Sequences of the target moved forward to the imported value. */
  sequencesRaised: number;
  /** Pins and revocations written, and those the target already had for the same key (kept as they were); present when the data had any. */
  pins?: number;
  pinsKept?: number;
  revocations?: number;
  revocationsKept?: number;
  /** Upload retry requests written, and those the target already had for the same diskimage and provider (kept); present when the data had any. */
  uploadRetries?: number;
  uploadRetriesKept?: number;
}

/** `data` without its builds' log URLs (issue 25: a URL of a running builder, not image data; the file format has none). */
export function withoutLogUrls(data: ImageData): ImageData {
  if (!data.builds.some((b) => 'logUrl' in b)) return data;
  return {
    ...data,
    builds: data.builds.map((b) => {
      const { logUrl: _logUrl, ...rest } = b;
      return rest;
    }),
  };
}

/** `data`'s pins and revocations, with the keys only when there are any (older files have none). */
export function withRollout<T extends object>(data: T, pins: PinRecord[], revocations: RevocationRecord[]): T & Pick<ImageData, 'pins' | 'revocations'> {
  return { ...data, ...(pins.length > 0 ? { pins } : {}), ...(revocations.length > 0 ? { revocations } : {}) };
}

/** `data` with its upload retry requests, with the key only when there are any (older files have none). */
export function withUploadRetries<T extends object>(data: T, retries: UploadRetryRequest[]): T & Pick<ImageData, 'uploadRetries'> {
  return { ...data, ...(retries.length > 0 ? { uploadRetries: retries } : {}) };
}

/** Counts of an import's upload retry requests (written, and kept), as the ImportCounts fields; none when the data had none. */
export function uploadRetryCounts(data: ImageData, written: number): Partial<ImportCounts> {
  const all = data.uploadRetries ?? [];
  return all.length === 0 ? {} : { uploadRetries: written, uploadRetriesKept: all.length - written };
}

/**
 * Counts of an import's pins and revocations (written, and kept because the target had one for
 * the same key), as the ImportCounts fields; none when the data had neither.
 */
export function rolloutCounts(data: ImageData, pinsWritten: number, revocationsWritten: number): Partial<ImportCounts> {
  const pins = data.pins ?? [];
  const revocations = data.revocations ?? [];
  if (pins.length === 0 && revocations.length === 0) return {};
  return { pins: pinsWritten, pinsKept: pins.length - pinsWritten, revocations: revocationsWritten, revocationsKept: revocations.length - revocationsWritten };
}

/**
 * A store that can export and import its image records with their ids. Backends implement
 * it beside {@link Store}; callers check with {@link hasImageData}.
 */
export interface ImageDataStore {
  /** A consistent snapshot of every image record and the build and upload sequences. */
  exportImageData(): Promise<ImageData>;
  /**
   * Writes `data` into this store, all or nothing. Sequences become max(existing, imported),
   * so a new build never reuses an imported id. Pauses, build requests, upload retry requests,
   * pins and revocations the store already has for the same key are kept as they are.
   * Thrown: `InvalidImageDataError` (lib/errors) when `data` does not validate;
   * {@link ImageDataConflictError} (nothing written) when a build or upload id already exists,
   * or when an imported sequence is behind a record already in this store.
   */
  importImageData(data: ImageData): Promise<ImportCounts>;
}

/** Whether `store` has the image data capability. */
export function hasImageData<S extends object>(store: S): store is S & ImageDataStore {
  const s = store as Partial<ImageDataStore>;
  return typeof s.exportImageData === 'function' && typeof s.importImageData === 'function';
}

/**
 * `uploads` without those whose build is not among `builds` (the build record is corrupt and
 * was left out): an export never holds an upload an import would refuse for lack of its build.
 */
export function withoutOrphanUploads(builds: readonly { id: string }[], uploads: UploadRecord[]): UploadRecord[] {
  const ids = new Set(builds.map((b) => b.id));
  return uploads.filter((u) => ids.has(u.buildId));
}

/**
 * The sequence number in a build id (`debian-0000000007` → 7); 0 for a Nodepool 11 uuid id,
 * which takes nothing from the sequence. Thrown: StoreError for another shape.
 */
export function buildIdSequence(id: string): number {
  const m = IMAGE_ID_RE.exec(id);
  if (!m) throw new StoreError(`invalid build id ${JSON.stringify(id)}: expected <diskimage>-<10 digits or 32 hex>`);
  const build = m[2] as string;
  return build.length === 10 ? Number(build) : 0;
}

/**
 * The sequence number of an upload id (`0000000042` → 42); 0 for an upload under a Nodepool 11
 * uuid build (`<hex>-<provider>-<seq>`, a sequence of its own). Thrown: StoreError for another shape.
 */
export function uploadIdSequence(id: string): number {
  if (!UPLOAD_ID_RE.test(id)) throw new StoreError(`invalid upload id ${JSON.stringify(id)}: expected 10 digits or <build hex>-<provider>-<10 digits>`);
  return /^\d{10}$/.test(id) ? Number(id) : 0;
}

/** What an import needs to know of its target to find a conflict. */
export interface ImportTarget {
  hasBuild(id: string): boolean;
  hasUpload(id: string): boolean;
  /** The largest build sequence among the target's build records of `diskimage` (0 when none). */
  maxBuildSequence(diskimage: string): number;
  /** The largest upload sequence among the target's upload records (0 when none). */
  maxUploadSequence(): number;
}

/**
 * The first reason `data` (already validated) cannot go into `target`, as the error to throw,
 * or undefined. Refused: a build or upload id the target already has; an imported sequence
 * behind a record of the target (the two stores handed out ids independently, so a later id
 * could name two different images).
 */
export function findImportConflict(data: ImageData, target: ImportTarget): ImageDataConflictError | undefined {
  for (const b of data.builds) {
    if (target.hasBuild(b.id)) return new ImageDataConflictError(b.id, `build ${b.id} already exists in the target store; import refuses to overwrite it`);
  }
  for (const u of data.uploads) {
    if (target.hasUpload(u.id)) {
      return new ImageDataConflictError(u.id, `upload ${u.id} (${u.buildId} on ${u.provider}) already exists in the target store; import refuses to overwrite it`);
    }
  }
  for (const [diskimage, seq] of Object.entries(data.sequences.build)) {
    const held = target.maxBuildSequence(diskimage);
    if (held > seq) {
      const id = `${diskimage}-${String(held).padStart(10, '0')}`;
      return new ImageDataConflictError(id, `the target store has build ${id}, past the imported build sequence of ${diskimage} (${seq}); `
        + 'its ids were handed out apart from the imported ones');
    }
  }
  const heldUpload = target.maxUploadSequence();
  if (heldUpload > data.sequences.upload) {
    const id = String(heldUpload).padStart(10, '0');
    return new ImageDataConflictError(id, `the target store has upload ${id}, past the imported upload sequence (${data.sequences.upload}); `
      + 'its ids were handed out apart from the imported ones');
  }
  return undefined;
}
