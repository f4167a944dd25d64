/**
 * The argv and environment of a `builder: command` build (pure): the contract between the
 * builder and a program of the operator's, documented in docs/writing-a-builder.md.
 */
import type { DiskimageConfig } from '../../lib/config/schema.js';

/** Inputs of {@link buildCommand} besides the diskimage. */
export interface BuildCommandInput {
  imageId: string;
  /** `<images-dir>/<id>`: the program writes `<outBase>.<format>` for every format. */
  outBase: string;
  formats: readonly string[];
  /** The build's private TMPDIR, also its working directory; removed after the build. */
  tmpDir: string;
  /** The builder's own environment, the base that the build's variables are added to. */
  baseEnv: Readonly<Record<string, string | undefined>>;
}

/** The program to run: argv[0] is the program; no shell is involved. */
export interface BuildCommand {
  argv: string[];
  env: Record<string, string>;
  cwd: string;
}

/** The variables a build command is given, which the diskimage's env-vars cannot override. */
export const BUILD_COMMAND_VARS = [
  'NODEPOOL_IMAGE_ID', 'NODEPOOL_DISKIMAGE', 'NODEPOOL_OUTPUT', 'NODEPOOL_FORMATS', 'NODEPOOL_RELEASE', 'NODEPOOL_BUILD_TIMEOUT',
] as const;

/**
 * The command of a `builder: command` diskimage: its `command` as given, the builder's
 * environment, TMPDIR, the diskimage's env-vars, then the NODEPOOL_* contract variables (last,
 * so that an env-var cannot point the output somewhere the builder does not look).
 */
export function buildCommand(diskimage: DiskimageConfig, input: BuildCommandInput): BuildCommand {
  if (!diskimage.command?.length) throw new TypeError(`diskimage ${diskimage.name} has no command`);
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(input.baseEnv)) if (v !== undefined) env[k] = v;
  env.TMPDIR = input.tmpDir;
  Object.assign(env, diskimage.envVars);
  const contract: Record<(typeof BUILD_COMMAND_VARS)[number], string> = {
    NODEPOOL_IMAGE_ID: input.imageId,
    NODEPOOL_DISKIMAGE: diskimage.name,
    NODEPOOL_OUTPUT: input.outBase,
    NODEPOOL_FORMATS: input.formats.join(','),
    NODEPOOL_RELEASE: diskimage.release ?? '',
    NODEPOOL_BUILD_TIMEOUT: String(diskimage.buildTimeout),
  };
  Object.assign(env, contract);
  return { argv: [...diskimage.command], env, cwd: input.tmpDir };
}
