/**
 * A build method is one way of making an image from a diskimage: DIB (dib-builder.ts), a
 * command of the operator's (command-builder.ts) or setup on a build instance, snapshotted
 * (snapshot-builder.ts). BaseBuilder does everything around it
 * (Gearman, payloads, TMPDIR, build log, timeout, verifying the outputs, the sidecar) and picks
 * the method by the diskimage's `builder` key.
 */
import type { Config, DiskimageConfig } from '../../lib/config/schema.js';
import type { Logger } from '../../lib/log.js';
import type { BuildLog } from './build-log.js';
import type { BuildRequest } from './job-payloads.js';
import { runCommand } from '../../lib/run-command.js';

/** A diskimage's `builder` key: `dib` (the default), `command` or `snapshot`. */
export type BuilderKind = DiskimageConfig['builder'];

/** What a build method gets for one build. */
export interface BuildContext {
  diskimage: DiskimageConfig;
  /** The builder's config now (a snapshot build's provider is in its `providers`). */
  config: Config;
  /** The builder's id (builder_id.txt), which tags what a build leaves outside this host. */
  builderId: string;
  /** `<images-dir>/<id>`: the build must produce `<outBase>.<format>` for every format. */
  outBase: string;
  formats: string[];
  /** Private TMPDIR of this build, removed (with any mounts and loop devices) afterwards. */
  tmpDir: string;
  imageCacheDir: string;
  elementsDir: string | undefined;
  buildLog: BuildLog;
  log: Logger;
  /** Aborted on build-timeout or shutdown. */
  signal: AbortSignal;
  /** Reports progress (WORK_STATUS and the log). */
  progress(phase: string, numerator: number, denominator: number): void;
}

/** What a build method returns. */
export interface BuiltImage {
  formats: string[];
}

/** What a build method gets when its builder starts. */
export interface BuildMethodStart {
  config: Config;
  builderId: string;
  log: Logger;
}

/** One way of making an image. */
export interface BuildMethod {
  /** Called once when the builder starts, before it takes builds (e.g. removes what a killed builder left). */
  start?(ctx: BuildMethodStart): Promise<void>;
  /**
   * Makes `<ctx.outBase>.<format>` for every `ctx.formats` and returns the formats made; when
   * `ctx.signal` aborts it stops its work (BaseBuilder reports timeout or shutdown).
   * Thrown: a `BuilderError` for an expected failure (the job ends in WORK_FAIL).
   */
  build(req: BuildRequest, ctx: BuildContext): Promise<BuiltImage>;
}

/** The build methods a builder runs, by the `builder` key of the diskimages they make. */
export type BuildMethods = Readonly<Partial<Record<BuilderKind, BuildMethod>>>;

/** How {@link runBuildCommand} runs a build method's program. */
export interface BuildCommandRun {
  argv: readonly string[];
  env: Record<string, string>;
  cwd?: string;
  /** What the failure message calls it: `disk-image-create`, `build command ./make-image`. */
  what: string;
  killGraceMs: number;
  onLine?(line: string): void;
  /** The error to throw for a command that cannot start or exits non-zero. */
  failure: new (message: string, details: { exitCode: number | null; signal: string | null; logPath: string }) => Error;
}

/**
 * Runs a build method's program in its own process group, output to the build log; resolves
 * with the formats to check (none when aborted: BaseBuilder reports timeout or shutdown from
 * the signal). Thrown: `run.failure` naming the exit code and the log's last lines.
 */
export async function runBuildCommand(req: BuildRequest, ctx: BuildContext, run: BuildCommandRun): Promise<BuiltImage> {
  const logPath = ctx.buildLog.path;
  ctx.buildLog.line(`running: ${run.argv.join(' ')}`);
  ctx.log.debug('running the build command', { argv: run.argv });
  let result;
  try {
    result = await runCommand(run.argv, {
      env: run.env, signal: ctx.signal, output: ctx.buildLog.writable, killGraceMs: run.killGraceMs, processGroup: true,
      ...(run.cwd ? { cwd: run.cwd } : {}), ...(run.onLine ? { onLine: run.onLine } : {}),
    });
  } catch (err) {
    throw new run.failure(`cannot run ${run.argv[0]}: ${(err as Error).message}`, { exitCode: null, signal: null, logPath });
  }
  if (result.aborted) return { formats: [] };
  if (result.exitCode !== 0) {
    const tail = (await ctx.buildLog.tail(600)).trim().split('\n').slice(-5).join(' | ');
    throw new run.failure(`${run.what} for ${req.imageId} exited with ${result.exitCode ?? `signal ${result.signal}`}: ${tail}`,
      { exitCode: result.exitCode, signal: result.signal, logPath });
  }
  return { formats: ctx.formats };
}
