/**
 * The builder's local image repository in `images-dir`: which builds are complete (their
 * `<id>.json` sidecar exists, written last), cleanup of incomplete leftovers, checksums,
 * and removal of every file of an id. Every id passed in must have been validated with
 * parseImageId; names from the directory are classified before use.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Logger } from '../../lib/log.js';
import { classifyEntry, imagePaths, isImageFormat } from '../../lib/images/image-file.js';

/** One built file of an image. */
export interface ImageFileInfo {
  format: string;
  size: number;
  sha256: string;
}

/** The `<id>.json` sidecar: the record of a complete local build. */
export interface ImageSidecar {
  'image-id': string;
  diskimage: string;
  builder: string;
  'builder-id': string;
  formats: string[];
  files: ImageFileInfo[];
  'built-at': string;
  /** The server's record creation time the build was asked with (epoch ms), when it sent one. */
  'build-created'?: number;
  /**
   * The installation id of the store whose server asked for the build, when it sent one: upload,
   * delete and build jobs of another installation for this id are refused.
   */
  installation?: string;
  /** Formats whose files were deleted after upload (`delete-after-upload`); `files` lists what remains. */
  'deleted-formats'?: string[];
}

/** Result of {@link ImageRepository.scan}. */
export interface ScanResult {
  /** Ids whose sidecar exists (complete builds), with the sidecar. */
  complete: Map<string, ImageSidecar>;
  /** Entries that were removed: incomplete builds and partial leftovers of complete ones. */
  removed: string[];
  /** Entries left alone because they are not image files (`lost+found`, stray files). */
  ignored: string[];
}

/** Streams a file through sha256; memory stays flat whatever the size. */
export async function sha256File(file: string): Promise<string> {
  const h = createHash('sha256');
  await pipeline(createReadStream(file, { highWaterMark: 1 << 20 }), h);
  return h.digest('hex');
}

export class ImageRepository {
  constructor(readonly dir: string, private readonly log: Logger) {}

  async ensureDir(): Promise<void> {
    await mkdir(this.dir, { recursive: true });
  }

  /**
   * Lists images-dir: complete builds are returned; anything belonging to an image id without
   * a sidecar (an interrupted build), and temporary files of complete builds, are removed.
   * Entries that are not image files are ignored, never fatal.
   */
  async scan(): Promise<ScanResult> {
    const entries = await readdir(this.dir, { withFileTypes: true });
    const classified = entries.map((e) => ({ name: e.name, entry: classifyEntry(e.name, e.isDirectory()) }));
    const withSidecar = new Set(classified.flatMap(({ entry }) => (entry.kind === 'sidecar' ? [entry.id] : [])));
    const result: ScanResult = { complete: new Map(), removed: [], ignored: [] };
    for (const { entry } of classified) {
      if (entry.kind !== 'sidecar') continue;
      try {
        result.complete.set(entry.id, await this.readSidecar(entry.id));
      } catch (err) {
        this.log.warn('unreadable sidecar: treating the build as incomplete', { imageId: entry.id, error: (err as Error).message });
        withSidecar.delete(entry.id);
      }
    }
    for (const { name, entry } of classified) {
      if (entry.kind === 'other') { result.ignored.push(name); continue; }
      const complete = result.complete.has(entry.id) && withSidecar.has(entry.id);
      if (!complete || entry.kind === 'partial') {
        await rm(path.join(this.dir, name), { recursive: true, force: true });
        result.removed.push(name);
      }
    }
    return result;
  }

  async readSidecar(id: string): Promise<ImageSidecar> {
    const data = JSON.parse(await readFile(imagePaths.sidecar(this.dir, id), 'utf8')) as ImageSidecar;
    if (data['image-id'] !== id || !Array.isArray(data.files)) throw new Error(`sidecar of ${id} does not describe it`);
    return data;
  }

  /** Writes the sidecar atomically (temp file + rename): the very last step of a build. */
  async writeSidecar(sidecar: ImageSidecar): Promise<void> {
    const file = imagePaths.sidecar(this.dir, sidecar['image-id']);
    const tmp = `${file}.tmp`;
    await writeFile(tmp, JSON.stringify(sidecar, null, 2) + '\n');
    await rename(tmp, file);
  }

  /** Formats of `<id>.<format>` files present on disk. */
  async formatsOnDisk(id: string): Promise<string[]> {
    const entries = await readdir(this.dir, { withFileTypes: true });
    return entries.flatMap((e) => {
      const c = classifyEntry(e.name, e.isDirectory());
      return c.kind === 'image' && c.id === id && e.isFile() ? [c.format] : [];
    });
  }

  /** Size and sha256 of `<id>.<format>`, and writes `<id>.<format>.sha256` in sha256sum format. */
  async checksum(id: string, format: string): Promise<ImageFileInfo> {
    const file = imagePaths.file(this.dir, id, format);
    const [{ size }, sha256] = await Promise.all([stat(file), sha256File(file)]);
    await writeFile(imagePaths.sha256(this.dir, id, format), `${sha256}  ${path.basename(file)}\n`);
    return { format, size, sha256 };
  }

  /** Removes every file and directory of an id (images, checksums, DIB's `.d`, sidecar last-but-first). */
  async removeAll(id: string): Promise<string[]> {
    // The sidecar goes first: an interrupted removal then looks incomplete and is finished at next start.
    await rm(imagePaths.sidecar(this.dir, id), { force: true });
    const entries = await readdir(this.dir, { withFileTypes: true });
    const removed: string[] = [];
    for (const e of entries) {
      const c = classifyEntry(e.name, e.isDirectory());
      if (c.kind !== 'other' && c.id === id) {
        await rm(path.join(this.dir, e.name), { recursive: true, force: true });
        removed.push(e.name);
      }
    }
    return removed;
  }

  /**
   * Removes the files of some formats of an id (`<id>.<format>` and its `.sha256`/`.md5`) and
   * returns the bytes they took; the sidecar and every other format stay.
   */
  async removeFormats(id: string, formats: readonly string[]): Promise<{ removed: string[]; freedBytes: number }> {
    const wanted = new Set(formats);
    const removed: string[] = [];
    let freedBytes = 0;
    for (const e of await readdir(this.dir, { withFileTypes: true })) {
      const c = classifyEntry(e.name, e.isDirectory());
      if ((c.kind !== 'image' && c.kind !== 'checksum') || c.id !== id || !wanted.has(c.format)) continue;
      const file = path.join(this.dir, e.name);
      const size = await stat(file).then((st) => st.size, () => 0);
      await rm(file, { force: true });
      freedBytes += size;
      removed.push(e.name);
    }
    return { removed, freedBytes };
  }

  /** True when `<id>.<format>` is a known format and present. */
  async hasFile(id: string, format: string): Promise<boolean> {
    if (!isImageFormat(format)) return false;
    try {
      return (await stat(imagePaths.file(this.dir, id, format))).isFile();
    } catch {
      return false;
    }
  }
}
