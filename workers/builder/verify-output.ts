/**
 * A build is complete only when its outputs are images: DIB can exit 0 and still leave a
 * truncated file (a full disk in its last step). Each output must be non-empty, agree with the
 * checksum DIB wrote itself (`--checksum`; a build command may write one too), and open as its
 * format in `qemu-img` (`check` for qcow2, `info` for raw and vhd). The verdicts are pure; the
 * checks run the real tools.
 */
import { readFile, stat } from 'node:fs/promises';
import { BadBuildOutputError } from '../../lib/errors.js';
import { runCommand } from '../../lib/run-command.js';
import { BUILDER_DEFAULTS } from './builder-defaults.js';

/** qemu-img's name of an image format, for those it can read. */
const QEMU_FORMAT: Readonly<Record<string, string>> = { qcow2: 'qcow2', raw: 'raw', vhd: 'vpc' };

/**
 * The sha256 in a `sha256sum` line (`<hex>  <name>`), or undefined when the text holds none.
 * Pure.
 */
export function checksumOf(text: string): string | undefined {
  return /^([0-9a-f]{64})\b/i.exec(text.trim())?.[1]?.toLowerCase();
}

/** The JSON object qemu-img printed (its stderr lines may come before it), or undefined. */
function jsonIn(output: string): Record<string, unknown> | undefined {
  const m = /\{[\s\S]*\}/.exec(output);
  if (!m) return undefined;
  try {
    const v: unknown = JSON.parse(m[0]);
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? v as Record<string, unknown> : undefined;
  } catch {
    return undefined;
  }
}

const num = (o: Record<string, unknown> | undefined, key: string): number => (typeof o?.[key] === 'number' ? o[key] : 0);

/**
 * What `qemu-img check --output=json` (qcow2) or `info --output=json` (others) said about a
 * file of `size` bytes, as a problem or undefined. Pure.
 */
export function qemuVerdict(format: string, exitCode: number | null, output: string, size: number, clusterSize = 65_536): string | undefined {
  const json = jsonIn(output);
  const said = (): string => output.split('\n').map((l) => l.trim()).filter((l) => l && !/^[{}"]/.test(l)).slice(0, 2).join('; ');
  if (format === 'qcow2') {
    // Exit 0 clean, 3 only leaked clusters (wasted space); 2 corruptions, 1 the check failed.
    const problems: string[] = [];
    if (num(json, 'corruptions') > 0) problems.push(`${num(json, 'corruptions')} corruptions`);
    if (num(json, 'check-errors') > 0) problems.push(`${num(json, 'check-errors')} check errors`);
    // Data ending a whole cluster or more past the end of the file: it was cut (check itself
    // does not flag every such cut). Less than a cluster is normal: qemu-img may leave the last
    // cluster short, and reads past the end give zeros.
    if (num(json, 'image-end-offset') - size >= clusterSize) problems.push(`its data ends at byte ${num(json, 'image-end-offset')} but the file has ${size}`);
    if (!json || (exitCode !== 0 && exitCode !== 3)) problems.push(`qemu-img check exited ${exitCode ?? 'on a signal'}`);
    return problems.length ? `${problems.join(', ')}${said() ? ` (${said()})` : ''}` : undefined;
  }
  if (exitCode !== 0 || !json) return `qemu-img info failed (exit ${exitCode ?? 'signal'})${said() ? `: ${said()}` : ''}`;
  return num(json, 'virtual-size') > 0 ? undefined : 'qemu-img info reports no virtual size';
}

/** Options of {@link verifyBuildOutput}. */
export interface VerifyOptions {
  qemuImg?: string;
  signal?: AbortSignal;
}

/**
 * Checks one output file before the build counts as complete; `dibChecksumFile` is where DIB
 * wrote its checksum (read before the builder writes its own there), `sha256` the file's.
 * Thrown: {@link BadBuildOutputError} naming the file and what is wrong.
 */
export async function verifyBuildOutput(file: string, format: string, sha256: string, dibChecksum: string | undefined, opts: VerifyOptions = {}): Promise<void> {
  const { size } = await stat(file);
  if (size === 0) throw new BadBuildOutputError(`${file} is empty`);
  if (dibChecksum !== undefined && dibChecksum !== sha256) {
    throw new BadBuildOutputError(`${file} does not match the checksum its build wrote (${dibChecksum}, the file has ${sha256}): changed or cut after the build finished?`);
  }
  const qemuFormat = QEMU_FORMAT[format];
  if (!qemuFormat) return;
  const check = await qemuImg(format === 'qcow2' ? ['check', '--output=json', '-f', 'qcow2', file] : ['info', '--output=json', '-f', qemuFormat, file], file, opts);
  let problem = qemuVerdict(format, check.exitCode, check.output, size);
  if (problem && format === 'qcow2') {
    // Seemingly cut: judge again with the image's own cluster size (64 KiB unless built with another).
    const info = await qemuImg(['info', '--output=json', '-f', 'qcow2', file], file, opts);
    const clusterSize = num(jsonIn(info.output), 'cluster-size');
    if (clusterSize > 65_536) problem = qemuVerdict(format, check.exitCode, check.output, size, clusterSize);
  }
  if (problem) throw new BadBuildOutputError(`${file} is not a usable ${format} image: ${problem}`);
}

async function qemuImg(args: string[], file: string, opts: VerifyOptions): Promise<{ exitCode: number | null; output: string }> {
  let output = '';
  const r = await runCommand([opts.qemuImg ?? BUILDER_DEFAULTS.qemuImg, ...args], {
    ...(opts.signal ? { signal: opts.signal } : {}), processGroup: true, killGraceMs: BUILDER_DEFAULTS.helperKillGraceMs, onLine: (l) => { output += `${l}\n`; },
  });
  if (r.aborted) throw new BadBuildOutputError(`checking ${file} was aborted`);
  return { exitCode: r.exitCode, output };
}

/** DIB's own checksum of an output, read from `<file>.sha256` if it wrote one. */
export async function readDibChecksum(checksumFile: string): Promise<string | undefined> {
  try {
    return checksumOf(await readFile(checksumFile, 'utf8'));
  } catch {
    return undefined;
  }
}
