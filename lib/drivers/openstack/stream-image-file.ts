/**
 * One streamed `PUT` of an image file to Glance, with backpressure and a fixed Content-Length
 * through a small ring of reused buffers, plus the upload request it serves.
 */
import { open } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import { AbortedError, CloudError, coerceError } from '../../errors.js';
import type { Logger } from '../../log.js';

/** Arguments of {@link GlanceClient.uploadImage}. */
export interface UploadImageRequest {
  name: string;
  /** Glance `disk_format`: qcow2, raw, vhd, … */
  diskFormat: string;
  /** Glance `container_format`, `bare` by default. */
  containerFormat?: string;
  /** Stored as string image properties (e.g. `nodepool_build_id`). */
  properties: Record<string, string>;
  filePath: string;
  /** Called as bytes are handed to the socket. */
  onProgress?(sentBytes: number, totalBytes: number): void;
  /** Aborting destroys the upload and deletes the image. */
  signal?: AbortSignal;
  /**
   * Each chunk of the file as read, in order, before it is written to the socket, with its
   * offset (0 again when the PUT is sent once more after a 401). Valid only during the call.
   * An error it throws fails the upload as it is (the image is deleted).
   */
  onData?(chunk: Uint8Array, offset: number): void;
}

/** Buffers in the upload ring: enough to keep the socket busy while the next chunk is read. */
const POOL = 4;

/** What {@link streamImageFile} needs from its {@link GlanceClient}. */
export interface StreamImageFileOptions {
  log: Logger;
  /** TLS options of the session, used for an https URL. */
  tlsOptions: https.RequestOptions;
  /** Fail when the socket makes no progress for this long. */
  idleTimeoutMs: number;
  /** Size of each read/write. */
  chunkBytes: number;
}

/**
 * One PUT of the file. The body is read with positioned reads into a small ring of
 * reusable buffers; a buffer is refilled only once the socket has taken it (its write
 * callback ran). That is backpressure, and memory stays at `POOL × chunkBytes` whatever
 * the file size. It also costs half the CPU of `createReadStream().pipe()`, which allocates
 * (and page-faults) a fresh buffer per chunk: on the loopback Glance about 0.5 s instead of
 * 1 s per GiB, and with a 2-core machine that CPU is taken from Glance's hashing.
 */
export async function streamImageFile(
  opts: StreamImageFileOptions, url: string, token: string, req: UploadImageRequest, size: number,
): Promise<{ status: number; body: string }> {
  const fh = await open(req.filePath, 'r');
  const u = new URL(url);
  const put = (u.protocol === 'https:' ? https : http).request(u, {
    method: 'PUT',
    agent: false,
    headers: { 'X-Auth-Token': token, 'Content-Type': 'application/octet-stream', 'Content-Length': size },
    ...(u.protocol === 'https:' ? opts.tlsOptions : {}),
  });
  let settled = false;
  let stop = (): void => {};
  const stopped = new Promise<void>((r) => (stop = r));
  let sent = 0;
  const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
    const settle = (err: Error | undefined, value?: { status: number; body: string }): void => {
      if (settled) return;
      settled = true;
      stop();
      req.signal?.removeEventListener('abort', onAbort);
      // Also after an early error answer: stop sending the rest of the body.
      put.destroy();
      if (err) {
        reject(err);
      } else {
        resolve(value as { status: number; body: string });
      }
    };
    const onAbort = (): void => settle(aborted(req));
    if (req.signal?.aborted) return onAbort();
    req.signal?.addEventListener('abort', onAbort, { once: true });
    put.setTimeout(opts.idleTimeoutMs, () => settle(new CloudError(`Glance PUT ${url}: no progress for ${opts.idleTimeoutMs} ms`)));
    // An early error answer (e.g. 413) may arrive before the body is sent and the server
    // then drops the connection: the answer wins over the write error.
    let early: { status: number; chunks: Buffer[] } | undefined;
    const answered = (): { status: number; body: string } | undefined =>
      early && { status: early.status, body: Buffer.concat(early.chunks).toString('utf8') };
    put.on('error', (err) => {
      const a = answered();
      if (a && a.status >= 300) return settle(undefined, a);
      settle(new CloudError(`Glance PUT ${url} failed after ${sent} of ${size} bytes: ${err.message}`, { cause: err }));
    });
    put.on('response', (res) => {
      const a = { status: res.statusCode ?? 0, chunks: [] as Buffer[] };
      early = a;
      res.on('data', (c: Buffer) => a.chunks.length < 64 && a.chunks.push(c));
      res.on('end', () => settle(undefined, answered()));
      res.on('error', (err) => settle(new CloudError(`Glance PUT ${url}: reading the answer failed: ${err.message}`, { cause: err })));
    });
    const progress = (n: number): void => {
      sent += n;
      try {
        req.onProgress?.(sent, size);
      } catch (err) {
        opts.log.warn('onProgress callback threw', { error: coerceError(err).message });
      }
    };
    void (async () => {
      const ring = Array.from({ length: POOL }, () => Buffer.allocUnsafeSlow(opts.chunkBytes));
      const inFlight: Array<Promise<void> | undefined> = [];
      for (let pos = 0, i = 0; pos < size; i++) {
        const k = i % POOL;
        await Promise.race([inFlight[k], stopped]);
        if (settled) return;
        const buf = ring[k] as Buffer;
        const { bytesRead } = await fh.read(buf, 0, Math.min(buf.length, size - pos), pos);
        if (settled) return;
        if (bytesRead === 0) throw new CloudError(`${req.filePath} shrank to ${pos} bytes during the upload (expected ${size})`);
        if (req.onData) {
          try {
            req.onData(buf.subarray(0, bytesRead), pos);
          } catch (err) {
            // The caller's verdict (e.g. the file changed on disk), passed on as it is.
            return settle(coerceError(err));
          }
        }
        pos += bytesRead;
        // Write errors also arrive as 'error' on the request; the callback only frees the buffer.
        inFlight[k] = new Promise<void>((done) => put.write(buf.subarray(0, bytesRead), () => {
          progress(bytesRead);
          done();
        }));
      }
      put.end();
    })().catch((err: unknown) => {
      const e = coerceError(err);
      settle(e instanceof CloudError ? e : new CloudError(`reading ${req.filePath} failed: ${e.message}`, { cause: e }));
    });
  });
  try {
    return await answer;
  } finally {
    await fh.close();
  }
}

/** The error of an upload that `req.signal` aborted. */
export function aborted(req: UploadImageRequest): AbortedError {
  return new AbortedError(`upload of image ${req.name} aborted`, { cause: req.signal?.reason });
}
