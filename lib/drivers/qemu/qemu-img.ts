/**
 * What the qemu driver asks of `qemu-img`: describe and check an image (refusing corrupt
 * files and files that would make QEMU read other files), convert one to qcow2 with progress,
 * and create a node's copy-on-write overlay.
 */
import { BadImageError } from '../../errors.js';
import { runCommand, type RunCommandOptions } from './run-command.js';

/** `qemu-img info --output=json` fields the driver reads. */
export interface ImageInfo {
  format: string;
  virtualSize: number;
  backingFile: string | undefined;
  dataFile: string | undefined;
}

/** Describes `file` read as `format`. Thrown: {@link BadImageError} when qemu-img cannot read it so. */
export async function imageInfo(qemuImg: string, file: string, format: string, opts: RunCommandOptions = {}): Promise<ImageInfo> {
  let out: string;
  try {
    out = (await runCommand(qemuImg, ['info', '--output=json', '-f', format, file], opts)).stdout;
  } catch (err) {
    if (opts.signal?.aborted) throw err;
    throw new BadImageError(`not a readable ${format} image: ${(err as Error).message}`, { cause: err });
  }
  const j = JSON.parse(out) as { format?: string; 'virtual-size'?: number; 'backing-filename'?: string; 'format-specific'?: { data?: { 'data-file'?: string } } };
  return {
    format: j.format ?? format,
    virtualSize: j['virtual-size'] ?? 0,
    backingFile: j['backing-filename'],
    dataFile: j['format-specific']?.data?.['data-file'],
  };
}

/**
 * Refuses a file that is not a self-contained, consistent qcow2: unreadable as qcow2, with a
 * backing or external data file (an upload must never make a VM read another file of the
 * host), or with corruptions reported by `qemu-img check` (leaked clusters are harmless).
 * Thrown: {@link BadImageError}.
 */
export async function checkQcow2(qemuImg: string, file: string, opts: RunCommandOptions = {}): Promise<ImageInfo> {
  const info = await imageInfo(qemuImg, file, 'qcow2', opts);
  if (info.backingFile !== undefined) throw new BadImageError(`qcow2 image has a backing file (${info.backingFile}); uploads must be self-contained`);
  if (info.dataFile !== undefined) throw new BadImageError(`qcow2 image has an external data file (${info.dataFile}); uploads must be self-contained`);
  if (info.virtualSize <= 0) throw new BadImageError('qcow2 image has no virtual size');
  try {
    await runCommand(qemuImg, ['check', '-q', '-f', 'qcow2', file], { ...opts, timeoutMs: opts.timeoutMs ?? 600_000 });
  } catch (err) {
    if (opts.signal?.aborted) throw err;
    // Exit 3: leaked clusters only (space, not data); anything else is a corruption or an error.
    if ((err as { exitCode?: number }).exitCode === 3) return info;
    throw new BadImageError(`qemu-img check found the qcow2 image damaged: ${(err as Error).message}`, { cause: err });
  }
  return info;
}

/**
 * Converts `src` (read as `format`) to a qcow2 at `dest`, reporting progress as a fraction 0..1.
 * Thrown: {@link BadImageError} when qemu-img cannot read the source; the abort reason when aborted.
 */
export async function convertToQcow2(qemuImg: string, src: string, format: string, dest: string, opts: RunCommandOptions & { onFraction?(f: number): void } = {}): Promise<void> {
  await imageInfo(qemuImg, src, format, opts);
  let buf = '';
  try {
    await runCommand(qemuImg, ['convert', '-p', '-f', format, '-O', 'qcow2', src, dest], {
      ...opts,
      timeoutMs: opts.timeoutMs ?? 3_600_000,
      onStdout: (c) => {
        buf = (buf + c).slice(-200);
        const all = [...buf.matchAll(/\((\d+(?:\.\d+)?)\/100%\)/g)];
        const last = all.at(-1);
        if (last) opts.onFraction?.(Number(last[1]) / 100);
      },
    });
  } catch (err) {
    if (opts.signal?.aborted) throw err;
    throw new BadImageError(`qemu-img could not convert the ${format} image to qcow2: ${(err as Error).message}`, { cause: err });
  }
}

/** Creates a qcow2 overlay at `overlay` whose backing file is the qcow2 `base` (absolute path). */
export async function createOverlay(qemuImg: string, base: string, overlay: string, opts: RunCommandOptions = {}): Promise<void> {
  await runCommand(qemuImg, ['create', '-q', '-f', 'qcow2', '-b', base, '-F', 'qcow2', overlay], opts);
}
