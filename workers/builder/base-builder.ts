/**
 * BaseBuilder: everything a nodepool-builder does that is not DIB. It owns the Gearman
 * workers, registers `image-build:<diskimage>` for every diskimage it may build and
 * `image-upload:<id>` / `image-delete:<id>` for every complete image on its disk (and
 * `image-delete:<id>` while it builds `<id>`, to refuse it: "build in progress"), validates
 * job payloads before any path is touched, runs builds with a per-build log, TMPDIR,
 * timeout and abort, and serves uploads (with conversion) and deletes.
 * Subclasses give only their build methods (build-method.ts), by the diskimages' `builder` key:
 * `image-build:<name>` is registered for the diskimages this builder has a method for.
 */
import { EventEmitter } from 'node:events';
import { mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../../lib/config/schema.js';
import { gearmanAddresses } from '../../lib/config/gearman-servers.js';
import { AbortedError, BuilderError, UnknownImageError } from '../../lib/errors.js';
import { builderClientId } from '../../lib/gearman/client-id.js';
import { fn } from '../../lib/gearman/functions.js';
import { GearmanWorker, type WorkerJob } from '../../lib/gearman/worker.js';
import type { Logger } from '../../lib/log.js';
import { processSecrets } from '../../lib/redact.js';
import { BUILDER_DEFAULTS } from './builder-defaults.js';
import type { BaseBuilderOptions, BuilderActivity, BuilderEvents } from './builder-options.js';
import { cleanupBuildTmp } from './dib-cleanup.js';
import { ImageRepository, type ImageSidecar } from './image-repository.js';
import { parseBuildPayload, parseDeletePayload, parseUploadPayload } from './job-payloads.js';
import { checkInstallation, checkServes } from './installation-check.js';
import { reportOutcome } from './outcome.js';
import { builderIdentity } from './identity.js';
import { UploadService } from './upload-service.js';
import { deleteFormats, type FormatsDeletedPayload } from './format-delete.js';
import type { BuildMethods } from './build-method.js';
import { IMAGE_CACHE_ENTRY, runBuild, type BuildContext } from './run-build.js';

export type { BaseBuilderOptions, BuilderActivity, BuilderEvents } from './builder-options.js';

type State = 'new' | 'starting' | 'running' | 'stopping' | 'stopped' | 'failed';

export abstract class BaseBuilder extends EventEmitter<BuilderEvents> {
  protected config: Config;
  protected readonly log: Logger;
  readonly hostname: string;
  private builderId = '';
  private state: State = 'new';
  private stopping?: Promise<void>;
  private readonly shutdown = new AbortController();
  private readonly repo: ImageRepository;
  private readonly uploads: UploadService;
  private readonly local = new Map<string, ImageSidecar>();
  private readonly building = new Map<string, Promise<ImageSidecar>>();
  private readonly deleting = new Set<string>();
  /** `image-delete:<id>` jobs running here, by id (the function is dropped only when none is). */
  private readonly deleteJobs = new Map<string, number>();
  private buildWorker?: GearmanWorker;
  private uploadWorker?: GearmanWorker;
  /** Where this builder's port serves build logs (`http://host:port/build-logs/`), if it does. */
  private buildLogBase: string | undefined;

  constructor(protected readonly opts: BaseBuilderOptions) {
    super();
    this.config = opts.config;
    this.log = opts.log.child({ component: 'builder' });
    this.hostname = opts.hostname ?? BUILDER_DEFAULTS.hostname;
    this.repo = new ImageRepository(opts.config.imagesDir, this.log);
    this.uploads = new UploadService({
      repo: this.repo, log: this.log, imageServices: opts.imageServices, qemuImg: opts.qemuImg,
      config: () => this.config, shutdown: this.shutdown.signal, env: opts.env,
      ...(opts.uploadRetryDelayMs !== undefined ? { retryDelayMs: opts.uploadRetryDelayMs } : {}),
    });
  }

  /** How this builder makes images, by the diskimage's `builder` key; others are not registered. */
  protected abstract readonly buildMethods: BuildMethods;

  /** `<hostname>:<builder-id>`, the Gearman client id the server maps files to. */
  get clientId(): string {
    return builderClientId(this.hostname, this.builderId);
  }

  /** Ids of complete images held here. */
  localImages(): string[] {
    return [...this.local.keys()].sort();
  }

  async start(): Promise<void> {
    if (this.state !== 'new') throw new Error(`builder cannot start from state ${this.state}`);
    this.state = 'starting';
    try {
      await this.repo.ensureDir();
      await mkdir(this.config.buildTmpDir, { recursive: true });
      this.builderId = await builderIdentity(this.config.imagesDir);
      await this.cleanupStaleBuilds();
      for (const method of Object.values(this.buildMethods)) await method?.start?.({ config: this.config, builderId: this.builderId, log: this.log });
      const scan = await this.repo.scan();
      if (scan.removed.length) this.log.info('removed incomplete build leftovers', { entries: scan.removed });
      if (scan.ignored.length) this.log.debug('ignoring entries that are not images', { entries: scan.ignored });
      const servers = gearmanAddresses(this.config);
      const common = { servers, clientId: this.clientId, reconnect: this.opts.reconnect };
      this.buildWorker = new GearmanWorker({ ...common, concurrency: this.opts.buildWorkers ?? BUILDER_DEFAULTS.buildWorkers, log: this.log.child({ worker: 'build' }) });
      this.uploadWorker = new GearmanWorker({ ...common, concurrency: this.opts.uploadWorkers ?? BUILDER_DEFAULTS.uploadWorkers, log: this.log.child({ worker: 'upload' }) });
      this.uploadWorker.on('job:start', (info) => {
        const f = fn.parse(info.functionName);
        if (f?.kind === 'delete') this.deleteJobs.set(f.imageId, (this.deleteJobs.get(f.imageId) ?? 0) + 1);
      });
      this.uploadWorker.on('job:end', (info) => {
        const f = fn.parse(info.functionName);
        if (f?.kind !== 'delete') return;
        const left = (this.deleteJobs.get(f.imageId) ?? 1) - 1;
        if (left > 0) this.deleteJobs.set(f.imageId, left);
        else this.deleteJobs.delete(f.imageId);
        this.releaseDeleteFunction(f.imageId);
      });
      for (const [id, sidecar] of scan.complete) this.registerLocal(id, sidecar);
      this.syncBuildRegistrations();
      await Promise.all([this.buildWorker.start(), this.uploadWorker.start()]);
      this.state = 'running';
      this.log.info('builder started', {
        clientId: this.clientId, images: this.local.size, diskimages: this.buildWorker.registeredFunctions().length,
      });
    } catch (err) {
      this.state = 'failed';
      throw err;
    }
  }

  /**
   * Stops taking jobs, lets running ones finish for up to `abortAfterMs`, then aborts them
   * (DIB's process group is killed, its leftovers cleaned). Idempotent.
   */
  stop(opts: { abortAfterMs?: number } = {}): Promise<void> {
    this.stopping ??= (async () => {
      this.state = 'stopping';
      const abortAfterMs = opts.abortAfterMs ?? BUILDER_DEFAULTS.shutdownTimeoutS * 1000;
      this.log.info('builder stopping', { inFlight: this.inFlight(), abortAfterMs });
      const timer = setTimeout(() => this.abortAll(), abortAfterMs);
      try {
        await Promise.all([
          this.buildWorker?.stop({ abortAfterMs: abortAfterMs + 30_000 }),
          this.uploadWorker?.stop({ abortAfterMs: abortAfterMs + 30_000 }),
        ]);
        await Promise.allSettled([...this.building.values()]);
      } finally {
        clearTimeout(timer);
      }
      this.state = 'stopped';
      this.log.info('builder stopped');
    })();
    return this.stopping;
  }

  /** Aborts running builds and uploads now (second signal or shutdown deadline). */
  abortAll(): void {
    if (!this.shutdown.signal.aborted) this.shutdown.abort(new AbortedError('builder shutting down'));
  }

  /** True once running work was aborted (shutdown deadline or a second signal). */
  aborted(): boolean {
    return this.shutdown.signal.aborted;
  }

  /** Builds and uploads running now, the worker counts and the images held. */
  activity(): BuilderActivity {
    const deletes = [...this.deleteJobs.values()].reduce((a, b) => a + b, 0);
    return {
      builds: this.building.size, uploads: Math.max(0, (this.uploadWorker?.inFlight() ?? 0) - deletes),
      buildWorkers: this.opts.buildWorkers ?? BUILDER_DEFAULTS.buildWorkers, uploadWorkers: this.opts.uploadWorkers ?? BUILDER_DEFAULTS.uploadWorkers, images: this.local.size,
    };
  }

  /** Whether build `id` runs here now (its log may still grow). */
  isBuilding(id: string): boolean {
    return this.building.has(id);
  }

  /**
   * Where this builder's port serves build logs (`http://host:port/build-logs/`, the metrics
   * server sets it once listening), or undefined: builds started from now on report
   * `<base><build-id>` to the server as their `log-url`.
   */
  advertiseBuildLogs(base: string | undefined): void {
    this.buildLogBase = base;
  }

  inFlight(): number {
    return (this.buildWorker?.inFlight() ?? 0) + (this.uploadWorker?.inFlight() ?? 0);
  }

  /** Applies a reloaded config: builds use it from now on; build registrations follow it. */
  reconfigure(config: Config): void {
    this.config = config;
    this.syncBuildRegistrations();
    this.log.info('configuration reloaded', { diskimages: this.buildWorker?.registeredFunctions().filter((f) => fn.parse(f)?.kind === 'build').length });
  }

  /**
   * A builder that died mid-build (SIGKILL, power loss) leaves the build's TMPDIR behind, and
   * with real DIB its mounts and loop devices: undo them before serving again.
   */
  private async cleanupStaleBuilds(): Promise<void> {
    for (const name of await readdir(this.config.buildTmpDir)) {
      if (name === IMAGE_CACHE_ENTRY) continue;
      this.log.info('cleaning up after an interrupted build', { entry: name });
      await cleanupBuildTmp(path.join(this.config.buildTmpDir, name), this.log);
    }
  }

  /** Registers `image-build:<name>` for every diskimage not paused that it can build, and drops the others. */
  private syncBuildRegistrations(): void {
    const worker = this.buildWorker;
    if (!worker) return;
    const wanted = new Set(this.config.diskimages.filter((d) => !d.pause && this.buildMethods[d.builder]).map((d) => fn.imageBuild(d.name)));
    for (const name of worker.registeredFunctions()) {
      if (wanted.has(name)) continue;
      // A build running here for it finishes first: gearmand (--job-retries=1) would fail a job
      // whose function its worker CANT_DOes while holding it, and the build's files would be lost.
      if (worker.inFlightOf(name) > 0) this.log.info('diskimage removed or paused while it builds here: the build finishes, then image-build is unregistered', { function: name });
      void worker.unregister(name);
    }
    for (const name of wanted) {
      if (worker.isRegistered(name)) continue;
      const diskimage = (fn.parse(name) as { diskimage: string }).diskimage;
      worker.register(name, (job) => this.onBuildJob(job, diskimage));
    }
  }

  private registerLocal(id: string, sidecar: ImageSidecar): void {
    this.local.set(id, sidecar);
    this.uploadWorker?.register(fn.imageUpload(id), (job) => this.onUploadJob(job, id));
    this.uploadWorker?.register(fn.imageDelete(id), (job) => this.onDeleteJob(job, id));
  }

  /**
   * Drops `image-delete:<id>` once nothing here needs it: no complete image, no build and no
   * delete job of that id. gearmand drops a job whose function its worker CANT_DOes before
   * answering it (WORK_COMPLETE then gets ERROR JOB_NOT_FOUND), so this runs after replies.
   */
  private releaseDeleteFunction(id: string): void {
    if (this.local.has(id) || this.building.has(id) || this.deleteJobs.has(id)) return;
    void this.uploadWorker?.unregister(fn.imageDelete(id));
  }

  private jobLog(job: WorkerJob, extra: Record<string, unknown>): Logger {
    return this.log.child({ job: job.handle, fn: job.functionName, ...extra });
  }

  private onBuildJob(job: WorkerJob, diskimage: string) {
    const log = this.jobLog(job, { diskimage });
    return reportOutcome(log, async () => {
      const known = new Set(this.config.diskimages.map((d) => d.name));
      const req = parseBuildPayload(job.data, diskimage, known);
      if (req.logToken !== undefined) processSecrets.add(req.logToken, { transient: true });
      checkServes(this.opts.installation, req, `build of ${req.imageId}`, this.clientId);
      // Tells the server who runs the build, so it notices when this builder disappears, and
      // where its log is served while it runs and after (issue 25 §2).
      const logUrl = this.buildLogBase === undefined ? null : `${this.buildLogBase}${encodeURIComponent(req.imageId)}`;
      job.sendData(JSON.stringify({ builder: this.hostname, 'builder-id': this.builderId, 'log-url': logUrl }));
      const existing = this.local.get(req.imageId);
      if (existing) {
        checkInstallation(existing, req, 'build', this.clientId);
        const theirs = existing['build-created'];
        if (req.created !== undefined && theirs !== undefined && theirs !== req.created) {
          throw new BuilderError(`${req.imageId} here is another build with the same id (asked for at ${new Date(theirs).toISOString()}, this job at ${new Date(req.created).toISOString()}): was the server's state reset or restored? Not answering with its files`);
        }
        log.info('build already complete here, answering with it', { buildId: req.imageId });
        return completePayload(existing);
      }
      let running = this.building.get(req.imageId);
      if (running) log.info('build already running here, attaching to it', { buildId: req.imageId });
      else {
        running = runBuild(this.buildContext(), req, job, log.child({ buildId: req.imageId }));
        this.building.set(req.imageId, running);
        // image-delete:<id> is served during the build so that a delete sent now is refused
        // ("build in progress") instead of waiting in gearmand and destroying the build the
        // moment it completes, while the build reports success.
        this.uploadWorker?.register(fn.imageDelete(req.imageId), (j) => this.onDeleteJob(j, req.imageId));
        void running.finally(() => {
          this.building.delete(req.imageId);
          this.releaseDeleteFunction(req.imageId);
        }).catch(() => undefined);
      }
      const built = await running;
      checkInstallation(built, req, 'build', this.clientId);
      return completePayload(built);
    });
  }

  /** What {@link runBuild} reads and calls; `config` is read live, as a reload may replace it mid-build. */
  private buildContext(): BuildContext {
    const current = (): Config => this.config;
    return {
      get config() { return current(); }, clientId: this.clientId, hostname: this.hostname, builderId: this.builderId,
      buildMethods: this.buildMethods, repo: this.repo, shutdown: this.shutdown.signal, qemuImg: this.opts.qemuImg,
      registerLocal: (id, sidecar) => this.registerLocal(id, sidecar), events: this,
    };
  }

  private onUploadJob(job: WorkerJob, id: string) {
    const log = this.jobLog(job, { buildId: id });
    return reportOutcome(log, async () => {
      const sidecar = this.local.get(id);
      if (!sidecar || this.deleting.has(id)) throw new UnknownImageError(`image ${id} is not held by ${this.clientId}`);
      checkInstallation(sidecar, parseUploadPayload(job.data, id), 'upload', this.clientId);
      const result = await this.uploads.upload(job, sidecar, log);
      this.emit('upload:complete', { imageId: id, provider: result.provider, externalId: result.payload['external-id'] });
      return result.payload;
    });
  }

  private onDeleteJob(job: WorkerJob, id: string) {
    const log = this.jobLog(job, { buildId: id });
    return reportOutcome(log, async () => {
      const req = parseDeletePayload(job.data);
      // Refused, not queued: the sender decides again once the build has ended.
      if (this.building.has(id)) throw new BuilderError(`image ${id} not deleted: build in progress on ${this.clientId}`);
      const held = this.local.get(id);
      if (!held) throw new UnknownImageError(`image ${id} is not held by ${this.clientId}`);
      checkInstallation(held, req, 'delete', this.clientId);
      if (req.formats) return this.deleteSomeFormats(id, held, req.formats, log);
      this.deleting.add(id);
      try {
        await this.uploads.settled(id);
        const removed = await this.repo.removeAll(id);
        void this.uploadWorker?.unregister(fn.imageUpload(id));
        this.local.delete(id);
        // image-delete:<id> itself is dropped after the reply (job:end → releaseDeleteFunction).
        log.info('image deleted', { removed });
        this.emit('image:deleted', { imageId: id });
        return {};
      } finally {
        this.deleting.delete(id);
      }
    });
  }

  /** `image-delete:<id>` with `formats` (delete-after-upload): those files go, the build stays. */
  private async deleteSomeFormats(id: string, held: ImageSidecar, formats: string[], log: Logger): Promise<FormatsDeletedPayload> {
    // Uploads of the build running now finish first (one may be converting from these files).
    await this.uploads.settled(id);
    const done = await deleteFormats(this.repo, held, formats);
    if (this.local.get(id) === held) this.local.set(id, done.sidecar);
    log.info('local files deleted after upload', { formats, removed: done.removed, freedBytes: done.payload['freed-bytes'] });
    return done.payload;
  }
}

/** The WORK_COMPLETE payload of `image-build:<name>`. */
function completePayload(s: ImageSidecar): Record<string, unknown> {
  return { 'image-id': s['image-id'], builder: s.builder, 'builder-id': s['builder-id'], formats: s.formats, files: s.files };
}
