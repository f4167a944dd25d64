/**
 * CommandBuilder: a BaseBuilder that builds `builder: command` diskimages by running their
 * `command` (Packer, a script around mke2fs, a build on another host) with the contract of
 * build-command.ts: NODEPOOL_* variables in, `<NODEPOOL_OUTPUT>.<format>` for every format out,
 * exit 0 for success. It runs in its own process group with its output in the build log, and
 * the group is killed on build-timeout or shutdown. BaseBuilder then verifies the outputs.
 */
import { BuildCommandFailedError } from '../../lib/errors.js';
import { BaseBuilder, type BaseBuilderOptions } from './base-builder.js';
import { BUILDER_DEFAULTS } from './builder-defaults.js';
import { buildCommand } from './build-command.js';
import { runBuildCommand, type BuildContext, type BuildMethod, type BuildMethods, type BuiltImage } from './build-method.js';
import type { BuildRequest } from './job-payloads.js';

/** Options of {@link CommandBuild}. */
export interface CommandBuildOptions {
  /** The builder's environment, the base of the command's (bin/ passes process.env). */
  env?: Readonly<Record<string, string | undefined>>;
  /** After SIGTERM to the command's process group, SIGKILL follows after this long (default 10 s). */
  killGraceMs?: number;
}

/** The build method of `builder: command` diskimages. */
export class CommandBuild implements BuildMethod {
  constructor(private readonly opts: CommandBuildOptions = {}) {}

  async build(req: BuildRequest, ctx: BuildContext): Promise<BuiltImage> {
    const { argv, env, cwd } = buildCommand(ctx.diskimage, {
      imageId: req.imageId, outBase: ctx.outBase, formats: ctx.formats, tmpDir: ctx.tmpDir, baseEnv: this.opts.env ?? {},
    });
    return runBuildCommand(req, ctx, {
      argv, env, cwd, what: `build command ${argv[0]}`, killGraceMs: this.opts.killGraceMs ?? BUILDER_DEFAULTS.buildKillGraceMs, failure: BuildCommandFailedError,
    });
  }
}

/** Options of {@link CommandBuilder}. */
export interface CommandBuilderOptions extends BaseBuilderOptions {
  killGraceMs?: number;
}

/** A builder of `builder: command` diskimages only (a host without DIB). */
export class CommandBuilder extends BaseBuilder {
  protected readonly buildMethods: BuildMethods;

  constructor(opts: CommandBuilderOptions) {
    super(opts);
    this.buildMethods = { command: new CommandBuild(opts) };
  }
}
