/**
 * The hashes of an upload, computed from the very bytes the driver reads to send (the
 * `onData` tap of an `UploadRequest`): sha256 to check the file against the checksum recorded
 * when it was built, plus the algorithms the cloud hashes with, all in the upload's one pass
 * over the file. At the last byte it checks the sha256, so a driver can still fail the upload
 * before the cloud makes the image active. The comparison with the cloud's hash is pure.
 */
import { createHash, getHashes, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import type { CloudHash } from '../../lib/drivers/contract/image-service.js';
import { ImageFileChangedError } from '../../lib/errors.js';

/**
 * Node's name of a hash algorithm as a cloud names it (`SHA512` → `sha512`, Python's
 * `sha3_256` → `sha3-256`), or undefined when Node has no such hash. Pure.
 */
export function nodeHashName(algo: string): string | undefined {
  const name = algo.trim().toLowerCase().replace(/_/g, '-');
  return supported().has(name) ? name : undefined;
}

let hashNames: Set<string> | undefined;
function supported(): Set<string> {
  hashNames ??= new Set(getHashes().map((h) => h.toLowerCase()));
  return hashNames;
}

/** What an upload's file was when it was built. */
export interface RecordedFile {
  /** The image file being uploaded. */
  file: string;
  /** Its size when the upload started (checked against the record before). */
  size: number;
  /** The sha256 recorded at build (or conversion) time. */
  sha256: string;
}

/** Hashes of one upload attempt's bytes; {@link tap} is the request's `onData`. */
export class UploadDigest {
  private names: readonly string[];
  private hashes = new Map<string, Hash>();
  private digests: Map<string, string> | undefined;
  private seen = 0;
  private tapped = false;
  private refused: ImageFileChangedError | undefined;

  constructor(private readonly recorded: RecordedFile, cloudAlgos: readonly string[] = []) {
    this.names = withSha256(cloudAlgos);
    this.reset();
  }

  /** The algorithms computed (Node names): sha256 first, then the cloud's. */
  get algos(): readonly string[] {
    return this.names;
  }

  /** The file hashed. */
  get file(): string {
    return this.recorded.file;
  }

  /** Bytes hashed so far in this pass. */
  get bytes(): number {
    return this.seen;
  }

  /** The error {@link tap} threw because the file changed, whatever the driver made of it. */
  get failure(): ImageFileChangedError | undefined {
    return this.refused;
  }

  /** Whether the driver passed any bytes through {@link tap} (a driver may not). */
  get used(): boolean {
    return this.tapped;
  }

  /**
   * Takes the next chunk at `offset`; offset 0 again starts a new pass (a resent body).
   * Thrown: {@link ImageFileChangedError} when the file grew, or at the last byte when its
   * sha256 is not the recorded one; a plain Error for chunks out of order (a driver bug).
   */
  readonly tap = (chunk: Uint8Array, offset: number): void => {
    this.tapped = true;
    if (offset === 0 && this.seen > 0) this.reset();
    if (offset !== this.seen) throw new Error(`upload bytes out of order: a chunk at offset ${offset} after ${this.seen} bytes of ${this.recorded.file}`);
    const { file, size } = this.recorded;
    try {
      if (this.seen + chunk.length > size) throw new ImageFileChangedError(`${file} changed on disk during the upload: it grew past the ${size} bytes it had when the upload started; upload refused`);
      for (const h of this.hashes.values()) h.update(chunk);
      this.seen += chunk.length;
      if (this.seen === size) this.check();
    } catch (err) {
      if (err instanceof ImageFileChangedError) this.refused = err;
      throw err;
    }
  };

  /**
   * Hashes the file itself, for a driver that did not pass its bytes through {@link tap}
   * (a second read: only then), with `moreAlgos` too (the cloud's, now known).
   */
  async readFile(signal?: AbortSignal, moreAlgos: readonly string[] = []): Promise<void> {
    this.names = withSha256([...this.names, ...moreAlgos]);
    this.reset();
    let offset = 0;
    const stream = createReadStream(this.recorded.file, { highWaterMark: 1 << 20, ...(signal ? { signal } : {}) });
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      this.tap(chunk, offset);
      offset += chunk.length;
    }
  }

  /**
   * Thrown: {@link ImageFileChangedError} unless every byte of the file was hashed and their
   * sha256 is the recorded one.
   */
  check(): void {
    const { file, size, sha256 } = this.recorded;
    if (this.seen !== size) throw new ImageFileChangedError(`${file} changed on disk during the upload: ${this.seen} bytes were read of the ${size} it had when the upload started; upload refused`);
    const got = this.value('sha256');
    if (got !== sha256) {
      throw new ImageFileChangedError(`${file} changed on disk since it was built: the bytes read for the upload hash to sha256 ${got}, the build recorded ${sha256}; upload refused`);
    }
  }

  /** The hex digest of `algo` (a cloud's or Node's name) once every byte was hashed; undefined if not computed. */
  value(algo: string): string | undefined {
    const name = nodeHashName(algo);
    if (name === undefined || this.seen !== this.recorded.size || !this.hashes.has(name)) return undefined;
    this.digests ??= new Map([...this.hashes].map(([n, h]) => [n, h.digest('hex')]));
    return this.digests.get(name);
  }

  private reset(): void {
    this.hashes = new Map(this.names.map((a) => [a, createHash(a)]));
    this.digests = undefined;
    this.seen = 0;
  }
}

/** sha256 and the algorithms Node has of `algos`, as Node names, each once. Pure. */
function withSha256(algos: readonly string[]): string[] {
  return [...new Set(['sha256', ...algos.map(nodeHashName).filter((n): n is string => n !== undefined)])];
}

/** How a cloud's hash compares with the bytes sent. */
export type CloudHashVerdict =
  | { kind: 'match'; algo: string; value: string }
  | { kind: 'mismatch'; algo: string; value: string; sent: string }
  /** The cloud hashed with an algorithm that was not computed during the stream. */
  | { kind: 'not-computed'; algo: string; value: string }
  /** The cloud gave no hash. */
  | { kind: 'none' };

/** Compares the cloud's hash (if any) with `digest`'s value of the same algorithm. Pure. */
export function compareCloudHash(hash: CloudHash | undefined, digest: Pick<UploadDigest, 'value'>): CloudHashVerdict {
  if (!hash) return { kind: 'none' };
  const algo = hash.algo.toLowerCase();
  const value = hash.value.toLowerCase();
  const sent = digest.value(algo);
  if (sent === undefined) return { kind: 'not-computed', algo, value };
  return sent === value ? { kind: 'match', algo, value } : { kind: 'mismatch', algo, value, sent };
}
