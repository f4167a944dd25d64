/**
 * Format conversion with `qemu-img convert` into a temp file, renamed into place when done,
 * so a half-converted file never looks like an image. Progress comes from qemu-img's `-p`.
 */
import { rm, rename } from 'node:fs/promises';
import { ConversionError } from '../../lib/errors.js';
import { convertArgs } from '../../lib/images/formats.js';
import { runCommand } from '../../lib/run-command.js';
import { BUILDER_DEFAULTS } from './builder-defaults.js';

/** Options of {@link convertImage}. */
export interface ConvertOptions {
  qemuImg?: string;
  signal?: AbortSignal;
  onProgress?(percent: number): void;
}

export async function convertImage(src: string, srcFormat: string, dst: string, dstFormat: string, opts: ConvertOptions = {}): Promise<void> {
  const tmp = `${dst}.converting`;
  let stderr = '';
  try {
    const r = await runCommand([opts.qemuImg ?? BUILDER_DEFAULTS.qemuImg, ...convertArgs(src, srcFormat, tmp, dstFormat)], {
      signal: opts.signal, processGroup: true, killGraceMs: BUILDER_DEFAULTS.helperKillGraceMs,
      onLine(line) {
        // `-p` prints "    (12.34/100%)" with carriage returns; readline splits on \r too.
        for (const m of line.matchAll(/\((\d+(?:\.\d+)?)\/100%\)/g)) opts.onProgress?.(Number(m[1]));
        if (!/\/100%\)/.test(line) && line.trim()) stderr += line.trim() + ' ';
      },
    });
    if (r.aborted) throw new ConversionError(`conversion to ${dstFormat} aborted`);
    if (r.exitCode !== 0) throw new ConversionError(`qemu-img convert ${srcFormat} → ${dstFormat} failed (exit ${r.exitCode ?? r.signal}): ${stderr.trim()}`);
    await rename(tmp, dst);
  } catch (err) {
    await rm(tmp, { force: true });
    if (err instanceof ConversionError) throw err;
    throw new ConversionError(`qemu-img convert ${srcFormat} → ${dstFormat} failed: ${(err as Error).message}`, { cause: err });
  }
}
