/**
 * `nodepool export-image-data FILE [--force]`: writes the state store's image records
 * (builds, uploads, pauses, build requests and the id sequences) to FILE as versioned JSON
 * (lib/store/image-data.ts), for a backup or a move to another store with
 * `import-image-data`. Nodes and node requests are not image data and are not written.
 *
 * FILE is written to a temporary file beside it (mode 0600), synced, then put in place in one
 * step, so a reader never sees half a file. An existing FILE is refused unless `--force`.
 * Exit 0; 1 when FILE exists, cannot be written, or the store cannot export; 2 for a config error.
 */
import { randomBytes } from 'node:crypto';
import { link, lstat, open, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../../lib/config/schema.js';
import { coerceError, CommandFailure } from '../../lib/errors.js';
import { hasImageData, IMAGE_DATA_MAX_BYTES, type ImageData, type ImageDataStore } from '../../lib/store/image-data.js';
import type { CorruptRecord } from '../../lib/store/corrupt.js';
import type { Store } from '../../lib/store/store.js';
import {
  commandConfig, EXIT, readServerLiveness, runCommand, withStore, type CommandContext, type CommandResult,
} from './shared.js';

/** Options of {@link exportImageData}. */
export interface ExportImageDataOptions extends CommandContext {
  /** Where to write. */
  file: string;
  /** Replace FILE when it exists. */
  force?: boolean;
}

/** The store with its image data capability. Thrown: CommandFailure (exit 1) when it has none. */
export function requireImageData(store: Store, config: Pick<Config, 'zookeeperServers'>, command: string): Store & ImageDataStore {
  if (hasImageData(store)) return store;
  const kind = config.zookeeperServers.length > 0 ? 'ZooKeeper' : 'configured';
  throw new CommandFailure(EXIT.failed, `The ${kind} state store cannot export or import image data (yet); ${command} needs a store that can`);
}

/** `3 builds, 3 uploads, …` for messages. */
export function describeImageData(data: Pick<ImageData, 'builds' | 'uploads' | 'pauses' | 'buildRequests' | 'sequences'>): string {
  const sequences = Object.keys(data.sequences.build).length + 1;
  return `${data.builds.length} build(s), ${data.uploads.length} upload(s), ${data.pauses.length} pause(s), `
    + `${data.buildRequests.length} build request(s), ${sequences} sequence counter(s)`;
}

/** Exports the image records to `opts.file`. */
export function exportImageData(opts: ExportImageDataOptions): Promise<CommandResult> {
  return runCommand(async (out) => {
    const config = commandConfig(opts);
    // Checked before the export as a courtesy; the final link below is what makes it safe.
    if (!opts.force && await exists(opts.file)) throw refuseExisting(opts.file);
    const { data, serverAlive, corrupt } = await withStore(config, async (store) => {
      const exporter = requireImageData(store, config, 'export-image-data');
      const exported = await exporter.exportImageData();
      return {
        data: exported, serverAlive: (await readServerLiveness(store, (opts.now ?? Date.now)())).alive,
        corrupt: await store.listCorrupt({ kinds: ['build', 'upload', 'pause', 'build-request'] }),
      };
    }, { readOnly: true });
    const text = `${JSON.stringify(data, null, 2)}\n`;
    const bytes = Buffer.byteLength(text);
    if (bytes > IMAGE_DATA_MAX_BYTES) {
      throw new CommandFailure(EXIT.failed, `The image data is ${bytes} bytes, more than import-image-data reads (${IMAGE_DATA_MAX_BYTES}); nothing written`);
    }
    await writeAtomically(opts.file, text, opts.force ?? false);
    out.out(`Exported ${describeImageData(data)} to ${opts.file}\n`);
    for (const line of skippedLines(corrupt)) out.err(`${line}\n`);
    if (serverAlive) {
      out.err('warning: a nodepool-server is running; what it records from now on is not in this file '
        + '(stop it first when moving to another store)\n');
    }
    return EXIT.ok;
  });
}

/**
 * What the export left out: each corrupt build (with its uploads), upload and build request;
 * a corrupt pause is written as a pause (its existence is the intent) and said so.
 */
export function skippedLines(corrupt: readonly CorruptRecord[]): string[] {
  return corrupt.map((c) => (c.kind === 'pause'
    ? `warning: pause ${c.id} is corrupt (${c.reason}); written as a pause`
    : `warning: skipped corrupt ${c.kind} ${c.id}${c.kind === 'build' ? ' (and its uploads)' : ''}: ${c.reason}`));
}

function refuseExisting(file: string): CommandFailure {
  return new CommandFailure(EXIT.failed, `${file} already exists; pass --force to replace it`);
}

async function exists(file: string): Promise<boolean> {
  try {
    await lstat(file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw new CommandFailure(EXIT.failed, `Cannot write ${file}: ${coerceError(err).message}`);
  }
}

/**
 * Writes `text` to a new temporary file (mode 0600) beside `file`, syncs it, and puts it in
 * place: a rename when replacing is allowed, otherwise a hard link, which fails when `file`
 * appeared meanwhile. The temporary file is removed whatever happens.
 */
async function writeAtomically(file: string, text: string, replace: boolean): Promise<void> {
  const dir = path.dirname(path.resolve(file));
  const tmp = path.join(dir, `.${path.basename(file)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  let created = false;
  let placing = false;
  try {
    const fh = await open(tmp, 'wx', 0o600);
    created = true;
    try {
      await fh.writeFile(text, 'utf8');
      await fh.sync();
    } finally {
      await fh.close();
    }
    placing = true;
    if (replace) await rename(tmp, file);
    else await linkOrRename(tmp, file);
    await syncDir(dir);
  } catch (err) {
    if (placing && !replace && (err as NodeJS.ErrnoException).code === 'EEXIST') throw refuseExisting(file);
    throw new CommandFailure(EXIT.failed, `Cannot write ${file}: ${coerceError(err).message}`);
  } finally {
    if (created) await rm(tmp, { force: true });
  }
}

/**
 * Puts `tmp` in place as `file` unless `file` exists (EEXIST). A hard link does both in one
 * step; where the filesystem has no hard links, a check and a rename come close.
 */
async function linkOrRename(tmp: string, file: string): Promise<void> {
  try {
    await link(tmp, file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP') throw err;
    if (await exists(file)) throw Object.assign(new Error(`${file} exists`), { code: 'EEXIST' });
    await rename(tmp, file);
  }
}

/** Makes the new directory entry durable; best effort (some filesystems refuse). */
async function syncDir(dir: string): Promise<void> {
  try {
    const fh = await open(dir, 'r');
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
  } catch {
    // Not every filesystem lets a directory be synced; the file itself is.
  }
}
