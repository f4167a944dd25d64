/**
 * What the server's metrics count, as plain outcomes: builds and uploads that ended (turned
 * from the image lifecycle's events and records), node launches (from the launcher) and
 * leaked resources deleted. Prometheus and statsd are two sinks of the same outcomes.
 */
import type { Logger } from '../../lib/log.js';
import { coerceError } from '../../lib/errors.js';
import type { ImageFileInfo } from '../../lib/store/models.js';
import type { Store } from '../../lib/store/store.js';
import type { ImageLifecycle } from '../image-lifecycle/image-lifecycle.js';
import type { LaunchOutcome } from '../launcher/request-handler-types.js';

export type { LaunchOutcome };

/** A build that ended. */
export interface BuildOutcome {
  diskimage: string;
  buildId: string;
  result: 'ready' | 'failed';
  /** From the record's creation to its end (store clock). */
  durationMs: number;
  /** Epoch ms it ended. */
  finished: number;
  /** The image files (ready builds). */
  files: ImageFileInfo[];
}

/** An upload that ended. */
export interface UploadOutcome {
  provider: string;
  diskimage: string;
  uploadId: string;
  buildId: string;
  result: 'ready' | 'failed';
  durationMs: number;
  /**
   * Size of the file sent: the build's file in the uploaded format. Null when the builder
   * converted to that format at upload time (the converted size is not recorded) or for failures.
   */
  bytes: number | null;
}

/** Where outcomes go. */
export interface MetricsSink {
  buildFinished(o: BuildOutcome): void;
  uploadFinished(o: UploadOutcome): void;
  launchFinished(o: LaunchOutcome): void;
  /** Leaked resources of a provider that were deleted (`resource`: `image`, `server`). */
  leaked(provider: string, resource: string, count: number): void;
}

/** Hands every outcome to each sink. */
export function fanOut(sinks: readonly MetricsSink[]): MetricsSink {
  return {
    buildFinished: (o) => sinks.forEach((s) => s.buildFinished(o)),
    uploadFinished: (o) => sinks.forEach((s) => s.uploadFinished(o)),
    launchFinished: (o) => sinks.forEach((s) => s.launchFinished(o)),
    leaked: (p, r, n) => sinks.forEach((s) => s.leaked(p, r, n)),
  };
}

/**
 * Turns the lifecycle's events into outcomes: `build:ready` and `upload:ready` carry the
 * record; for `build:failed` and `upload:failed` the record is read back. Returns the
 * function that stops listening.
 */
export function watchImageLifecycle(lifecycle: ImageLifecycle, store: Store, sink: MetricsSink, log: Logger): () => void {
  const warn = (what: string) => (err: unknown): void => {
    log.warn(`metrics: could not read ${what}`, { error: coerceError(err).message });
  };
  const onBuildReady = (b: Parameters<typeof buildOutcome>[0]): void => sink.buildFinished(buildOutcome(b, 'ready'));
  const onBuildFailed = (buildId: string): void => {
    store.getBuild(buildId).then((b) => { if (b) sink.buildFinished(buildOutcome(b, 'failed')); }, warn(`build ${buildId}`));
  };
  const onUpload = (uploadId: string, result: 'ready' | 'failed'): void => {
    void (async () => {
      const u = await store.getUpload(uploadId);
      if (!u) return;
      const build = result === 'ready' && u.format ? await store.getBuild(u.buildId) : undefined;
      const file = build?.files.find((f) => f.format === u.format);
      sink.uploadFinished({
        provider: u.provider, diskimage: u.diskimage, uploadId: u.id, buildId: u.buildId, result,
        durationMs: Math.max(0, u.stateTime - u.created), bytes: file ? file.size : null,
      });
    })().catch(warn(`upload ${uploadId}`));
  };
  const onUploadReady = (u: { id: string }): void => onUpload(u.id, 'ready');
  const onUploadFailed = (uploadId: string): void => onUpload(uploadId, 'failed');
  const onLeaks = (images: ReadonlyArray<{ provider: string }>): void => {
    const byProvider = new Map<string, number>();
    for (const i of images) byProvider.set(i.provider, (byProvider.get(i.provider) ?? 0) + 1);
    for (const [provider, n] of byProvider) sink.leaked(provider, 'image', n);
  };
  lifecycle.on('build:ready', onBuildReady);
  lifecycle.on('build:failed', onBuildFailed);
  lifecycle.on('upload:ready', onUploadReady);
  lifecycle.on('upload:failed', onUploadFailed);
  lifecycle.on('leaks:deleted', onLeaks);
  return () => {
    lifecycle.off('build:ready', onBuildReady);
    lifecycle.off('build:failed', onBuildFailed);
    lifecycle.off('upload:ready', onUploadReady);
    lifecycle.off('upload:failed', onUploadFailed);
    lifecycle.off('leaks:deleted', onLeaks);
  };
}

function buildOutcome(b: { id: string; diskimage: string; created: number; stateTime: number; files: ImageFileInfo[] }, result: 'ready' | 'failed'): BuildOutcome {
  return {
    diskimage: b.diskimage, buildId: b.id, result, durationMs: Math.max(0, b.stateTime - b.created), finished: b.stateTime, files: b.files,
  };
}
