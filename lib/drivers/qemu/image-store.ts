/**
 * The qemu driver's image capability: uploads are qcow2 files in the provider's `image-dir`,
 * `<id>.qcow2` beside `<id>.json` (name, properties, creation time). An upload streams the
 * build's file in (or converts it with qemu-img when it is not qcow2) under a hidden temporary
 * name, checks the copy with qemu-img, and renames it into place: a listed image is always
 * complete. The builder and the launchers must see the same `image-dir` (one host, or a
 * shared filesystem).
 */
import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { AbortedError, BadImageError, CloudError, coerceError } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { ImageService, ListedImage, UploadedImage, UploadRequest } from '../contract/image-service.js';
import { checkQcow2, convertToQcow2 } from './qemu-img.js';

/** What `<id>.json` holds. */
interface ImageMeta {
  name: string;
  properties: Record<string, string>;
  created: number;
  format: 'qcow2';
}

/** Options of {@link QemuImageService}. */
export interface QemuImageServiceOptions {
  imageDir: string;
  qemuImg?: string;
  log: Logger;
}

const ID_RE = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** Whether `id` can name an image file (no path separators, not hidden). */
export function validImageId(id: string): boolean {
  return ID_RE.test(id) && !id.includes('..') && id.length <= 200;
}

/** Images in one directory of the launcher's host (see the module comment). */
export class QemuImageService implements ImageService {
  readonly imageDir: string;
  private readonly qemuImg: string;
  private readonly log: Logger;

  constructor(opts: QemuImageServiceOptions) {
    this.imageDir = opts.imageDir;
    this.qemuImg = opts.qemuImg ?? 'qemu-img';
    this.log = opts.log;
  }

  /** Path of an upload's qcow2 (whether or not it exists). Thrown: Error for an id that cannot be ours. */
  imagePath(id: string): string {
    if (!validImageId(id)) throw new Error(`not a qemu image id: ${JSON.stringify(id)}`);
    return path.join(this.imageDir, `${id}.qcow2`);
  }

  /**
   * Copies (qcow2) or converts (other formats) the file into image-dir and checks the result.
   * Thrown: `CloudError` with status 400 for a file qemu-img refuses (corrupt, not of its
   * format, with a backing file), `CloudError` for I/O failures, `AbortedError` when aborted;
   * nothing is left in image-dir either way. A qcow2 is read once: its chunks go to `onData`
   * as they are copied (a converted file's bytes are qemu-img's, so `onData` is not called).
   */
  async upload(req: UploadRequest): Promise<UploadedImage> {
    const slug = req.name.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^[._-]+/, '').slice(0, 120) || 'image';
    const id = `${slug}-${randomBytes(4).toString('hex')}`;
    const final = this.imagePath(id);
    const tmp = path.join(this.imageDir, `.${id}.qcow2.part`);
    const metaFile = path.join(this.imageDir, `${id}.json`);
    const started = Date.now();
    try {
      req.signal?.throwIfAborted();
      await mkdir(this.imageDir, { recursive: true });
      if (req.format === 'qcow2') await this.copy(req, tmp);
      else {
        const total = (await stat(req.filePath)).size;
        await convertToQcow2(this.qemuImg, req.filePath, req.format, tmp, {
          ...(req.signal ? { signal: req.signal } : {}),
          onFraction: (f) => req.onProgress?.(Math.round(f * total), total),
        });
      }
      await checkQcow2(this.qemuImg, tmp, req.signal ? { signal: req.signal } : {});
      const meta: ImageMeta = { name: req.name, properties: { ...req.properties }, created: Date.now(), format: 'qcow2' };
      await writeFile(`${metaFile}.part`, JSON.stringify(meta, null, 2), { mode: 0o644 });
      await rename(`${metaFile}.part`, metaFile);
      req.signal?.throwIfAborted();
      await rename(tmp, final);
    } catch (err) {
      await Promise.all([tmp, metaFile, `${metaFile}.part`, final].map((f) => rm(f, { force: true })));
      if (req.signal?.aborted) throw new AbortedError(`upload of image ${req.name} aborted`, { cause: req.signal.reason });
      const e = coerceError(err);
      if (e instanceof BadImageError) throw new CloudError(`image ${req.name} refused: ${e.message}`, { status: 400, cause: e });
      throw new CloudError(`upload of image ${req.name} into ${this.imageDir} failed: ${e.message}`, { cause: e });
    }
    this.log.info('image stored', { externalId: id, name: req.name, durationMs: Date.now() - started });
    return { externalId: id, externalName: req.name };
  }

  /** Streams the qcow2 into `dest`, handing each chunk to `onData` and reporting progress; aborting stops the stream. */
  private async copy(req: UploadRequest, dest: string): Promise<void> {
    const total = (await stat(req.filePath)).size;
    let sent = 0;
    const progress = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        try {
          // The builder hashes the bytes here, in the same pass (verified bytes); it throws when the file changed.
          req.onData?.(chunk, sent);
        } catch (err) {
          cb(coerceError(err));
          return;
        }
        sent += chunk.length;
        req.onProgress?.(sent, total);
        cb(null, chunk);
      },
    });
    await pipeline(createReadStream(req.filePath), progress, createWriteStream(dest, { mode: 0o644 }), req.signal ? { signal: req.signal } : {});
  }

  /** Removes an upload (already gone is success). Thrown: CloudError when a file cannot be removed. */
  async delete(externalId: string): Promise<void> {
    if (!validImageId(externalId)) return;
    try {
      await rm(this.imagePath(externalId), { force: true });
      await rm(path.join(this.imageDir, `${externalId}.json`), { force: true });
    } catch (err) {
      throw new CloudError(`cannot delete image ${externalId} in ${this.imageDir}: ${coerceError(err).message}`, { cause: err });
    }
  }

  /** The complete uploads in image-dir, optionally those whose properties all match. */
  async list(filter: { properties?: Record<string, string> } = {}, signal?: AbortSignal): Promise<ListedImage[]> {
    let names: string[];
    try {
      names = await readdir(this.imageDir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw new CloudError(`cannot list images in ${this.imageDir}: ${coerceError(err).message}`, { cause: err });
    }
    const out: ListedImage[] = [];
    for (const file of names.sort()) {
      signal?.throwIfAborted();
      if (!file.endsWith('.qcow2')) continue;
      const id = file.slice(0, -'.qcow2'.length);
      if (!validImageId(id)) continue;
      const meta = await this.readMeta(id);
      const want = filter.properties ?? {};
      if (Object.entries(want).some(([k, v]) => meta.properties[k] !== v)) continue;
      out.push({ externalId: id, name: meta.name, status: 'active', properties: meta.properties });
    }
    return out;
  }

  private async readMeta(id: string): Promise<ImageMeta> {
    try {
      return JSON.parse(await readFile(path.join(this.imageDir, `${id}.json`), 'utf8')) as ImageMeta;
    } catch {
      // A qcow2 someone put here by hand: listed, with no properties (an alien image).
      return { name: id, properties: {}, created: 0, format: 'qcow2' };
    }
  }
}
