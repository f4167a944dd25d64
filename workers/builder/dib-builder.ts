/**
 * DibBuilder: a BaseBuilder that only knows how to run disk-image-create. The argv and env
 * come from the pure dibCommand(); the process runs in its own group, its output goes to the
 * build log, its phases become progress, and the group is killed on timeout or shutdown.
 */
import { DibFailedError } from '../../lib/errors.js';
import { BaseBuilder, type BaseBuilderOptions } from './base-builder.js';
import type { BuildContext, BuildMethod, BuildMethods, BuiltImage } from './build-method.js';
import { DIB_PHASES, dibCommand, dibPhase } from './dib-command.js';
import type { BuildRequest } from './job-payloads.js';
import { runCommand } from './run-command.js';

/** Options of {@link DibBuild}. */
export interface DibBuildOptions {
  /** The builder's environment, the base of DIB's (bin/ passes process.env). */
  env?: Readonly<Record<string, string | undefined>>;
  /** After SIGTERM to DIB's process group, SIGKILL follows after this long (default 10 s). */
  killGraceMs?: number;
}

/** The build method of `builder: dib` diskimages: runs disk-image-create. */
export class DibBuild implements BuildMethod {
  constructor(private readonly opts: DibBuildOptions = {}) {}

  async build(req: BuildRequest, ctx: BuildContext): Promise<BuiltImage> {
    const { argv, env } = dibCommand(ctx.diskimage, {
      outBase: ctx.outBase, formats: ctx.formats, elementsDir: ctx.elementsDir,
      tmpDir: ctx.tmpDir, imageCacheDir: ctx.imageCacheDir, baseEnv: this.opts.env ?? {},
    });
    ctx.buildLog.line(`running: ${argv.join(' ')}`);
    ctx.log.debug('running disk-image-create', { argv });
    let result;
    let lastPhase: string | undefined;
    try {
      result = await runCommand(argv, {
        env, signal: ctx.signal, output: ctx.buildLog.writable, killGraceMs: this.opts.killGraceMs ?? 10_000,
        onLine(line) {
          const phase = dibPhase(line);
          if (!phase || phase === lastPhase) return;
          lastPhase = phase;
          ctx.progress(phase, DIB_PHASES.indexOf(phase as (typeof DIB_PHASES)[number]) + 1, DIB_PHASES.length);
        },
      });
    } catch (err) {
      throw new DibFailedError(`cannot run ${argv[0]}: ${(err as Error).message}`, { exitCode: null, signal: null, logPath: ctx.buildLog.path });
    }
    if (result.aborted) return { formats: [] }; // BaseBuilder reports timeout or shutdown from the signal
    if (result.exitCode !== 0) {
      const tail = (await ctx.buildLog.tail(600)).trim().split('\n').slice(-5).join(' | ');
      throw new DibFailedError(
        `disk-image-create for ${req.imageId} exited with ${result.exitCode ?? `signal ${result.signal}`}: ${tail}`,
        { exitCode: result.exitCode, signal: result.signal, logPath: ctx.buildLog.path },
      );
    }
    return { formats: ctx.formats };
  }
}

/** Options of {@link DibBuilder}. */
export interface DibBuilderOptions extends BaseBuilderOptions {
  /** After SIGTERM to DIB's process group, SIGKILL follows after this long (default 10 s). */
  killGraceMs?: number;
}

/** A builder of `builder: dib` diskimages only. */
export class DibBuilder extends BaseBuilder {
  protected readonly buildMethods: BuildMethods;

  constructor(opts: DibBuilderOptions) {
    super(opts);
    this.buildMethods = { dib: new DibBuild(opts) };
  }
}
