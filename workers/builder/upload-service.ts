/**
 * Serves `image-upload:<id>`: picks the file in the provider's format (converting with
 * qemu-img when the build lacks it), streams it to the provider's image service with
 * progress, and returns `{"external-id", "external-name", "format"}`. Tracks in-flight
 * uploads per id so a delete waits for them.
 *
 * Verified bytes: the bytes the driver reads to send are hashed in the same pass (sha256 and
 * the cloud's algorithm, {@link UploadDigest}); a file whose size or sha256 is not the one
 * recorded at build time is refused, and an image whose cloud hash differs from the bytes
 * sent is deleted. Nothing reads these hashes back later: they are checked here and logged.
 *
 * A provider's `post-upload-hook` runs last, on the verified upload (post-upload-hook.ts): when
 * it fails, the image is deleted and the job fails. Without a hook nothing changes.
 */
import { stat } from 'node:fs/promises';
import type { Config } from '../../lib/config/schema.js';
import type { ImageService, UploadedImage } from '../../lib/drivers/contract/image-service.js';
import type { ImageServiceFactory } from '../../lib/drivers/core/driver-hosts.js';
import {
  AbortedError, CloudHashMismatchError, coerceError, ImageFileChangedError, InvalidJobError, UnknownImageError, UploadTimeoutError,
} from '../../lib/errors.js';
import type { WorkerJob } from '../../lib/gearman/worker.js';
import { imageTarget, takesImages } from '../../lib/drivers/config-registry.js';
import { conversionSource } from '../../lib/images/formats.js';
import { imagePaths } from '../../lib/images/image-file.js';
import type { Logger } from '../../lib/log.js';
import { convertImage } from './convert.js';
import { BUILDER_DEFAULTS } from './builder-defaults.js';
import { SharedWork } from './shared-work.js';
import type { ImageRepository, ImageSidecar } from './image-repository.js';
import { externalImageName } from '../../lib/images/external-name.js';
import { parseUploadPayload } from './job-payloads.js';
import { retryableUploadError, UPLOAD_ATTEMPTS, uploadRetryDelayMs, type UploadAttemptData } from './upload-retry.js';
import { sleep } from '../../lib/lifecycle.js';
import { compareCloudHash, UploadDigest, type RecordedFile } from './upload-digest.js';
import { readDibChecksum } from './verify-output.js';
import { runPostUploadHook, type HookCall } from './post-upload-hook.js';


/** Dependencies of {@link UploadService}. */
export interface UploadServiceDeps {
  repo: ImageRepository;
  log: Logger;
  imageServices: ImageServiceFactory;
  qemuImg?: string | undefined;
  config(): Config;
  shutdown: AbortSignal;
  /** Wait before the second attempt of an upload (doubling after), default 5000 ms. */
  retryDelayMs?: number;
  /** The environment of post-upload-hooks (bin/ passes process.env); undefined: the builder's own. */
  env?: Readonly<Record<string, string | undefined>> | undefined;
}

/** The WORK_COMPLETE payload of an upload, and the provider it went to. */
export interface UploadResult {
  provider: string;
  payload: { 'external-id': string; 'external-name': string; format: string };
}

/**
 * Sends WORK_STATUS at most every 250 ms (and at the end), so big uploads do not flood
 * gearmand; a sample held back is sent when its window ends, so a stalled upload shows where it
 * stopped, not where it was 250 ms earlier.
 */
function throttledStatus(job: WorkerJob): (sent: number, total: number) => void {
  let last = 0;
  let held: [number, number] | undefined;
  let timer: NodeJS.Timeout | undefined;
  const send = (sent: number, total: number): void => {
    clearTimeout(timer);
    timer = undefined;
    held = undefined;
    last = Date.now();
    job.sendStatus(sent, total);
  };
  return (sent, total) => {
    const wait = last + 250 - Date.now();
    if (sent >= total || wait <= 0) return send(sent, total);
    held = [sent, total];
    timer ??= setTimeout(() => { if (held) send(...held); }, wait);
    timer.unref();
  };
}

export class UploadService {
  private readonly conversions = new SharedWork();
  private readonly inFlight = new Map<string, Set<Promise<unknown>>>();
  /** Info lines logged once per provider (a cloud without hashes, a driver without the tap). */
  private readonly saidOnce = new Set<string>();

  constructor(private readonly deps: UploadServiceDeps) {}

  /** Resolves when no upload of `id` is running any more. */
  async settled(id: string): Promise<void> {
    const set = this.inFlight.get(id);
    if (set) await Promise.allSettled([...set]);
  }

  upload(job: WorkerJob, sidecar: ImageSidecar, log: Logger): Promise<UploadResult> {
    const id = sidecar['image-id'];
    const p = this.doUpload(job, sidecar, log);
    let set = this.inFlight.get(id);
    if (!set) this.inFlight.set(id, (set = new Set()));
    set.add(p);
    const done = (): void => {
      set.delete(p);
      if (set.size === 0) this.inFlight.delete(id);
    };
    p.then(done, done);
    return p;
  }

  private async doUpload(job: WorkerJob, sidecar: ImageSidecar, log: Logger): Promise<UploadResult> {
    const id = sidecar['image-id'];
    const req = parseUploadPayload(job.data, id);
    // The cloud image is named and tagged after image-name: one that is not this build's
    // diskimage would put another diskimage's file under that name (a leak nothing cleans).
    if (req.imageName !== sidecar.diskimage) {
      throw new InvalidJobError(`image-upload:${id}: image-name ${JSON.stringify(req.imageName)} is not the build's diskimage ${sidecar.diskimage}`);
    }
    const config = this.deps.config();
    const provider = config.providers.find((p) => p.name === req.provider);
    if (!provider) throw new UnknownImageError(`provider ${req.provider} is not in this builder's config`);
    if (!takesImages(provider)) throw new InvalidJobError(`provider ${req.provider} (driver ${provider.driver}) does not take image uploads`);
    const target = imageTarget(provider, sidecar.diskimage);
    if (!target) throw new UnknownImageError(`provider ${req.provider} does not list diskimage ${sidecar.diskimage}`);
    const { format } = target;
    const signal = AbortSignal.any([this.deps.shutdown, job.signal]);
    const filePath = await this.ensureFormat(sidecar, format, signal, log);
    const recorded = await this.recordedFile(sidecar, format, filePath, log);
    const service = await this.deps.imageServices(provider);
    const cloudAlgos = service.cloudHashAlgos?.() ?? [];
    let digest = new UploadDigest(recorded, cloudAlgos);
    const name = req.externalName ?? externalImageName(target.nameFormat, {
      imageName: req.imageName, timestamp: Math.floor(Date.now() / 1000), buildId: id, uploadId: req.uploadId,
    });
    // Nodepool 11's order: the diskimage's metadata, the provider image's meta over it, then
    // nodepool_build_id and nodepool_upload_id (here with the server's meta, and our own tags).
    const diskimage = config.diskimages.find((d) => d.name === sidecar.diskimage);
    const properties: Record<string, string> = {
      ...diskimage?.metadata, ...target.meta, ...req.meta,
      nodepool_build_id: id, nodepool_provider_name: provider.name, nodepool_image_name: req.imageName,
    };
    if (req.uploadId !== undefined) properties.nodepool_upload_id = req.uploadId;
    const started = Date.now();
    log.info('upload started', { provider: provider.name, name, format, file: filePath });
    const attempt = async (): Promise<Awaited<ReturnType<typeof service.upload>>> => {
      const timeout = AbortSignal.timeout(target.uploadTimeout * 1000);
      digest = new UploadDigest(recorded, cloudAlgos);
      try {
        return await service.upload({
          name, format, filePath, properties, onProgress: throttledStatus(job), signal: AbortSignal.any([signal, timeout]), onData: digest.tap,
        });
      } catch (err) {
        // The file changed: that, not what a driver may have wrapped it in (and never retried).
        if (digest.failure) throw digest.failure;
        if (!timeout.aborted || signal.aborted) throw err;
        throw new UploadTimeoutError(`upload to ${provider.name} did not finish within ${target.uploadTimeout} s (image-upload-timeout); the partial image was deleted`, { cause: err });
      }
    };
    let uploaded;
    for (let n = 1; ; n++) {
      try {
        uploaded = await attempt();
        break;
      } catch (err) {
        if (n >= UPLOAD_ATTEMPTS || !retryableUploadError(err) || signal.aborted) throw err;
        const delay = uploadRetryDelayMs(n + 1, this.deps.retryDelayMs ?? BUILDER_DEFAULTS.uploadRetryDelayMs);
        const message = (err as Error).message;
        log.warn('upload attempt failed; trying again', { provider: provider.name, attempt: n, of: UPLOAD_ATTEMPTS, retryInMs: delay, error: message });
        const data: UploadAttemptData = { 'upload-attempt': n + 1, attempts: UPLOAD_ATTEMPTS, 'last-error': message };
        job.sendData(JSON.stringify(data));
        await sleep(delay, signal);
      }
    }
    const verified = await this.verify(service, provider.name, uploaded, digest, signal, log);
    if (target.postUploadHook !== null) {
      await this.runHook(service, { script: target.postUploadHook, provider: provider.name, externalId: uploaded.externalId, file: filePath }, target.uploadTimeout, signal, log);
    }
    log.info('upload complete', { provider: provider.name, externalId: uploaded.externalId, durationMs: Date.now() - started, sha256: recorded.sha256, ...verified });
    return { provider: provider.name, payload: { 'external-id': uploaded.externalId, 'external-name': uploaded.externalName, format } };
  }

  /**
   * The file's size and sha256 as recorded when it was built (the sidecar) or converted (its
   * `.sha256`, written right after the conversion); a converted file without one is hashed and
   * recorded now. Thrown: {@link ImageFileChangedError} when its size is not the recorded one.
   */
  private async recordedFile(sidecar: ImageSidecar, format: string, file: string, log: Logger): Promise<RecordedFile> {
    const id = sidecar['image-id'];
    const { size } = await stat(file);
    const built = sidecar.files.find((f) => f.format === format);
    if (built && built.size !== size) {
      throw new ImageFileChangedError(`${file} changed on disk since it was built: it has ${size} bytes, the build recorded ${built.size}; upload refused`);
    }
    let sha256 = built?.sha256 ?? await readDibChecksum(imagePaths.sha256(this.deps.repo.dir, id, format));
    if (sha256 === undefined) {
      log.warn('no sha256 recorded for the converted file; recording it now', { file });
      sha256 = (await this.deps.repo.checksum(id, format)).sha256;
    }
    return { file, size, sha256 };
  }

  /**
   * Checks an upload's bytes: their sha256 against the record (a driver without the tap gets
   * its file read once more here), and the cloud's own hash against theirs. Anything wrong
   * deletes the image in the cloud. Returns what was checked, for the log line.
   * Thrown: {@link ImageFileChangedError}, {@link CloudHashMismatchError}.
   */
  private async verify(service: ImageService, provider: string, uploaded: UploadedImage, digest: UploadDigest, signal: AbortSignal, log: Logger): Promise<Record<string, unknown>> {
    const { externalId } = uploaded;
    try {
      if (!digest.used) {
        this.once(`tap:${provider}`, () => log.info('the driver does not pass the bytes it sends to the builder: hashing the file after the upload', { provider }));
        try {
          await digest.readFile(signal, uploaded.cloudHash ? [uploaded.cloudHash.algo] : []);
        } catch (err) {
          if (signal.aborted) throw new AbortedError(`upload to ${provider} aborted while hashing ${digest.file}`, { cause: err });
          throw err;
        }
      }
      digest.check();
      const verdict = compareCloudHash(uploaded.cloudHash, digest);
      const by = uploaded.cloudHash?.by ?? `provider ${provider}`;
      switch (verdict.kind) {
        case 'match':
          return { cloudHash: `${verdict.algo}:${verdict.value}`, hashVerified: true };
        case 'mismatch':
          throw new CloudHashMismatchError(`${by}'s ${verdict.algo} of image ${externalId} is ${verdict.value}, the bytes sent hash to ${verdict.sent}`);
        case 'not-computed':
          this.once(`algo:${provider}:${verdict.algo}`, () => log.info('the cloud hashes images with an algorithm not computed during the upload: not compared', { provider, algo: verdict.algo, computed: digest.algos }));
          return { cloudHash: `${verdict.algo}:${verdict.value}`, hashVerified: false };
        case 'none':
          this.once(`none:${provider}`, () => log.info('the cloud gives no hash of uploaded images: the upload stands on the sha256 of the bytes sent', { provider }));
          return { hashVerified: false };
      }
    } catch (raw) {
      const err = coerceError(raw);
      log.warn('upload not verified; deleting the image', { provider, externalId, error: err.message });
      try {
        await service.delete(externalId);
        err.message += `; the image was deleted`;
      } catch (delErr) {
        const message = coerceError(delErr).message;
        log.error('could not delete the unverified image', { provider, externalId, error: message });
        err.message += `; deleting image ${externalId} failed: ${message}`;
      }
      throw err;
    }
  }

  /**
   * Runs the provider's post-upload-hook on the verified upload, for at most the target's
   * image-upload-timeout (the budget the operator gave one upload step; Nodepool 11 set none).
   * A failed hook deletes the image it judged. Thrown: `PostUploadHookError`.
   */
  private async runHook(service: ImageService, call: HookCall, timeoutS: number, signal: AbortSignal, log: Logger): Promise<void> {
    try {
      await runPostUploadHook(call, { timeoutS, signal, log, ...(this.deps.env ? { env: definedEnv(this.deps.env) } : {}) });
    } catch (raw) {
      const err = coerceError(raw);
      log.warn('post-upload-hook failed; deleting the image', { provider: call.provider, externalId: call.externalId });
      try {
        await service.delete(call.externalId);
        err.message += `\n(the image ${call.externalId} was deleted)`;
      } catch (delErr) {
        const message = coerceError(delErr).message;
        log.error('could not delete the image the post-upload-hook failed', { provider: call.provider, externalId: call.externalId, error: message });
        err.message += `\n(deleting image ${call.externalId} failed: ${message})`;
      }
      throw err;
    }
  }

  private once(key: string, say: () => void): void {
    if (this.saidOnce.has(key)) return;
    this.saidOnce.add(key);
    say();
  }

  /** Path of `<id>.<format>`, converting from another built format once if needed. */
  private async ensureFormat(sidecar: ImageSidecar, format: string, signal: AbortSignal, log: Logger): Promise<string> {
    const { repo } = this.deps;
    const id = sidecar['image-id'];
    const target = imagePaths.file(repo.dir, id, format);
    if (await repo.hasFile(id, format)) return target;
    const source = conversionSource(await repo.formatsOnDisk(id), format);
    if (!source) {
      const deleted = sidecar['deleted-formats']?.length ? `; deleted after upload (delete-after-upload): ${sidecar['deleted-formats'].join(', ')}` : '';
      throw new UnknownImageError(`image ${id} has no ${format} file and none to convert from (built: ${sidecar.formats.join(', ')}${deleted})`);
    }
    // Uploads of this build to several providers in this format share one conversion; it is
    // cancelled only when every upload waiting on it has been aborted.
    const { started, done } = this.conversions.run(`${id}.${format}`, signal, async (conversionSignal) => {
      await convertImage(imagePaths.file(repo.dir, id, source), source, target, format, { qemuImg: this.deps.qemuImg, signal: conversionSignal });
      await repo.checksum(id, format);
    }, `the conversion of ${id} to ${format}`);
    if (started) log.info('converting image', { from: source, to: format });
    else log.info('waiting for the conversion another upload started', { from: source, to: format });
    await done;
    return target;
  }
}

/** The variables of `env` that have a value. */
function definedEnv(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));
}
