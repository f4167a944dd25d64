/**
 * Glance v2 images: create → streamed `PUT /v2/images/{id}/file` → poll until `active`,
 * plus get, list (following `next` links) and delete. The upload streams the file with
 * backpressure and a fixed Content-Length through a small ring of reused buffers, so memory
 * stays flat whatever the file size; any failure after the image record exists (including
 * an abort) deletes it again. The caller may tap the bytes as they are read (to hash them in
 * the same pass), and the active image's own hash (`os_hash_algo`/`os_hash_value`, else the md5
 * `checksum`) is returned.
 */
import { open, stat } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import { AbortedError, CloudError, coerceError } from '../../errors.js';
import { pollUntil } from '../../lifecycle.js';
import { silentLogger, type Logger } from '../../log.js';
import { callName, statusError } from './http-client.js';
import { JsonReader } from './json-reader.js';
import type { KeystoneSession } from './keystone.js';

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

/** Options of {@link GlanceClient}. */
export interface GlanceClientOptions {
  log?: Logger;
  /** Use this Glance URL instead of the catalog's `image` endpoint. */
  endpoint?: string;
  /** Between status polls after the upload (default 1 s). */
  pollIntervalMs?: number;
  /** How long the image may take to become `active` after its data is sent (default 30 min). */
  activeTimeoutMs?: number;
  /** Fail the upload when the socket makes no progress for this long (default 5 min). */
  uploadIdleTimeoutMs?: number;
  /** Size of each upload read/write (default 1 MiB); the upload holds four such buffers. */
  chunkBytes?: number;
  /** Images per page when listing (default 200). */
  listPageSize?: number;
}

/** Keys Glance owns; they cannot be used as image properties and are not returned as such. */
const CORE_KEYS = new Set([
  'id', 'name', 'status', 'visibility', 'protected', 'os_hidden', 'checksum', 'os_hash_algo', 'os_hash_value',
  'owner', 'size', 'virtual_size', 'min_ram', 'min_disk', 'disk_format', 'container_format', 'created_at',
  'updated_at', 'tags', 'self', 'file', 'schema', 'direct_url', 'locations', 'stores', 'member_status',
]);

const FAILED_STATUSES = new Set(['killed', 'deleted', 'pending_delete']);

/** Buffers in the upload ring: enough to keep the socket busy while the next chunk is read. */
const POOL = 4;

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

/** A Glance v2 client on top of a {@link KeystoneSession}. */
export class GlanceClient {
  /** Glance's base URL (no version suffix). */
  readonly baseUrl: string;
  private readonly log: Logger;
  private readonly pollIntervalMs: number;
  private readonly activeTimeoutMs: number;
  private readonly idleTimeoutMs: number;
  private readonly chunkBytes: number;
  private readonly listPageSize: number;
  /** The hash algorithm of the last active image seen (what this Glance hashes with). */
  private seenHashAlgo: string | undefined;

  /** Thrown: {@link CloudError} when the catalog has no image endpoint (and none is given). */
  constructor(private readonly session: KeystoneSession, opts: GlanceClientOptions = {}) {
    this.baseUrl = imageApiBase(opts.endpoint ?? session.endpoint('image'));
    this.log = (opts.log ?? silentLogger()).child({ component: 'glance', cloud: session.creds.cloudName });
    this.pollIntervalMs = opts.pollIntervalMs ?? 1000;
    this.activeTimeoutMs = opts.activeTimeoutMs ?? 30 * 60_000;
    this.idleTimeoutMs = opts.uploadIdleTimeoutMs ?? 5 * 60_000;
    this.chunkBytes = opts.chunkBytes ?? 1024 * 1024;
    this.listPageSize = opts.listPageSize ?? 200;
  }

  /**
   * The algorithms this Glance is expected to hash uploads with: the one of the last image it
   * made active, else `sha512` (Glance's default `hashing_algorithm` since Rocky).
   */
  expectedHashAlgos(): string[] {
    return [this.seenHashAlgo ?? 'sha512'];
  }

  /**
   * Creates a private image, streams the file into it and waits until it is `active`.
   * Thrown: {@link CloudError} when Glance refuses the image or its data, or the image ends
   * up `killed`/`deleted`, or does not become active in time; {@link AbortedError} when
   * `signal` aborts. In every case after the image was created, it is deleted first. A file
   * that cannot be read fails before anything is created, with the file system's error.
   */
  async uploadImage(req: UploadImageRequest): Promise<UploadedGlanceImage> {
    const { size } = await stat(req.filePath);
    for (const key of Object.keys(req.properties)) {
      if (CORE_KEYS.has(key) || key.startsWith('os_glance')) throw new CloudError(`image property '${key}' is reserved by Glance`);
    }
    if (req.signal?.aborted) throw aborted(req);
    const log = this.log.child({ image: req.name });
    const t0 = Date.now();
    // No signal on the create: an abort between Glance's commit and our reading the id would leak the image.
    const res = await this.session.request(`${this.baseUrl}/v2/images`, {
      method: 'POST',
      service: 'Glance',
      json: {
        ...req.properties,
        name: req.name,
        disk_format: req.diskFormat,
        container_format: req.containerFormat ?? 'bare',
        visibility: 'private',
      },
    });
    const id = JsonReader.parse(res).id('id');
    log.info('image created', { id, diskFormat: req.diskFormat, size });
    try {
      if (req.signal?.aborted) throw aborted(req);
      await this.putFile(id, req, size);
      const tSent = Date.now();
      const { image: img, hash } = await this.waitActive(id, req.signal);
      if (img.size !== size) throw new CloudError(`image ${id} is active with size ${img.size}, but ${size} bytes were sent`);
      log.info('image active', { id, size, uploadMs: tSent - t0, mbPerS: Math.round(size / 1e2 / Math.max(1, tSent - t0)) / 10, ...(hash ? { hashAlgo: hash.algo } : {}) });
      const out: UploadedGlanceImage = { id, name: img.name, size, status: img.status };
      if (img.checksum) out.checksum = img.checksum;
      if (hash) {
        out.hash = hash;
        this.seenHashAlgo = hash.algo;
      }
      return out;
    } catch (err) {
      const e = req.signal?.aborted ? aborted(req) : coerceError(err);
      log.warn('upload failed, deleting the image', { id, error: e.message });
      try {
        await this.deleteImage(id);
      } catch (delErr) {
        log.error('could not delete the failed image', { id, error: coerceError(delErr).message });
      }
      throw e;
    }
  }

  /** Deletes an image; one that is already gone is fine. Thrown: {@link CloudError}. */
  async deleteImage(id: string): Promise<void> {
    const res = await this.session.request(`${this.baseUrl}/v2/images/${encodeURIComponent(id)}`, { method: 'DELETE', service: 'Glance', expect: [204, 200, 404] });
    this.log.info(res.status === 404 ? 'image already gone' : 'image deleted', { id });
  }

  /**
   * The image, or `undefined` when Glance does not know it. Thrown: {@link CloudError}, also
   * for an answer that is not an image (or another image).
   */
  async getImage(id: string, signal?: AbortSignal): Promise<GlanceImage | undefined> {
    return (await this.fetchImage(id, signal))?.image;
  }

  /** {@link getImage} with Glance's hash of the data. */
  private async fetchImage(id: string, signal?: AbortSignal): Promise<{ image: GlanceImage; hash: GlanceHash | undefined } | undefined> {
    const res = await this.session.request(`${this.baseUrl}/v2/images/${encodeURIComponent(id)}`, { method: 'GET', service: 'Glance', expect: [200, 404], signal });
    if (res.status === 404) return undefined;
    const r = JsonReader.parse(res);
    const image = readGlanceImage(r);
    if (image.id !== id) r.fail('id', JSON.stringify(id));
    r.optStr('os_hash_algo');
    r.optStr('os_hash_value');
    return { image, hash: glanceHashOf(r.value) };
  }

  /**
   * Every image visible to the project matching the filter (all properties equal, and the
   * name when given), following Glance's `next` links. `signal` aborts the request in flight.
   * Thrown: {@link CloudError}.
   */
  async listImages(filter: { properties?: Record<string, string>; name?: string } = {}, signal?: AbortSignal): Promise<GlanceImage[]> {
    const q = new URLSearchParams({ limit: String(this.listPageSize) });
    if (filter.name !== undefined) q.set('name', filter.name);
    for (const [k, v] of Object.entries(filter.properties ?? {})) q.set(k, v);
    let next: string | undefined = `/v2/images?${q.toString()}`;
    const seen = new Set<string>();
    const out: GlanceImage[] = [];
    while (next && !seen.has(next)) {
      seen.add(next);
      const page = JsonReader.parse(await this.session.request(`${this.baseUrl}${next}`, { method: 'GET', service: 'Glance', signal }));
      for (const raw of page.list('images')) out.push(readGlanceImage(raw));
      next = page.optStr('next') ?? undefined;
      if (next !== undefined && !next.startsWith('/')) page.fail('next', 'a path starting with /');
    }
    // Glance filters on properties server-side; check again in case a deployment ignores one.
    return out.filter((img) =>
      (filter.name === undefined || img.name === filter.name)
      && Object.entries(filter.properties ?? {}).every(([k, v]) => img.properties[k] === v));
  }

  private async waitActive(id: string, signal?: AbortSignal): Promise<{ image: GlanceImage; hash: GlanceHash | undefined }> {
    let status = 'unknown';
    const active = await pollUntil(async () => {
      const got = await this.fetchImage(id, signal);
      if (!got) throw new CloudError(`image ${id} disappeared while waiting for it to become active`);
      const img = got.image;
      if (img.status === 'active') return got;
      if (FAILED_STATUSES.has(img.status)) throw new CloudError(`image ${id} went to status ${img.status} after its upload`);
      status = img.status;
      return undefined;
    }, { timeoutMs: this.activeTimeoutMs, intervalMs: this.pollIntervalMs, ...(signal ? { signal } : {}) });
    if (active) return active;
    throw new CloudError(`image ${id} still ${status} after ${this.activeTimeoutMs} ms`);
  }

  /** PUT the file; after a 401 (token expired meanwhile) re-authenticate and send it once more. */
  private async putFile(id: string, req: UploadImageRequest, size: number): Promise<void> {
    const url = `${this.baseUrl}/v2/images/${encodeURIComponent(id)}/file`;
    for (let attempt = 0; ; attempt++) {
      const token = attempt === 0 ? await this.session.token() : await this.session.refresh();
      const res = await this.streamFile(url, token, req, size);
      if (res.status === 204 || res.status === 200) return;
      if (res.status === 401 && attempt === 0) {
        this.log.info('upload answered 401, re-authenticating', { id });
        continue;
      }
      throw statusError({ ...res, call: callName('Glance', 'PUT', url) });
    }
  }

  /**
   * One PUT of the file. The body is read with positioned reads into a small ring of
   * reusable buffers; a buffer is refilled only once the socket has taken it (its write
   * callback ran). That is backpressure, and memory stays at `POOL × chunkBytes` whatever
   * the file size. It also costs half the CPU of `createReadStream().pipe()`, which allocates
   * (and page-faults) a fresh buffer per chunk: on the loopback Glance about 0.5 s instead of
   * 1 s per GiB, and with a 2-core machine that CPU is taken from Glance's hashing.
   */
  private async streamFile(url: string, token: string, req: UploadImageRequest, size: number): Promise<{ status: number; body: string }> {
    const fh = await open(req.filePath, 'r');
    const u = new URL(url);
    const put = (u.protocol === 'https:' ? https : http).request(u, {
      method: 'PUT',
      agent: false,
      headers: { 'X-Auth-Token': token, 'Content-Type': 'application/octet-stream', 'Content-Length': size },
      ...(u.protocol === 'https:' ? this.session.tlsOptions : {}),
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
      put.setTimeout(this.idleTimeoutMs, () => settle(new CloudError(`Glance PUT ${url}: no progress for ${this.idleTimeoutMs} ms`)));
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
          this.log.warn('onProgress callback threw', { error: coerceError(err).message });
        }
      };
      void (async () => {
        const ring = Array.from({ length: POOL }, () => Buffer.allocUnsafeSlow(this.chunkBytes));
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
}

function aborted(req: UploadImageRequest): AbortedError {
  return new AbortedError(`upload of image ${req.name} aborted`, { cause: req.signal?.reason });
}
