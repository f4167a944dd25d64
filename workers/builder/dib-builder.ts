/**
 * DibBuilder: a BaseBuilder that only knows how to run disk-image-create. The argv and env
 * come from the pure dibCommand(); the process runs in its own group, its output goes to the
 * build log, its phases become progress, and the group is killed on timeout or shutdown.
 */
import { DibFailedError } from '../../lib/errors.js';
import { BaseBuilder, type BaseBuilderOptions } from './base-builder.js';
import { BUILDER_DEFAULTS } from './builder-defaults.js';
import { runBuildCommand, type BuildContext, type BuildMethod, type BuildMethods, type BuiltImage } from './build-method.js';
import { DIB_PHASES, dibCommand, dibPhase } from './dib-command.js';
import type { BuildRequest } from './job-payloads.js';

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
    let lastPhase: string | undefined;
    return runBuildCommand(req, ctx, {
      argv, env, what: 'disk-image-create', killGraceMs: this.opts.killGraceMs ?? BUILDER_DEFAULTS.buildKillGraceMs, failure: DibFailedError,
      onLine(line) {
        const phase = dibPhase(line);
        if (!phase || phase === lastPhase) return;
        lastPhase = phase;
        ctx.progress(phase, DIB_PHASES.indexOf(phase as (typeof DIB_PHASES)[number]) + 1, DIB_PHASES.length);
      },
    });
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
