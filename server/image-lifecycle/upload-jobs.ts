/**
 * The dispatcher's upload executors: start or resume `image-upload` jobs and record their end
 * (ready, or validating when the target has `validate:`), fail uploads and validations, and
 * delete uploads with their cloud images. Each carries out one planner action through the
 * {@link DispatchContext}.
 */
import { imageTarget, takesImages } from '../../lib/drivers/config-registry.js';
import { coerceError } from '../../lib/errors.js';
import { fn } from '../../lib/gearman/functions.js';
import { externalImageName } from '../../lib/images/external-name.js';
import { INSTALLATION_PROPERTY } from '../../lib/store/installation.js';
import type { UploadRecord } from '../../lib/store/models.js';
import type { DispatchContext } from './dispatch-context.js';
import { definedFields, imageFields } from './image-fields.js';
import { parseUploadAttempt, parseUploadComplete } from './job-results.js';
import { uploadProgressWriter } from './progress-writer.js';

/** A new upload record of a ready build to a provider's image, named, its job submitted. */
export async function startUpload(ctx: DispatchContext, buildId: string, providerName: string, imageName: string): Promise<void> {
  const { store, config } = ctx.deps;
  const provider = config().providers.find((p) => p.name === providerName);
  const target = provider && imageTarget(provider, imageName);
  if (!target) return;
  // Nodepool 11 copies the build's username, python_path and shell_type into its uploads.
  const build = await store.getBuild(buildId);
  const fields = { ...imageFields(config().diskimages.find((d) => d.name === build?.diskimage)), ...definedFields(build) };
  let upload = await store.createUpload({ buildId, provider: providerName, imageName, externalName: null, ...fields });
  const externalName = externalImageName(target.nameFormat, {
    imageName, timestamp: Math.floor(upload.created / 1000), buildId, uploadId: upload.id,
  });
  upload = (await store.updateUpload(upload.id, { externalName })) ?? upload;
  ctx.log.info('upload started', { uploadId: upload.id, buildId, provider: providerName, externalName });
  submitUpload(ctx, upload);
}

/** Submits an `uploading` record's job again (same unique: it attaches to a running job). */
export async function resumeUpload(ctx: DispatchContext, uploadId: string): Promise<void> {
  const upload = await ctx.deps.store.getUpload(uploadId);
  if (upload?.state !== 'uploading' || ctx.uploads.has(upload.id)) return;
  ctx.log.info('resubmitting an upload', { uploadId: upload.id, buildId: upload.buildId, provider: upload.provider });
  submitUpload(ctx, upload);
}

function submitUpload(ctx: DispatchContext, upload: UploadRecord): void {
  const { store, config } = ctx.deps;
  const { live, follow } = ctx.startJob(ctx.uploads, upload.id);
  const provider = config().providers.find((p) => p.name === upload.provider);
  const installation = ctx.deps.installation?.();
  // The diskimage's metadata, then the provider image's meta over it (Nodepool 11's order); the builder adds the ids.
  const metadata = config().diskimages.find((d) => d.name === upload.diskimage)?.metadata;
  const meta = { ...metadata, ...(provider && imageTarget(provider, upload.imageName)?.meta), ...(installation ? { [INSTALLATION_PROPERTY]: installation } : {}) };
  const payload: Record<string, unknown> = { 'image-name': upload.imageName, provider: upload.provider, 'upload-id': upload.id, meta, ...ctx.installationKey() };
  if (upload.externalName) payload['external-name'] = upload.externalName;
  const progress = uploadProgressWriter({
    intervalMs: ctx.progressIntervalMs, live,
    write: (p) => ctx.track(store.updateUpload(upload.id, { progress: p }, { expectStates: ['uploading'] }).catch(() => undefined)),
  });
  const job = ctx.deps.client.submit(fn.imageUpload(upload.buildId), JSON.stringify(payload), {
    unique: ctx.unique(`${upload.buildId}:${upload.provider}:${upload.id}`),
    onStatus: (n, d) => { if (live()) progress(n, d); },
    onData: (data) => {
      const retrying = parseUploadAttempt(data);
      if (!retrying || !live()) return;
      ctx.log.warn('upload retrying', { uploadId: upload.id, provider: upload.provider, reason: retrying });
      ctx.track(store.updateUpload(upload.id, { reason: retrying }, { expectStates: ['uploading'] }));
    },
  });
  follow(job.result, {
    what: { uploadId: upload.id },
    parse: (data) => parseUploadComplete(data, `WORK_COMPLETE of upload ${upload.id}`),
    onComplete: (outcome) => recordUpload(ctx, upload, outcome),
    fail: (reason) => failUpload(ctx, upload.id, reason),
  });
}

async function recordUpload(ctx: DispatchContext, upload: UploadRecord, outcome: ReturnType<typeof parseUploadComplete>): Promise<void> {
  // With `validate:` the upload is not used until a launcher of its provider has validated it.
  const provider = ctx.deps.config().providers.find((p) => p.name === upload.provider);
  const validate = (provider && imageTarget(provider, upload.imageName)?.validate) ?? null;
  const done = await ctx.guard(() => ctx.deps.store.updateUpload(upload.id, {
    state: validate ? 'validating' : 'ready', externalId: outcome.externalId, externalName: outcome.externalName, format: outcome.format,
    progress: null, reason: validate ? `waiting for a launcher of ${upload.provider} to validate it` : null,
  }, { expectStates: ['uploading'] }), upload.id);
  if (!done) return;
  const fields = { uploadId: upload.id, buildId: upload.buildId, provider: upload.provider, externalId: outcome.externalId };
  if (validate) {
    ctx.log.info('upload complete; validating it before use', { ...fields, label: validate.label, timeout: validate.timeout });
    ctx.events.emit('upload:validating', done);
  } else {
    ctx.log.info('upload ready', fields);
    ctx.events.emit('upload:ready', done);
  }
}

/** Fails an `uploading` record (its job is no longer followed). */
export async function failUpload(ctx: DispatchContext, uploadId: string, reason: string): Promise<void> {
  const failed = await ctx.guard(() => ctx.deps.store.updateUpload(uploadId, { state: 'failed', reason, progress: null }, { expectStates: ['uploading'] }), uploadId);
  if (!failed) return;
  ctx.log.warn('upload failed', { uploadId, provider: failed.provider, buildId: failed.buildId, reason });
  ctx.events.emit('upload:failed', uploadId, reason);
}

/** Fails a `validating` upload the planner resolved (target gone, nobody validated it) and deletes its image. */
export async function failValidation(ctx: DispatchContext, uploadId: string, reason: string): Promise<void> {
  const failed = await ctx.guard(() => ctx.deps.store.updateUpload(uploadId, { state: 'failed', reason, progress: null }, { expectStates: ['validating'] }), uploadId);
  if (!failed) return;
  ctx.log.warn('upload failed validation', { uploadId, provider: failed.provider, buildId: failed.buildId, reason });
  ctx.events.emit('upload:failed', uploadId, reason);
  // The record stays failed with its reason until retention removes it; an image this
  // delete misses is a leak the leak check removes (a failed record accounts for nothing).
  try {
    await deleteCloudImage(ctx, failed);
  } catch (err) {
    ctx.log.warn('deleting the image of a failed validation failed; the leak check retries', { uploadId, error: coerceError(err).message });
  }
}

/** A `validating` upload whose target no longer asks for validation: ready as it is. */
export async function skipValidation(ctx: DispatchContext, uploadId: string, why: string): Promise<void> {
  const ready = await ctx.guard(() => ctx.deps.store.updateUpload(uploadId, { state: 'ready', reason: null }, { expectStates: ['validating'] }), uploadId);
  if (!ready) return;
  ctx.log.info('upload ready without validation', { uploadId: ready.id, provider: ready.provider, why });
  ctx.events.emit('upload:ready', ready);
}

/** Marks an upload deleting, then deletes its cloud image and its record in the background. */
export async function deleteUpload(ctx: DispatchContext, uploadId: string, reason: string): Promise<void> {
  if (ctx.uploadDeletes.has(uploadId)) return;
  const upload = await ctx.deps.store.updateUpload(uploadId, { state: 'deleting', reason }, { expectStates: ['ready', 'failed', 'deleting'] });
  if (!upload) return;
  ctx.uploadDeletes.add(uploadId);
  ctx.track((async () => {
    try {
      await deleteCloudImage(ctx, upload);
      await ctx.deps.store.deleteUpload(uploadId);
      ctx.log.info('upload deleted', { uploadId, provider: upload.provider, externalId: upload.externalId, reason });
      ctx.events.emit('upload:deleted', uploadId);
    } catch (err) {
      ctx.log.warn('deleting an upload failed; the next pass retries', { uploadId, provider: upload.provider, error: coerceError(err).message });
    } finally {
      ctx.uploadDeletes.delete(uploadId);
    }
  })());
}

/** Deletes an upload's image in its provider (none yet: nothing to do). */
async function deleteCloudImage(ctx: DispatchContext, upload: UploadRecord): Promise<void> {
  if (!upload.externalId) return;
  const provider = ctx.deps.config().providers.find((p) => p.name === upload.provider);
  if (provider && takesImages(provider)) {
    const service = await ctx.deps.imageServices(provider);
    await service.delete(upload.externalId);
  } else {
    ctx.log.warn('provider is gone from the config: its cloud image cannot be deleted here; delete it by hand', {
      uploadId: upload.id, provider: upload.provider, externalId: upload.externalId,
    });
  }
}
