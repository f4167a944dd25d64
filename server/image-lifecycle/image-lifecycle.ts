/**
 * The server's image lifecycle service: every `image-lifecycle.interval` seconds it reads a
 * snapshot (store first, then gearmand's `workers`, so a ready record always has its
 * registration in view), asks the pure planner what to do, lets the dispatcher do it,
 * publishes the status for the CLI, and now and then deletes leaked cloud images.
 */
import { EventEmitter } from 'node:events';
import type { Config } from '../../lib/config/schema.js';
import { gearmanAddresses } from '../../lib/config/gearman-servers.js';
import type { ImageServiceFactory } from '../../lib/drivers/core/driver-hosts.js';
import type { GearmanClient } from '../../lib/gearman/client.js';
import { fn } from '../../lib/gearman/functions.js';
import type { Logger } from '../../lib/log.js';
import { PeriodicLoop } from '../../lib/periodic-loop.js';
import type { Store } from '../../lib/store/store.js';
import { type Plan, type PlannerSnapshot } from './actions.js';
import { ImageDispatcher, type ImageDispatcherEvents } from './dispatcher.js';
import { deleteLeakedImages, type LeakedImage } from './leak-check.js';
import { plan } from './planner.js';
import { fetchRegistrations, unknownAdvertised } from './registrations.js';
import { trackUnknown } from './unknown-ids.js';
import { LIFECYCLE_STATUS_KEY, type LifecycleStatus } from '../../lib/status/lifecycle-status.js';

/** Dependencies of {@link ImageLifecycle}. */
export interface ImageLifecycleDeps {
  store: Store;
  client: GearmanClient;
  /** The current config (reloads take effect at the next pass). */
  config: () => Config;
  imageServices: ImageServiceFactory;
  log: Logger;
  /** Epoch ms (default Date.now). */
  clock?: () => number;
  /** Whether this process may run the pass (one server at a time does); always when omitted. */
  leader?: () => Promise<boolean>;
  /** Called after every pass, failed or not. */
  onLoopPass?: () => void;
}

/** Events of {@link ImageLifecycle}. */
export interface ImageLifecycleEvents extends ImageDispatcherEvents {
  'pass:complete': [plan: Plan];
  'pass:failed': [error: Error];
  'leaks:deleted': [images: LeakedImage[]];
}

export class ImageLifecycle extends EventEmitter<ImageLifecycleEvents> {
  private readonly dispatcher: ImageDispatcher;
  private readonly absentSince = new Map<string, number>();
  /** Advertised image id → since when the store has had no record of it (stray grace). */
  private readonly unknownSince = new Map<string, number>();
  /** Unknown ids first seen while the store had no builds (see `PlannerSnapshot.unknownSuspect`). */
  private readonly unknownSuspect = new Set<string>();
  /** Unaccounted cloud image (`provider/external id`) → since when (leak grace). */
  private readonly leakSince = new Map<string, number>();
  /** The store's installation id, read at the first pass (the store makes it then if new). */
  private installation: string | undefined;
  /** The refusals logged last, so each is logged once when it starts and once when it ends. */
  private held: string[] = [];
  /** Why uploads to each target wait, as last logged. */
  private waiting = new Map<string, string>();
  /** The last plan's config removals (key → since when), the next snapshot's `removedSince`. */
  private removedSince = new Map<string, number>();
  private readonly log: Logger;
  private readonly clock: () => number;
  /** Runs the passes; its health goes into the server's heartbeat. */
  readonly loop: PeriodicLoop;
  private stopping: Promise<void> | undefined;
  private lastLeakCheck = 0;
  /** Leak deletions the last leak check refused, and why (kept until the next check). */
  private leakHeld: string[] = [];

  constructor(private readonly deps: ImageLifecycleDeps) {
    super();
    this.log = deps.log.child({ component: 'image-lifecycle' });
    this.clock = deps.clock ?? Date.now;
    this.dispatcher = new ImageDispatcher({ ...deps, log: this.log, installation: () => this.installation });
    this.loop = new PeriodicLoop({
      name: 'image-lifecycle', log: this.log, intervalMs: () => deps.config().imageLifecycle.interval * 1000,
      pass: async () => { if (!deps.leader || await deps.leader()) await this.runPass(); },
      ...(deps.clock ? { clock: deps.clock } : {}),
      ...(deps.onLoopPass ? { onPass: deps.onLoopPass } : {}),
    });
    this.loop.on('pass:failed', (err) => this.emit('pass:failed', err));
    for (const name of ['build:ready', 'build:failed', 'build:deleted', 'upload:ready', 'upload:failed', 'upload:deleted'] as const) {
      this.dispatcher.on(name, (...args: unknown[]) => (this.emit as (e: string, ...a: unknown[]) => boolean)(name, ...args));
    }
  }

  /** Starts the pass loop in the background. */
  start(): void {
    this.loop.start();
  }

  /** Stops after the pass in progress; jobs still running are resumed by the next server. Idempotent. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      await this.loop.stop();
      await this.dispatcher.stop();
      this.log.info('image lifecycle stopped');
    })();
    return this.stopping;
  }

  /** One pass: snapshot → plan → actions → status (and a leak check when due). */
  async runPass(): Promise<Plan> {
    const { store } = this.deps;
    const config = this.deps.config();
    this.installation ??= await store.installationId();
    const [builds, uploads, buildRequests, pauses, pins, revocations, uploadRetries] = await Promise.all([
      store.listBuilds(), store.listUploads(), store.listBuildRequests(), store.listPauses(), store.listPins(), store.listRevocations(),
      store.listUploadRetries(),
    ]);
    const registered = await fetchRegistrations(gearmanAddresses(config), this.log);
    const now = this.clock();
    this.trackAbsence(builds, registered, now);
    if (registered) this.trackUnknownIds(unknownAdvertised(registered, builds), builds.length === 0, now);
    const snapshot: PlannerSnapshot = {
      now, config, builds, uploads, buildRequests, pauses, pins, revocations, uploadRetries, registered,
      absentSince: this.absentSince, removedSince: this.removedSince, unknownSince: this.unknownSince, unknownSuspect: this.unknownSuspect,
      inFlight: this.dispatcher.inFlight(),
    };
    const result = plan(snapshot);
    this.logRemovals(result.removals, config, now);
    if (result.actions.length) this.log.debug('plan', { actions: result.actions });
    await this.dispatcher.execute(result.actions, registered);
    const leakEvery = config.imageLifecycle.leakCheckInterval * 1000;
    if (leakEvery > 0 && now - this.lastLeakCheck >= leakEvery) {
      this.lastLeakCheck = now;
      const leaks = await deleteLeakedImages(config, {
        readUploads: () => store.listUploads(),
        readCorruptUploads: async () => (await store.listCorrupt({ kinds: ['upload'] })).map((c) => c.id), builds, installation: this.installation, since: this.leakSince, now,
      }, this.deps.imageServices, this.log);
      this.leakHeld = leaks.held;
      if (leaks.deleted.length) this.emit('leaks:deleted', leaks.deleted);
    }
    const held = [...result.held, ...this.leakHeld];
    this.logHeld(held);
    this.logWaiting(result.targets);
    const status: LifecycleStatus = { diskimages: result.diskimages, targets: result.targets, ...(held.length ? { held } : {}) };
    await store.putStatus(LIFECYCLE_STATUS_KEY, status);
    this.emit('pass:complete', result);
    return result;
  }

  /** Resolves when every job and delete started so far has settled (tests). */
  settled(): Promise<void> {
    return this.dispatcher.settled();
  }

  /** Keeps since when each advertised id has been unknown, and which were there while the store was empty. */
  private trackUnknownIds(unknown: string[], storeEmpty: boolean, now: number): void {
    trackUnknown(this.unknownSince, unknown, now);
    if (storeEmpty) for (const id of unknown) this.unknownSuspect.add(id);
    for (const id of this.unknownSuspect) if (!this.unknownSince.has(id)) this.unknownSuspect.delete(id);
  }

  /** Warns of each refused deletion when it starts, and says when it ends. */
  private logHeld(held: string[]): void {
    for (const why of held) if (!this.held.includes(why)) this.log.warn('refusing to delete what this store does not know', { why, installation: this.installation });
    for (const why of this.held) if (!held.includes(why)) this.log.info('no longer refusing deletions', { was: why });
    this.held = held;
  }

  /** Says once why uploads to a target wait (e.g. the build's file was deleted after upload), when that reason appears or changes. */
  private logWaiting(targets: LifecycleStatus['targets']): void {
    const now = new Map<string, string>();
    for (const t of targets) {
      if (t.waiting === null) continue;
      const key = `${t.diskimage} ${t.provider}`;
      now.set(key, t.waiting);
      if (this.waiting.get(key) !== t.waiting) this.log.info('uploads wait', { diskimage: t.diskimage, provider: t.provider, why: t.waiting });
    }
    this.waiting = now;
  }

  /** Logs config removals when first seen (pending) and when they end before their grace is over. */
  private logRemovals(removals: Map<string, number>, config: Config, now: number): void {
    const graceS = config.imageLifecycle.configRemovalGrace;
    for (const [what, since] of removals) {
      if (!this.removedSince.has(what)) {
        this.log.warn('left the config: its images are deleted after the grace period unless it comes back', { what, graceS, deleteAfter: new Date(since + graceS * 1000).toISOString() });
      }
    }
    for (const [what, since] of this.removedSince) {
      if (!removals.has(what) && now - since < graceS * 1000) this.log.info('config removal no longer pending (back in the config, or no records of it left)', { what });
    }
    this.removedSince = removals;
  }

  /** Keeps, per ready or lost build, since when its upload function has been unregistered. */
  private trackAbsence(builds: PlannerSnapshot['builds'], registered: PlannerSnapshot['registered'], now: number): void {
    const watched = new Set<string>();
    for (const b of builds) {
      if (b.state !== 'ready' && b.state !== 'lost') continue;
      watched.add(b.id);
      if (registered === null) continue;
      if (registered.get(fn.imageUpload(b.id))?.length) this.absentSince.delete(b.id);
      else if (!this.absentSince.has(b.id)) this.absentSince.set(b.id, now);
    }
    for (const id of this.absentSince.keys()) if (!watched.has(id)) this.absentSince.delete(id);
  }
}
