/**
 * disk-image-create's argv and environment for one build (pure).
 * Flags as Nodepool's builder: `-x -t <formats> --checksum --no-tmpfs -o <images-dir>/<id>`.
 */
import type { DiskimageConfig } from '../../lib/config/schema.js';

/** Inputs of {@link dibCommand} besides the diskimage. */
export interface DibCommandInput {
  /** `<images-dir>/<id>`: DIB appends `.<format>`. */
  outBase: string;
  formats: readonly string[];
  elementsDir?: string | undefined;
  /** The build's private TMPDIR (DIB's dib_build.* / dib_image.* go there, so cleanup is scoped). */
  tmpDir: string;
  /** The build's image cache (DIB shares apt caches through it; one per build avoids lock clashes). */
  imageCacheDir: string;
  /** The builder's own environment, the base that DIB's variables are added to. */
  baseEnv: Readonly<Record<string, string | undefined>>;
}

/** The command to run: argv[0] is the program; no shell is involved. */
export interface DibCommand {
  argv: string[];
  env: Record<string, string>;
}

export function dibCommand(diskimage: DiskimageConfig, input: DibCommandInput): DibCommand {
  const argv = [diskimage.dibCmd, '-x', '-t', input.formats.join(','), '--checksum', '--no-tmpfs'];
  if (diskimage.qemuImgOptions !== undefined && input.formats.includes('qcow2')) {
    argv.push('--qemu-img-options', diskimage.qemuImgOptions);
  }
  argv.push('--image-cache', input.imageCacheDir, '-o', input.outBase, ...diskimage.elements);
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(input.baseEnv)) if (v !== undefined) env[k] = v;
  env.DIB_IMAGE_NAME = diskimage.name;
  env.DIB_IMAGE_FILENAME = input.outBase;
  env.DIB_RELEASE = diskimage.release ?? '';
  env.TMPDIR = input.tmpDir;
  if (input.elementsDir !== undefined) env.ELEMENTS_PATH = input.elementsDir;
  // The diskimage's env-vars win over everything above, as in Nodepool.
  Object.assign(env, diskimage.envVars);
  return { argv, env };
}

/** DIB phases in run order, for progress reporting. */
export const DIB_PHASES = [
  'root', 'extra-data', 'pre-install', 'install', 'post-install', 'post-root',
  'block-device', 'pre-finalise', 'finalise', 'cleanup', 'convert',
] as const;

/**
 * Reads a DIB output line and returns the phase it starts, if any:
 * `Running hooks from /tmp/.../hooks/install.d` → `install`; `Converting image using qemu-img` → `convert`.
 */
export function dibPhase(line: string): string | undefined {
  const m = /Running hooks from \S*\/([a-z-]+)\.d\b/.exec(line) ?? /dib-run-parts Target: ([a-z-]+)\.d\b/.exec(line);
  if (m && (DIB_PHASES as readonly string[]).includes(m[1] as string)) return m[1];
  if (/Converting image using qemu-img/.test(line)) return 'convert';
  return undefined;
}
