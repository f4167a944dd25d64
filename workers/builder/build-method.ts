/**
 * A build method is one way of making an image from a diskimage: DIB (dib-builder.ts) or a
 * command of the operator's (command-builder.ts). BaseBuilder does everything around it
 * (Gearman, payloads, TMPDIR, build log, timeout, verifying the outputs, the sidecar) and picks
 * the method by the diskimage's `builder` key.
 */
import type { DiskimageConfig } from '../../lib/config/schema.js';
import type { Logger } from '../../lib/log.js';
import type { BuildLog } from './build-log.js';
import type { BuildRequest } from './job-payloads.js';

/** A diskimage's `builder` key: `dib` (the default) or `command`. */
export type BuilderKind = DiskimageConfig['builder'];

/** What a build method gets for one build. */
export interface BuildContext {
  diskimage: DiskimageConfig;
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

/** One way of making an image. */
export interface BuildMethod {
  /**
   * Makes `<ctx.outBase>.<format>` for every `ctx.formats` and returns the formats made; when
   * `ctx.signal` aborts it stops its work (BaseBuilder reports timeout or shutdown).
   * Thrown: a `BuilderError` for an expected failure (the job ends in WORK_FAIL).
   */
  build(req: BuildRequest, ctx: BuildContext): Promise<BuiltImage>;
}

/** The build methods a builder runs, by the `builder` key of the diskimages they make. */
export type BuildMethods = Readonly<Partial<Record<BuilderKind, BuildMethod>>>;
