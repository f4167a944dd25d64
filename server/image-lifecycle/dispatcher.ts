/**
 * Carries out the planner's actions: submits `image-build`, `image-upload` and
 * `image-delete` jobs with the record id as Gearman unique, deletes cloud images, and
 * records every result in the store. Jobs run in the background; what is in flight is
 * reported back to the planner so nothing is submitted twice.
 *
 * A job whose gearmand connection is lost keeps its record in building/uploading: the next
 * pass resubmits it with the same unique, which attaches to the job if gearmand still has it.
 */
import { EventEmitter } from 'node:events';
import type { Config } from '../../lib/config/schema.js';
import type { ImageServiceFactory } from '../../lib/drivers/image-service.js';
import { coerceError, GearmanConnectionError, isStoreUnreachable, StateConflictError } from '../../lib/errors.js';
import type { GearmanClient } from '../../lib/gearman/client.js';
import { parseBuilderClientId } from '../../lib/gearman/client-id.js';
import { fn } from '../../lib/gearman/functions.js';
import type { JobResult } from '../../lib/gearman/types.js';
import { imageTarget, takesImages } from '../../lib/drivers/config-registry.js';
import { externalImageName } from '../../lib/images/external-name.js';
import { retryWithBackoff } from '../../lib/lifecycle.js';
import type { Logger } from '../../lib/log.js';
import { INSTALLATION_PROPERTY } from '../../lib/store/installation.js';
import type { BuildRecord, UploadRecord } from '../../lib/store/models.js';
import type { Store } from '../../lib/store/store.js';
import type { Action, PlannerSnapshot } from './actions.js';
import {
  failureReason, jobUnique, parseBuildComplete, parseBuilderIdentity, parseFormatsDeleted, parseUploadAttempt, parseUploadComplete,
  type FormatsDeleted,
} from './job-results.js';
import { FILES_DELETED, filesDeletedReason } from './local-files.js';
import { definedFields, imageFields } from './image-fields.js';
import { progressWriter, uploadProgressWriter } from './progress-writer.js';
import { advertisedIds } from './registrations.js';

/** Dependencies of {@link ImageDispatcher}. */
export interface ImageDispatcherDeps {
  store: Store;
  client: GearmanClient;
  config: () => Config;
  /** Image services of image-managing providers (the server's own credentials), for cloud deletes. */
  imageServices: ImageServiceFactory;
  log: Logger;
  /** Least time between two progress writes of one record (default 1000 ms); upload progress carries the rate. */
  progressIntervalMs?: number;
  /**
   * The store's installation id, sent with every build, upload and delete job (an extra key that
   * Nodepool 0.3.x builders ignore) so builders refuse another installation's files.
   */
  installation?: () => string | undefined;
}

/** Events of {@link ImageDispatcher}, for logs, status and tests. */
export interface ImageDispatcherEvents {
  'build:ready': [build: BuildRecord];
  'build:failed': [buildId: string, reason: string];
  'build:deleted': [buildId: string];
  /** `delete-after-upload`: local files of a ready build deleted on its builder (the record lists what remains). */
  'build:files-deleted': [build: BuildRecord, deleted: FormatsDeleted];
  'upload:ready': [upload: UploadRecord];
  /** Uploaded to a target with `validate:`: a launcher of its provider validates it next. */
  'upload:validating': [upload: UploadRecord];
  'upload:failed': [uploadId: string, reason: string];
  'upload:deleted': [uploadId: string];
}

type Registered = PlannerSnapshot['registered'];

/** Joins a lost build's reason and the note it had while ready. */
const BEFORE = '; before: ';

export class ImageDispatcher extends EventEmitter<ImageDispatcherEvents> {
  /** Record id → token of the job in flight; a job whose token was replaced or dropped is ignored. */
  private readonly builds = new Map<string, symbol>();
  private readonly uploads = new Map<string, symbol>();
  private readonly buildDeletes = new Set<string>();
  private readonly uploadDeletes = new Set<string>();
  /** Stray ids whose delete a builder refused, and when to ask again. */
  private readonly strayRetryAt = new Map<string, number>();
  /** Store writes and cloud deletes: a stop waits for them. */
  private readonly background = new Set<Promise<unknown>>();
  /** Followers of Gearman jobs, which end with the job (up to build-timeout): a stop does not wait. */
  private readonly jobs = new Set<Promise<unknown>>();
  private stopped = false;
  private readonly log: Logger;
  /** Least time between two progress writes of one record; a failed write is dropped (the next sample writes again). */
  private readonly progressIntervalMs: number;

  constructor(private readonly deps: ImageDispatcherDeps) {
    super();
    this.log = deps.log;
    this.progressIntervalMs = deps.progressIntervalMs ?? 1000;
  }

  /** What is in flight here, for the planner. */
  inFlight(): PlannerSnapshot['inFlight'] {
    return {
      builds: new Set(this.builds.keys()),
      uploads: new Set(this.uploads.keys()),
      buildDeletes: new Set(this.buildDeletes),
      uploadDeletes: new Set(this.uploadDeletes),
    };
  }

  /** Carries out one pass's actions in order; one failing action does not stop the others. */
  async execute(actions: readonly Action[], registered: Registered): Promise<void> {
    for (const action of actions) {
      if (this.stopped) return;
      try {
        await this.run(action, registered);
      } catch (raw) {
        const err = coerceError(raw);
        this.log.warn('action failed; the next pass retries', { action: action.type, ...describe(action), error: err.message });
      }
    }
  }

  /**
   * Stops acting on results: jobs still running keep their records in building/uploading,
   * and the next server resumes them with the same unique. Waits for store writes and cloud
   * deletes in progress, not for the Gearman jobs (their results are ignored from now on).
   */
  async stop(): Promise<void> {
    this.stopped = true;
    this.builds.clear();
    this.uploads.clear();
    await Promise.allSettled([...this.background]);
  }

  /** Resolves when every background job and delete has settled (tests). */
  async settled(): Promise<void> {
    while (this.background.size || this.jobs.size) await Promise.allSettled([...this.background, ...this.jobs]);
  }

  /** Keeps `p` in `set` until it settles; `set` is {@link background} unless it follows a Gearman job. */
  private track(p: Promise<unknown>, set = this.background): void {
    const tracked = p.catch((err: unknown) => this.log.error('background image work failed', { error: coerceError(err).message }))
      .finally(() => set.delete(tracked));
    set.add(tracked);
  }

  private async run(action: Action, registered: Registered): Promise<void> {
    const { store } = this.deps;
    switch (action.type) {
      case 'start-build': {
        const build = await store.createBuild({
          diskimage: action.diskimage, formats: action.formats, skipIds: advertisedIds(registered, action.diskimage),
          ...imageFields(this.deps.config().diskimages.find((d) => d.name === action.diskimage)),
          ...(action.servesRequestsUpTo !== undefined ? { servesRequestsUpTo: action.servesRequestsUpTo } : {}),
        });
        this.log.info('build started', { buildId: build.id, reason: action.reason, formats: action.formats });
        this.submitBuild(build);
        return;
      }
      case 'resume-build': {
        const build = await store.getBuild(action.buildId);
        if (build?.state !== 'building' || this.builds.has(build.id)) return;
        this.log.info('resubmitting a build (attaches to the running job if gearmand still has it)', { buildId: build.id });
        this.submitBuild(build);
        return;
      }
      case 'fail-build':
        this.builds.delete(action.buildId);
        await this.failBuild(action.buildId, action.reason);
        return;
      case 'start-upload':
        await this.startUpload(action.buildId, action.provider, action.imageName);
        return;
      case 'resume-upload': {
        const upload = await store.getUpload(action.uploadId);
        if (upload?.state !== 'uploading' || this.uploads.has(upload.id)) return;
        this.log.info('resubmitting an upload', { uploadId: upload.id, buildId: upload.buildId, provider: upload.provider });
        this.submitUpload(upload);
        return;
      }
      case 'fail-upload':
        this.uploads.delete(action.uploadId);
        await this.failUpload(action.uploadId, action.reason);
        return;
      case 'fail-validation':
        await this.failValidation(action.uploadId, action.reason);
        return;
      case 'skip-validation': {
        const ready = await this.guard(() => store.updateUpload(action.uploadId, { state: 'ready', reason: null }, { expectStates: ['validating'] }), action.uploadId);
        if (!ready) return;
        this.log.info('upload ready without validation', { uploadId: ready.id, provider: ready.provider, why: action.reason });
        this.emit('upload:ready', ready);
        return;
      }
      case 'delete-upload':
        await this.deleteUpload(action.uploadId, action.reason);
        return;
      case 'delete-build':
        await this.deleteBuild(action.buildId, action.reason, registered);
        return;
      case 'delete-formats':
        this.deleteFormats(action.buildId, action.formats, action.kept);
        return;
      case 'mark-lost': {
        const b = await store.getBuild(action.buildId);
        const lost = `no builder advertises its files any more${b?.builderHostname ? ` (last held by ${b.builderHostname})` : ''}`;
        // A note that its local files were deleted after upload is kept, for when it is found again.
        const reason = b?.reason?.startsWith(FILES_DELETED) ? `${lost}${BEFORE}${b.reason}` : lost;
        await store.updateBuild(action.buildId, { state: 'lost', reason }, { expectStates: ['ready'] });
        this.log.warn('build lost', { buildId: action.buildId, reason });
        return;
      }
      case 'mark-found': {
        const holder = parseBuilderClientId(action.holders[0] ?? '');
        const was = (await store.getBuild(action.buildId))?.reason ?? '';
        const note = was.includes(`${BEFORE}${FILES_DELETED}`) ? was.slice(was.indexOf(BEFORE) + BEFORE.length) : null;
        await store.updateBuild(action.buildId, { state: 'ready', reason: note, ...(holder ? { builderHostname: holder.hostname, builderId: holder.builderId } : {}) }, { expectStates: ['lost'] });
        this.log.info('lost build found again', { buildId: action.buildId, holders: action.holders });
        return;
      }
      case 'delete-stray':
        this.deleteStray(action.imageId, action.holders);
        return;
      case 'clear-request':
        await store.clearBuildRequest(action.diskimage, action.requested);
        return;
    }
  }

  // ------------------------------------------------------------------ builds

  private submitBuild(build: BuildRecord): void {
    const token = Symbol(build.id);
    this.builds.set(build.id, token);
    const live = (): boolean => !this.stopped && this.builds.get(build.id) === token;
    const progress = progressWriter({
      intervalMs: this.progressIntervalMs, live,
      write: (p) => this.track(this.deps.store.updateBuild(build.id, { progress: p }, { expectStates: ['building'] }).catch(() => undefined)),
    });
    const job = this.deps.client.submit(fn.imageBuild(build.diskimage), JSON.stringify({ 'image-id': build.id, created: build.created, ...this.installationKey() }), {
      unique: this.unique(build.id),
      onStatus: (n, d) => { if (live()) progress(n, d); },
      onData: (data) => {
        const who = parseBuilderIdentity(data);
        if (!who || !live()) return;
        this.log.info('build running', { buildId: build.id, builder: who.hostname });
        this.track(this.deps.store.updateBuild(build.id, { builderHostname: who.hostname, builderId: who.builderId }, { expectStates: ['building'] }));
      },
    });
    this.follow(job.result, live, {
      what: { buildId: build.id },
      // Still in flight while its result is being recorded (maybe across a store outage), so no pass resubmits it.
      onResult: (result) => this.onBuildResult(build, result).finally(() => { if (this.builds.get(build.id) === token) this.builds.delete(build.id); }),
      onLost: () => this.builds.delete(build.id),
      onRefused: (reason) => this.failBuild(build.id, reason),
    });
  }

  private async onBuildResult(build: BuildRecord, result: JobResult): Promise<void> {
    if (result.type !== 'complete') return this.failBuild(build.id, failureReason(result));
    let outcome;
    try {
      outcome = parseBuildComplete(result.data, build.id);
    } catch (err) {
      return this.failBuild(build.id, (err as Error).message);
    }
    const ready = await this.guard(() => this.deps.store.updateBuild(build.id, {
      state: 'ready', builderHostname: outcome.builderHostname, builderId: outcome.builderId,
      formats: outcome.formats, files: outcome.files, progress: null, reason: null,
    }, { expectStates: ['building'] }), build.id);
    if (!ready) return;
    this.log.info('build ready', { buildId: build.id, builder: outcome.builderHostname, formats: outcome.formats });
    this.emit('build:ready', ready);
  }

  private async failBuild(buildId: string, reason: string): Promise<void> {
    const failed = await this.guard(() => this.deps.store.updateBuild(buildId, { state: 'failed', reason, progress: null }, { expectStates: ['building'] }), buildId);
    if (!failed) return;
    this.log.warn('build failed', { buildId, reason });
    this.emit('build:failed', buildId, reason);
  }

  private async deleteBuild(buildId: string, reason: string, registered: Registered): Promise<void> {
    const { store } = this.deps;
    if (this.buildDeletes.has(buildId)) return;
    const build = await store.updateBuild(buildId, { state: 'deleting', reason }, { expectStates: ['ready', 'failed', 'lost', 'deleting'] });
    if (!build) return;
    const holders = registered?.get(fn.imageDelete(buildId)) ?? [];
    if (registered !== null && holders.length === 0) {
      // Nobody holds files of this id: the record is all there is.
      await this.removeBuildRecord(buildId, 'no builder holds its files');
      return;
    }
    if (registered === null) return; // cannot tell who holds it; the next pass decides
    this.log.info('deleting build files', { buildId, holders, reason });
    this.submitDelete(buildId, async () => this.removeBuildRecord(buildId, 'its builder deleted the files'));
  }

  private async removeBuildRecord(buildId: string, why: string): Promise<void> {
    if (await this.deps.store.deleteBuild(buildId)) {
      this.log.info('build deleted', { buildId, why });
      this.emit('build:deleted', buildId);
    }
  }

  private deleteStray(imageId: string, holders: string[]): void {
    if (this.buildDeletes.has(imageId)) return;
    const retryAt = this.strayRetryAt.get(imageId);
    if (retryAt !== undefined && Date.now() < retryAt) return;
    this.log.info('deleting image files no record wants', { buildId: imageId, holders });
    this.submitDelete(imageId, async () => { this.strayRetryAt.delete(imageId); }, () => {
      // Refused (another installation's files, a build in progress): ask again after another grace period, not every pass.
      const waitS = Math.max(60, this.deps.config().imageLifecycle.strayGrace);
      this.strayRetryAt.set(imageId, Date.now() + waitS * 1000);
      return `asking again in ${waitS} s`;
    });
  }

  /**
   * `delete-after-upload`: asks the builder holding a ready build to delete the local files of
   * `formats` (`image-delete:<id>` with `formats`); the build stays ready, its record's `files`
   * then list what remains and its reason says what was deleted.
   */
  private deleteFormats(buildId: string, formats: string[], kept: string[]): void {
    if (this.buildDeletes.has(buildId)) return;
    this.log.info('deleting local files uploaded everywhere (delete-after-upload)', { buildId, formats, kept });
    this.submitDelete(buildId, async (data) => {
      const outcome = parseFormatsDeleted(data, buildId);
      if (!outcome) {
        // A builder that knows only whole deletes (an older one) ignored `formats`.
        this.log.warn('the builder deleted the whole build instead of some formats (a builder without partial deletes); the build is marked lost once no builder advertises it', { buildId, formats });
        return;
      }
      const build = await this.guard(() => this.deps.store.updateBuild(buildId, {
        files: outcome.files, reason: filesDeletedReason(outcome.deleted, kept),
      }, { expectStates: ['ready'] }), buildId);
      this.log.info('local files deleted after upload', { buildId, deleted: outcome.deleted, freedBytes: outcome.freedBytes, remaining: outcome.files.map((f) => f.format) });
      if (build) this.emit('build:files-deleted', build, outcome);
    }, undefined, formats);
  }

  /**
   * Submits `image-delete:<id>` (with `formats`: only those files); `done` runs with the
   * builder's WORK_COMPLETE data, `refused` (saying when it retries) after another end.
   */
  private submitDelete(buildId: string, done: (data: Buffer) => Promise<void>, refused: () => string = () => 'the next pass retries', formats?: string[]): void {
    this.buildDeletes.add(buildId);
    const key = this.installationKey();
    const payload = formats ? JSON.stringify({ ...key, formats }) : key.installation ? JSON.stringify(key) : '';
    // Its own unique: gearmand must not merge it with a whole delete of the id.
    const unique = this.unique(formats ? `${buildId}:formats:${formats.join(',')}` : buildId);
    const job = this.deps.client.submit(fn.imageDelete(buildId), payload, { unique });
    this.track(job.result.then(
      async (result) => {
        if (this.stopped) return;
        if (result.type === 'complete') await done(result.data);
        else this.log.warn('image-delete did not complete', { buildId, reason: failureReason(result), retry: refused() });
      },
      (err: Error) => this.log.warn('image-delete job lost; the next pass retries', { buildId, error: err.message }),
    ).finally(() => this.buildDeletes.delete(buildId)), this.jobs);
  }

  // ------------------------------------------------------------------ uploads

  private async startUpload(buildId: string, providerName: string, imageName: string): Promise<void> {
    const { store } = this.deps;
    const provider = this.deps.config().providers.find((p) => p.name === providerName);
    const target = provider && imageTarget(provider, imageName);
    if (!target) return;
    // Nodepool 11 copies the build's username, python_path and shell_type into its uploads.
    const build = await store.getBuild(buildId);
    const fields = { ...imageFields(this.deps.config().diskimages.find((d) => d.name === build?.diskimage)), ...definedFields(build) };
    let upload = await store.createUpload({ buildId, provider: providerName, imageName, externalName: null, ...fields });
    const externalName = externalImageName(target.nameFormat, {
      imageName, timestamp: Math.floor(upload.created / 1000), buildId, uploadId: upload.id,
    });
    upload = (await store.updateUpload(upload.id, { externalName })) ?? upload;
    this.log.info('upload started', { uploadId: upload.id, buildId, provider: providerName, externalName });
    this.submitUpload(upload);
  }

  private submitUpload(upload: UploadRecord): void {
    const token = Symbol(upload.id);
    this.uploads.set(upload.id, token);
    const live = (): boolean => !this.stopped && this.uploads.get(upload.id) === token;
    const provider = this.deps.config().providers.find((p) => p.name === upload.provider);
    const installation = this.deps.installation?.();
    // The diskimage's metadata, then the provider image's meta over it (Nodepool 11's order); the builder adds the ids.
    const metadata = this.deps.config().diskimages.find((d) => d.name === upload.diskimage)?.metadata;
    const meta = { ...metadata, ...(provider && imageTarget(provider, upload.imageName)?.meta), ...(installation ? { [INSTALLATION_PROPERTY]: installation } : {}) };
    const payload: Record<string, unknown> = { 'image-name': upload.imageName, provider: upload.provider, 'upload-id': upload.id, meta, ...this.installationKey() };
    if (upload.externalName) payload['external-name'] = upload.externalName;
    const progress = uploadProgressWriter({
      intervalMs: this.progressIntervalMs, live,
      write: (p) => this.track(this.deps.store.updateUpload(upload.id, { progress: p }, { expectStates: ['uploading'] }).catch(() => undefined)),
    });
    const job = this.deps.client.submit(fn.imageUpload(upload.buildId), JSON.stringify(payload), {
      unique: this.unique(`${upload.buildId}:${upload.provider}:${upload.id}`),
      onStatus: (n, d) => { if (live()) progress(n, d); },
      onData: (data) => {
        const retrying = parseUploadAttempt(data);
        if (!retrying || !live()) return;
        this.log.warn('upload retrying', { uploadId: upload.id, provider: upload.provider, reason: retrying });
        this.track(this.deps.store.updateUpload(upload.id, { reason: retrying }, { expectStates: ['uploading'] }));
      },
    });
    this.follow(job.result, live, {
      what: { uploadId: upload.id },
      onResult: (result) => this.onUploadResult(upload, result).finally(() => { if (this.uploads.get(upload.id) === token) this.uploads.delete(upload.id); }),
      onLost: () => this.uploads.delete(upload.id),
      onRefused: (reason) => this.failUpload(upload.id, reason),
    });
  }

  private async onUploadResult(upload: UploadRecord, result: JobResult): Promise<void> {
    if (result.type !== 'complete') return this.failUpload(upload.id, failureReason(result));
    let outcome;
    try {
      outcome = parseUploadComplete(result.data, `WORK_COMPLETE of upload ${upload.id}`);
    } catch (err) {
      return this.failUpload(upload.id, (err as Error).message);
    }
    // With `validate:` the upload is not used until a launcher of its provider has validated it.
    const provider = this.deps.config().providers.find((p) => p.name === upload.provider);
    const validate = (provider && imageTarget(provider, upload.imageName)?.validate) ?? null;
    const done = await this.guard(() => this.deps.store.updateUpload(upload.id, {
      state: validate ? 'validating' : 'ready', externalId: outcome.externalId, externalName: outcome.externalName, format: outcome.format,
      progress: null, reason: validate ? `waiting for a launcher of ${upload.provider} to validate it` : null,
    }, { expectStates: ['uploading'] }), upload.id);
    if (!done) return;
    const fields = { uploadId: upload.id, buildId: upload.buildId, provider: upload.provider, externalId: outcome.externalId };
    if (validate) {
      this.log.info('upload complete; validating it before use', { ...fields, label: validate.label, timeout: validate.timeout });
      this.emit('upload:validating', done);
    } else {
      this.log.info('upload ready', fields);
      this.emit('upload:ready', done);
    }
  }

  /** Fails a `validating` upload the planner resolved (target gone, nobody validated it) and deletes its image. */
  private async failValidation(uploadId: string, reason: string): Promise<void> {
    const failed = await this.guard(() => this.deps.store.updateUpload(uploadId, { state: 'failed', reason, progress: null }, { expectStates: ['validating'] }), uploadId);
    if (!failed) return;
    this.log.warn('upload failed validation', { uploadId, provider: failed.provider, buildId: failed.buildId, reason });
    this.emit('upload:failed', uploadId, reason);
    // The record stays failed with its reason until retention removes it; an image this
    // delete misses is a leak the leak check removes (a failed record accounts for nothing).
    try {
      await this.deleteCloudImage(failed);
    } catch (err) {
      this.log.warn('deleting the image of a failed validation failed; the leak check retries', { uploadId, error: coerceError(err).message });
    }
  }

  private async failUpload(uploadId: string, reason: string): Promise<void> {
    const failed = await this.guard(() => this.deps.store.updateUpload(uploadId, { state: 'failed', reason, progress: null }, { expectStates: ['uploading'] }), uploadId);
    if (!failed) return;
    this.log.warn('upload failed', { uploadId, provider: failed.provider, buildId: failed.buildId, reason });
    this.emit('upload:failed', uploadId, reason);
  }

  private async deleteUpload(uploadId: string, reason: string): Promise<void> {
    if (this.uploadDeletes.has(uploadId)) return;
    const upload = await this.deps.store.updateUpload(uploadId, { state: 'deleting', reason }, { expectStates: ['ready', 'failed', 'deleting'] });
    if (!upload) return;
    this.uploadDeletes.add(uploadId);
    this.track((async () => {
      try {
        await this.deleteCloudImage(upload);
        await this.deps.store.deleteUpload(uploadId);
        this.log.info('upload deleted', { uploadId, provider: upload.provider, externalId: upload.externalId, reason });
        this.emit('upload:deleted', uploadId);
      } catch (err) {
        this.log.warn('deleting an upload failed; the next pass retries', { uploadId, provider: upload.provider, error: coerceError(err).message });
      } finally {
        this.uploadDeletes.delete(uploadId);
      }
    })());
  }

  /** Deletes an upload's image in its provider (none yet: nothing to do). */
  private async deleteCloudImage(upload: UploadRecord): Promise<void> {
    if (!upload.externalId) return;
    const provider = this.deps.config().providers.find((p) => p.name === upload.provider);
    if (provider && takesImages(provider)) {
      const service = await this.deps.imageServices(provider);
      await service.delete(upload.externalId);
    } else {
      this.log.warn('provider is gone from the config: its cloud image cannot be deleted here; delete it by hand', {
        uploadId: upload.id, provider: upload.provider, externalId: upload.externalId,
      });
    }
  }

  // ------------------------------------------------------------------ helpers

  /**
   * The Gearman unique of a job about `key`, prefixed with the installation id: two installations
   * on one gearmand number their records alike, and gearmand would otherwise merge one's job into
   * the other's (same function and unique) and hand it the other's result.
   */
  private unique(key: string): string {
    const installation = this.deps.installation?.();
    return jobUnique(installation ? `${installation}:${key}` : key);
  }

  /** `{installation}` for job payloads, or nothing before the store's id is known. */
  private installationKey(): { installation?: string } {
    const installation = this.deps.installation?.();
    return installation ? { installation } : {};
  }

  /**
   * Follows the end of a build or upload job while it is `live` (not given up or replaced):
   * results go to `onResult`; a lost gearmand connection only drops it from the in-flight set,
   * so the next pass resubmits it with the same unique; any other error fails the record.
   */
  private follow(result: Promise<JobResult>, live: () => boolean, h: {
    what: Record<string, string>;
    onResult(result: JobResult): Promise<void>;
    onLost(): void;
    onRefused(reason: string): Promise<void>;
  }): void {
    this.track(result.then(
      (r) => (live() ? h.onResult(r) : undefined),
      (err: Error) => {
        if (!live()) return;
        h.onLost();
        if (err instanceof GearmanConnectionError) {
          this.log.warn('lost gearmand while a job ran; it is resubmitted next pass', { ...h.what, error: err.message });
          return;
        }
        return h.onRefused(`gearmand refused the job: ${err.message}`);
      },
    ), this.jobs);
  }

  /**
   * Writes a state change: one that lost a race (the record changed meanwhile) is logged, not
   * thrown; one the store could not take because it is unreachable (ZooKeeper down, the
   * session being replaced) is tried again with capped backoff until the store answers or
   * the dispatcher stops, so a job's result that arrives during an outage is recorded
   * afterwards instead of being dropped (and the job submitted again).
   */
  private async guard<T>(write: () => Promise<T | undefined>, id: string): Promise<T | undefined> {
    try {
      return await retryWithBackoff(write, {
        retryable: (err) => isStoreUnreachable(err) && !this.stopped, initialMs: 500, maxMs: 5000,
        onRetry: (err, n) => {
          if (n === 0) this.log.warn('state store unreachable; recording the result when it answers again', { id, error: coerceError(err).message });
        },
      });
    } catch (err) {
      if (err instanceof StateConflictError) {
        this.log.info('record changed meanwhile; result not recorded', { id, state: err.actualState });
        return undefined;
      }
      throw err;
    }
  }

}

function describe(action: Action): Record<string, unknown> {
  const { type: _type, ...rest } = action;
  return rest;
}
