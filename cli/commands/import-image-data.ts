/**
 * `nodepool import-image-data FILE`: reads image data written by `export-image-data` (of this
 * store or another: SQLite → ZooKeeper), checks it field by field, and writes it into the
 * configured store, all or nothing, with the ids it had. Import never overwrites: a build or
 * upload id the store already has, or a store that handed out later ids of its own, refuses
 * the whole file. Pauses and build requests the store already has are kept as they are.
 *
 * Exit 0; 1 when the file is not valid image data, the import is refused, or the store cannot
 * import; 2 for a config error or a FILE that cannot be read.
 */
import { open } from 'node:fs/promises';
import { coerceError, CommandFailure, ImageDataConflictError, InvalidImageDataError } from '../../lib/errors.js';
import { IMAGE_DATA_MAX_BYTES, type ImageData, type ImportCounts } from '../../lib/store/image-data.js';
import { parseImageData } from '../../lib/store/image-data-check.js';
import { requireImageData } from './export-image-data.js';
import {
  commandConfig, EXIT, readServerLiveness, runCommand, withStore, type CommandContext, type CommandResult,
} from './shared.js';

/** Options of {@link importImageData}. */
export interface ImportImageDataOptions extends CommandContext {
  /** What to read (any readable file, e.g. /dev/stdin). */
  file: string;
  /** Largest file read (default {@link IMAGE_DATA_MAX_BYTES}). */
  maxBytes?: number;
}

/** Imports the image records of `opts.file` into the configured store. */
export function importImageData(opts: ImportImageDataOptions): Promise<CommandResult> {
  return runCommand(async (out) => {
    const config = commandConfig(opts);
    // The file is read and checked in full before the store is opened.
    const data = await readImageDataFile(opts.file, opts.maxBytes ?? IMAGE_DATA_MAX_BYTES);
    const counts = await withStore(config, async (store) => {
      const importer = requireImageData(store, config, 'import-image-data');
      if ((await readServerLiveness(store, (opts.now ?? Date.now)())).alive) {
        out.err('warning: a nodepool-server is running against this store; stop it while importing, '
          + 'or what it writes meanwhile may refuse the import\n');
      }
      try {
        return await importer.importImageData(data);
      } catch (err) {
        if (err instanceof ImageDataConflictError) throw new CommandFailure(EXIT.failed, `Import refused, nothing imported: ${err.message}`);
        throw err;
      }
    });
    out.out(`${importedText(counts)} from ${opts.file} (exported ${new Date(data.exported).toISOString()})\n`);
    if (counts.pausesKept + counts.buildRequestsKept > 0) {
      out.out(`Kept ${counts.pausesKept} pause(s) and ${counts.buildRequestsKept} build request(s) the store already had for the same diskimages\n`);
    }
    return EXIT.ok;
  });
}

/** `Imported 3 build(s), …; raised 2 sequence counter(s)`. */
export function importedText(c: ImportCounts): string {
  return `Imported ${c.builds} build(s), ${c.uploads} upload(s), ${c.pauses} pause(s), ${c.buildRequests} build request(s); `
    + `raised ${c.sequencesRaised} sequence counter(s)`;
}

/**
 * Reads, parses and validates an image data file of at most `maxBytes`.
 * Thrown: CommandFailure: exit 2 when it cannot be read, exit 1 when it is too large, not
 * UTF-8 JSON, or not valid image data (every problem with its path).
 */
export async function readImageDataFile(file: string, maxBytes: number): Promise<ImageData> {
  const bytes = await readBounded(file, maxBytes);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new CommandFailure(EXIT.failed, `${file} is not image data: not UTF-8 text`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new CommandFailure(EXIT.failed, `${file} is not image data: not JSON (${coerceError(err).message})`);
  }
  try {
    return parseImageData(value);
  } catch (err) {
    if (err instanceof InvalidImageDataError) throw new CommandFailure(EXIT.failed, `${file}: ${err.message}\nNothing was imported.`);
    throw err;
  }
}

/** The file's bytes, read in chunks so that no more than `maxBytes` + 1 are ever held. */
async function readBounded(file: string, maxBytes: number): Promise<Buffer> {
  let fh;
  try {
    fh = await open(file, 'r');
  } catch (err) {
    throw new CommandFailure(EXIT.usage, `Cannot read ${file}: ${coerceError(err).message}`);
  }
  try {
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.allocUnsafe(Math.min(1 << 20, maxBytes + 1 - total));
      const { bytesRead } = await fh.read(chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      chunks.push(chunk.subarray(0, bytesRead));
      total += bytesRead;
      if (total > maxBytes) {
        throw new CommandFailure(EXIT.failed, `${file} is larger than ${maxBytes} bytes, more than an image data file may be; nothing was imported`);
      }
    }
    return Buffer.concat(chunks, total);
  } catch (err) {
    if (err instanceof CommandFailure) throw err;
    throw new CommandFailure(EXIT.usage, `Cannot read ${file}: ${coerceError(err).message}`);
  } finally {
    await fh.close();
  }
}
