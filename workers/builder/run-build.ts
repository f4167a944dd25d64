/**
 * One build of a diskimage on this host: the per-build log, TMPDIR, image cache, timeout and
 * abort around the build method, then checksums, output verification and the sidecar that
 * makes the image complete. BaseBuilder calls it once per build id (attaching later jobs).
 */
import type { EventEmitter } from 'node:events';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../../lib/config/schema.js';
import { AbortedError, BuilderError, BuildTimeoutError, UnknownImageError } from '../../lib/errors.js';
import type { WorkerJob } from '../../lib/gearman/worker.js';
import { buildFormats } from '../../lib/config/build-formats.js';
import { imagePaths } from '../../lib/images/image-file.js';
import type { Logger } from '../../lib/log.js';
import { BuildLog } from './build-log.js';
import type { BuildMethods } from './build-method.js';
import type { BuilderEvents } from './builder-options.js';
import { cleanupBuildTmp } from './dib-cleanup.js';
import type { ImageRepository, ImageSidecar } from './image-repository.js';
import type { BuildRequest } from './job-payloads.js';
import { readDibChecksum, verifyBuildOutput } from './verify-output.js';

/** The entry of `build-tmp-dir` holding the DIB image caches: kept across builds (the stale-build sweep skips it). */
export const IMAGE_CACHE_ENTRY = 'image-cache';

/** The image cache of `diskimage`'s builds on this host (one per diskimage avoids lock clashes). Pure. */
export function imageCacheDir(config: Pick<Config, 'buildTmpDir'>, diskimage: string): string {
  return path.join(config.buildTmpDir, IMAGE_CACHE_ENTRY, diskimage);
}

/** What a build needs from the builder running it. */
export interface BuildContext {
  config: Config;
  clientId: string;
  hostname: string;
  builderId: string;
  buildMethods: BuildMethods;
  repo: ImageRepository;
  /** Aborted when the builder shuts down (deadline or second signal). */
  shutdown: AbortSignal;
  qemuImg: string | undefined;
  /** Makes a complete build served here (upload and delete functions). */
  registerLocal(id: string, sidecar: ImageSidecar): void;
  /** Receives `build:complete` and `build:failed`. */
  events: EventEmitter<BuilderEvents>;
}

/** Runs build `req` and returns its sidecar; on failure its files are removed and the error thrown. */
export async function runBuild(ctx: BuildContext, req: BuildRequest, job: WorkerJob, log: Logger): Promise<ImageSidecar> {
  const diskimage = ctx.config.diskimages.find((d) => d.name === req.diskimage);
  if (!diskimage) throw new UnknownImageError(`diskimage ${req.diskimage} is not in this builder's config`);
  if (diskimage.pause) throw new BuilderError(`diskimage ${req.diskimage} is paused`);
  const method = ctx.buildMethods[diskimage.builder];
  if (!method) throw new BuilderError(`diskimage ${req.diskimage} has builder: ${diskimage.builder}, which ${ctx.clientId} does not run`);
  const dir = ctx.config.imagesDir;
  const tmpDir = path.join(ctx.config.buildTmpDir, req.imageId);
  const formats = buildFormats(ctx.config, diskimage);
  const buildLog = await BuildLog.open(ctx.config.buildLogDir, req.imageId, req.diskimage, ctx.config.buildLogRetention, req.logToken);
  const timeout = AbortSignal.timeout(diskimage.buildTimeout * 1000);
  const signal = AbortSignal.any([ctx.shutdown, timeout]);
  const started = Date.now();
  log.info('build started', { formats, buildLog: buildLog.path });
  buildLog.line(`build ${req.imageId} of ${req.diskimage} on ${ctx.clientId}, formats ${formats.join(',')}`);
  try {
    await ctx.repo.removeAll(req.imageId); // leftovers of an earlier attempt at this id
    await mkdir(tmpDir, { recursive: true });
    const cacheDir = imageCacheDir(ctx.config, req.diskimage);
    await mkdir(cacheDir, { recursive: true });
    const built = await method.build(req, {
      diskimage, config: ctx.config, builderId: ctx.builderId, outBase: imagePaths.base(dir, req.imageId), formats, tmpDir, imageCacheDir: cacheDir,
      elementsDir: ctx.config.elementsDir, buildLog, log, signal,
      progress: (phase, n, d) => {
        job.sendStatus(n, d);
        log.info('build progress', { phase, step: n, of: d });
      },
    });
    if (signal.aborted) throw abortReason(timeout, diskimage.buildTimeout);
    const files = [];
    for (const format of built.formats) {
      if (!(await ctx.repo.hasFile(req.imageId, format))) throw new BuilderError(`build finished but ${req.imageId}.${format} is missing (see ${buildLog.path})`);
      // DIB's own checksum is read before ours replaces it at the same path.
      const dibChecksum = await readDibChecksum(imagePaths.sha256(dir, req.imageId, format));
      const file = await ctx.repo.checksum(req.imageId, format);
      await verifyBuildOutput(imagePaths.file(dir, req.imageId, format), format, file.sha256, dibChecksum, { ...(ctx.qemuImg ? { qemuImg: ctx.qemuImg } : {}), signal });
      files.push(file);
    }
    const sidecar: ImageSidecar = {
      'image-id': req.imageId, diskimage: req.diskimage, builder: ctx.hostname, 'builder-id': ctx.builderId,
      formats: built.formats, files, 'built-at': new Date().toISOString(),
      ...(req.created !== undefined ? { 'build-created': req.created } : {}),
      ...(req.installation !== undefined ? { installation: req.installation } : {}),
    };
    await ctx.repo.writeSidecar(sidecar);
    ctx.registerLocal(req.imageId, sidecar);
    buildLog.line(`build complete in ${Math.round((Date.now() - started) / 1000)} s`);
    log.info('build complete', { durationMs: Date.now() - started, files });
    ctx.events.emit('build:complete', sidecar);
    return sidecar;
  } catch (raw) {
    const err = signal.aborted && !(raw instanceof BuildTimeoutError) ? abortReason(timeout, diskimage.buildTimeout) : raw as Error;
    buildLog.line(`build failed: ${err.message}`);
    await ctx.repo.removeAll(req.imageId).catch((e: Error) => log.warn('could not remove failed build files', { error: e.message }));
    if (err instanceof BuilderError && !err.message.includes(buildLog.path)) err.message += ` (build log: ${buildLog.path})`;
    ctx.events.emit('build:failed', { imageId: req.imageId, error: err });
    throw err;
  } finally {
    await cleanupBuildTmp(tmpDir, log);
    await buildLog.close();
  }
}

function abortReason(timeout: AbortSignal, buildTimeoutS: number): Error {
  return timeout.aborted
    ? new BuildTimeoutError(`build exceeded build-timeout of ${buildTimeoutS} s and was killed`)
    : new AbortedError('build aborted: builder shutting down');
}
