/**
 * The runtime side of a driver's image capability: the image API a builder uploads through
 * and the server deletes and lists with, independent of the cloud behind it. A driver makes it
 * over its own host access (lib/drivers/contract/host-access.ts); core code reaches it only through an
 * ImageServiceFactory (lib/drivers/core/driver-hosts.ts).
 */

/** One image file to upload. */
export interface UploadRequest {
  /** The image's name in the cloud (`external-name`). */
  name: string;
  /** File format, passed on as the cloud's disk format: qcow2, raw, vhd, … (vhd stays vhd). */
  format: string;
  /** The local file; streamed, never read whole. */
  filePath: string;
  /** String metadata stored with the image, e.g. `nodepool_build_id`, `nodepool_upload_id`. */
  properties: Record<string, string>;
  /** Progress as bytes are sent. */
  onProgress?(sent: number, total: number): void;
  /** Aborting stops the upload and removes whatever was created in the cloud. */
  signal?: AbortSignal;
  /**
   * The bytes of the file as the driver reads them to send them: each chunk in order, before
   * it is sent, with its offset in the file (a driver that sends the file again, e.g. a retried
   * PUT, starts again at offset 0). The builder hashes them here, in the same pass as the
   * upload, to check the file against the sha256 recorded at build time and the cloud's own
   * hash. The chunk is only valid during the call. It may throw (the file changed on disk):
   * the driver then fails the upload with that error and removes what it created. Optional for
   * drivers: when one never calls it, the builder hashes the file itself after the upload.
   */
  onData?(chunk: Uint8Array, offset: number): void;
}

/** A hash of an image's data, as the cloud computed it from what it stored. */
export interface CloudHash {
  /** Lower-case name as the cloud gives it: `sha512`, `sha256`, `md5`, … */
  algo: string;
  /** Hex digest. */
  value: string;
  /** Who computed it, for messages (`Glance`); the provider's name when unset. */
  by?: string;
}

/** A finished upload. */
export interface UploadedImage {
  /** The cloud's id of the image (`external-id`). */
  externalId: string;
  externalName: string;
  /**
   * The cloud's own hash of the stored data (Glance: `os_hash_algo`/`os_hash_value`, else the
   * md5 `checksum`), when it gives one: the builder compares it with the bytes it sent and
   * deletes the image on a mismatch.
   */
  cloudHash?: CloudHash;
}

/** An image as the cloud lists it. */
export interface ListedImage {
  externalId: string;
  name: string;
  status: string;
  properties: Record<string, string>;
}

/** Upload, delete and list images in one cloud. */
export interface ImageService {
  /**
   * Uploads the file and resolves once the image is usable.
   * Thrown: `CloudError` when the cloud refuses it, `AbortedError` when aborted; nothing is
   * left behind in the cloud either way.
   */
  upload(req: UploadRequest): Promise<UploadedImage>;
  /** Deletes an image; an image that is already gone is not an error. */
  delete(externalId: string): Promise<void>;
  /**
   * Images visible to us, optionally only those whose properties all match (leak detection).
   * Aborting `signal` cancels the request in flight (a caller's timeout).
   */
  list(filter?: { properties?: Record<string, string> }, signal?: AbortSignal): Promise<ListedImage[]>;
  /**
   * Optional: the hash algorithms the cloud is expected to report in `cloudHash` (Node
   * `createHash` names), so the builder computes them while streaming; without it the builder
   * computes only sha256 there, and a cloud hash of another algorithm is compared only when the
   * builder reads the file itself (a driver that does not call `onData`).
   */
  cloudHashAlgos?(): readonly string[];
}

