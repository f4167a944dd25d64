/**
 * Glance v2 images: create → streamed `PUT /v2/images/{id}/file` → poll until `active`,
 * plus get, list (following `next` links) and delete. The upload streams the file with
 * backpressure and a fixed Content-Length through a small ring of reused buffers, so memory
 * stays flat whatever the file size; any failure after the image record exists (including
 * an abort) deletes it again. The caller may tap the bytes as they are read (to hash them in
 * the same pass), and the active image's own hash (`os_hash_algo`/`os_hash_value`, else the md5
 * `checksum`) is returned.
 */
import { stat } from 'node:fs/promises';
import { CloudError, coerceError } from '../../errors.js';
import { pollUntil } from '../../lifecycle.js';
import { silentLogger, type Logger } from '../../log.js';
import { CORE_KEYS, glanceHashOf, imageApiBase, readGlanceImage, type GlanceHash, type GlanceImage, type UploadedGlanceImage } from './glance-image.js';
import { callName, statusError } from './http-client.js';
import { JsonReader } from './json-reader.js';
import type { KeystoneSession } from './keystone.js';
import { aborted, streamImageFile, type UploadImageRequest } from './stream-image-file.js';
import { downloadImageFile, type DownloadedImageData } from './download-image-file.js';

export { glanceHashOf, imageApiBase, readGlanceImage, toGlanceImage } from './glance-image.js';
export type { GlanceHash, GlanceImage, UploadedGlanceImage } from './glance-image.js';
export type { UploadImageRequest } from './stream-image-file.js';

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

const FAILED_STATUSES = new Set(['killed', 'deleted', 'pending_delete']);

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

  /**
   * Streams an active image's data into `dest` (download-image-file.ts), checked against
   * Glance's size and hashes. Thrown: {@link CloudError} (also when the image is not active),
   * {@link AbortedError} when `opts.signal` aborts; `dest` is then not made.
   */
  async downloadImage(id: string, dest: string, opts: { signal?: AbortSignal; onProgress?: (done: number, total: number) => void } = {}): Promise<DownloadedImageData> {
    const got = await this.fetchImage(id, opts.signal);
    if (!got) throw new CloudError(`image ${id} does not exist`);
    if (got.image.status !== 'active') throw new CloudError(`image ${id} is ${got.image.status}, not active: it has no data to download`);
    const url = `${this.baseUrl}/v2/images/${encodeURIComponent(id)}/file`;
    const t0 = Date.now();
    const out = await downloadImageFile(url, await this.session.token(), dest, { size: got.image.size, checksum: got.image.checksum ?? undefined, hash: got.hash }, {
      tlsOptions: this.session.tlsOptions, idleTimeoutMs: this.idleTimeoutMs, signal: opts.signal, onProgress: opts.onProgress,
    });
    this.log.info('image downloaded', { id, size: out.size, ms: Date.now() - t0 });
    return out;
  }

  /**
   * Waits until the image is `active` (at most `timeoutMs`, default the client's). Thrown:
   * {@link CloudError} when it disappears, fails (`killed`, `deleted`) or is still not active
   * then (naming its status).
   */
  async waitActive(id: string, signal?: AbortSignal, timeoutMs = this.activeTimeoutMs): Promise<{ image: GlanceImage; hash: GlanceHash | undefined }> {
    let status = 'unknown';
    const active = await pollUntil(async () => {
      const got = await this.fetchImage(id, signal);
      if (!got) throw new CloudError(`image ${id} disappeared while waiting for it to become active`);
      const img = got.image;
      if (img.status === 'active') return got;
      if (FAILED_STATUSES.has(img.status)) throw new CloudError(`image ${id} went to status ${img.status} before it was active`);
      status = img.status;
      return undefined;
    }, { timeoutMs, intervalMs: this.pollIntervalMs, ...(signal ? { signal } : {}) });
    if (active) return active;
    throw new CloudError(`image ${id} still ${status} after ${timeoutMs} ms`);
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

  /** One PUT of the file, streamed by {@link streamImageFile}. */
  private streamFile(url: string, token: string, req: UploadImageRequest, size: number): Promise<{ status: number; body: string }> {
    return streamImageFile({ log: this.log, tlsOptions: this.session.tlsOptions, idleTimeoutMs: this.idleTimeoutMs, chunkBytes: this.chunkBytes }, url, token, req, size);
  }
}
