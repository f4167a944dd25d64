/**
 * One streamed `GET …/v2/images/<id>/file` from Glance into a file, hashed as it goes (md5,
 * sha256, and the algorithm Glance hashed the image with), so memory stays at the socket's
 * buffers whatever the image's size. What Glance says of the data (size, `checksum`,
 * `os_hash_value`) is checked after the last byte; a mismatch, a cut connection or an
 * abort leaves no file behind (the data goes to `<dest>.part`, renamed at the end).
 */
import { createHash, getHashes, type Hash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { AbortedError, CloudError, coerceError } from '../../errors.js';
import type { GlanceHash } from './glance-image.js';

/** What Glance says of the image whose data is fetched. */
export interface ExpectedImageData {
  size: number | null;
  /** Glance's md5 `checksum`, when it has one. */
  checksum?: string | undefined;
  /** Glance's `os_hash_algo` / `os_hash_value`, when it has them. */
  hash?: GlanceHash | undefined;
}

/** The fetched file's size and hashes. */
export interface DownloadedImageData {
  size: number;
  md5: string;
  sha256: string;
}

/** Options of one download. */
export interface DownloadImageOptions {
  tlsOptions: https.RequestOptions;
  /** Fail when the socket brings nothing for this long. */
  idleTimeoutMs: number;
  signal?: AbortSignal | undefined;
  onProgress?: ((doneBytes: number, totalBytes: number) => void) | undefined;
}

/** Hashes every chunk that passes, and counts them. */
class Hashing extends Transform {
  readonly md5 = createHash('md5');
  readonly sha256 = createHash('sha256');
  bytes = 0;

  constructor(private readonly extra: Hash | undefined, private readonly onChunk: (bytes: number) => void) {
    super();
  }

  /** The hex digest of the extra algorithm (Glance's), if one was asked for. */
  extraDigest(): string | undefined {
    return this.extra?.digest('hex');
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: (err?: Error | null, data?: Buffer) => void): void {
    this.md5.update(chunk);
    this.sha256.update(chunk);
    this.extra?.update(chunk);
    this.bytes += chunk.length;
    this.onChunk(this.bytes);
    done(null, chunk);
  }
}

/**
 * The response of the GET, once its headers are in. `stalled.at` is set when the socket
 * brought nothing for the idle timeout (the request is then destroyed, and the response
 * ends in a plain "aborted" error that does not say why).
 */
function get(url: string, token: string, opts: DownloadImageOptions, stalled: { at?: number }): Promise<http.IncomingMessage> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = (u.protocol === 'https:' ? https : http).get(u, {
      ...(u.protocol === 'https:' ? opts.tlsOptions : {}),
      headers: { 'X-Auth-Token': token, Accept: 'application/octet-stream' },
      ...(opts.signal ? { signal: opts.signal } : {}),
    }, resolve);
    req.setTimeout(opts.idleTimeoutMs, () => {
      stalled.at = Date.now();
      req.destroy(new CloudError(`Glance GET ${u.pathname}: no data for ${(opts.idleTimeoutMs / 1000).toFixed(1)} s`));
    });
    req.once('error', reject);
  });
}

/** Reads a short error body (at most 4 KiB). */
async function shortBody(res: http.IncomingMessage): Promise<string> {
  let body = '';
  for await (const chunk of res) {
    if (body.length < 4096) body += String(chunk);
  }
  return body.slice(0, 4096);
}

/**
 * Streams the image's data into `dest`. Resolves with its size and hashes once every check
 * passed. Thrown: {@link CloudError} for an answer other than 200, a connection cut or
 * stalled, or data that does not match what Glance said; {@link AbortedError} when the
 * signal aborts. `dest` is only ever a whole, checked file.
 */
export async function downloadImageFile(
  url: string, token: string, dest: string, expected: ExpectedImageData, opts: DownloadImageOptions,
): Promise<DownloadedImageData> {
  const part = `${dest}.part`;
  const name = new URL(url).pathname;
  const stalled: { at?: number } = {};
  try {
    const res = await get(url, token, opts, stalled);
    if (res.statusCode !== 200) {
      throw new CloudError(`Glance GET ${name} answered ${res.statusCode ?? '?'}: ${(await shortBody(res)).trim().slice(0, 300)}`);
    }
    const lengthHeader = res.headers['content-length'];
    const total = expected.size ?? (lengthHeader !== undefined ? Number(lengthHeader) : 0);
    const algo = expected.hash && getHashes().includes(expected.hash.algo) ? expected.hash.algo : undefined;
    const hashing = new Hashing(algo ? createHash(algo) : undefined, (done) => opts.onProgress?.(done, total));
    // A connection that ends early makes the response emit 'aborted' and end: caught by the size check below too.
    await pipeline(res, hashing, createWriteStream(part, { mode: 0o644 }));
    if (!res.complete) throw new CloudError(`Glance GET ${name}: the connection ended after ${hashing.bytes} bytes`);
    const got = { size: hashing.bytes, md5: hashing.md5.digest('hex'), sha256: hashing.sha256.digest('hex') };
    if (expected.size !== null && got.size !== expected.size) {
      throw new CloudError(`Glance GET ${name}: ${got.size} bytes arrived, the image has ${expected.size}`);
    }
    if (expected.checksum && expected.checksum !== got.md5) throw new CloudError(`Glance GET ${name}: md5 ${got.md5} of the data is not the image's checksum ${expected.checksum}`);
    if (algo && expected.hash && hashing.extraDigest() !== expected.hash.value) {
      throw new CloudError(`Glance GET ${name}: ${algo} of the data is not the image's ${expected.hash.algo === 'md5' ? 'checksum' : 'os_hash_value'}`);
    }
    await rename(part, dest);
    return got;
  } catch (err) {
    await rm(part, { force: true });
    if (opts.signal?.aborted) throw new AbortedError(`download of ${name} aborted`, { cause: err });
    if (stalled.at !== undefined) throw new CloudError(`Glance GET ${name}: no data for ${(opts.idleTimeoutMs / 1000).toFixed(1)} s`, { cause: err });
    const e = coerceError(err);
    throw e instanceof CloudError ? e : new CloudError(`Glance GET ${name}: ${e.message}`, { cause: e });
  }
}
