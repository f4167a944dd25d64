/**
 * The planner's working view of one snapshot: records indexed by diskimage, build and
 * image-provider pair, with the states this pass has already decided (a build failed or
 * marked lost here is seen as such by the later rules), the pins and revocations on each
 * build, and the action list that refuses a second action for one record. Built to stay linear in records with few allocations: a
 * pass over 100,000 uploads must not be dominated by garbage collection.
 */
import type { DiskimageConfig } from '../../lib/config/schema.js';
import { imageTargets } from '../../lib/drivers/config-registry.js';
import { formatsFor } from '../../lib/images/formats.js';
import { byCreated, hasSequenceOrder, parseImageId, UPLOAD_SEQ_RE } from '../../lib/images/image-file.js';
import type { BuildRecord, BuildState, PinRecord, RevocationRecord, UploadRecord, UploadState } from '../../lib/store/models.js';
import type { ValidationSpec } from '../../lib/drivers/contract/validate-config.js';
import type { Action, PlannerSnapshot } from './actions.js';
import type { PausedBy } from '../../lib/status/lifecycle-status.js';

/** A build as this pass sees it. */
export interface WorkingBuild {
  readonly rec: BuildRecord;
  /**
   * The id's sequence number (-1 when the id is malformed, so it sorts oldest); where its
   * diskimage has a Nodepool 11 uuid build, its rank by creation instead.
   */
  readonly seq: number;
  state: BuildState;
  stateTime: number;
  reason: string | null;
  /** Its upload records, ascending by upload id. */
  readonly uploads: WorkingUpload[];
  /** Whether this pass has an action for it. */
  touched: boolean;
  /** The pins naming it (diskimage-wide or per provider); empty when none. */
  pins: readonly PinRecord[];
  /** Its revocation, when an operator revoked it. */
  revoked: RevocationRecord | undefined;
}

const NO_PINS: readonly PinRecord[] = Object.freeze([]);

/** An upload as this pass sees it. */
export interface WorkingUpload {
  readonly rec: UploadRecord;
  readonly seq: number;
  /** The uploads of the same diskimage to the same provider. */
  readonly pair: UploadPair;
  state: UploadState;
  stateTime: number;
  reason: string | null;
  /** Its build, when the store still has it. */
  readonly build: WorkingBuild | undefined;
  /** Set by retention: one of the two newest ready uploads of its pair. */
  kept: boolean;
  /** Whether this pass has an action for it. */
  touched: boolean;
}

/** One provider's image target, for a configured diskimage. */
export interface UploadTarget {
  readonly provider: string;
  readonly imageName: string;
  readonly diskimage: DiskimageConfig;
  /** The provider diskimage's own `pause`. */
  readonly configPaused: boolean;
  /** The provider diskimage's `validate:`; null: uploads are ready once uploaded. */
  readonly validate: ValidationSpec | null;
  readonly pair: UploadPair;
}

/** All uploads of one diskimage to one provider, ascending by upload id. */
export interface UploadPair {
  readonly diskimage: string;
  readonly provider: string;
  readonly uploads: WorkingUpload[];
  /** The configured target, if the provider still lists the diskimage. */
  target: UploadTarget | undefined;
  /** Set by retention: the newest ready upload. */
  newestReady: WorkingUpload | undefined;
  /** When an operator last asked to retry uploads here now (`POST /api/upload/<id>/retry`), if a request stands. */
  retryRequested: number | undefined;
}

/** What {@link PlanView.emit} keeps one action per: a record, or the key of one without a working copy. */
export type ActionSubject = WorkingBuild | WorkingUpload | string;

function sequenceOf(id: string): number {
  try {
    return parseImageId(id).sequence ?? -1;
  } catch {
    return -1;
  }
}

/** Upload ids are 10-digit numbers; a malformed one sorts oldest. */
function uploadSequenceOf(id: string): number {
  const n = Number(id);
  return Number.isSafeInteger(n) ? n : -1;
}

function push<K, V>(m: Map<K, V[]>, k: K, v: V): void {
  const list = m.get(k);
  if (list) list.push(v);
  else m.set(k, [v]);
}

const bySeq = (a: { seq: number }, b: { seq: number }): number => a.seq - b.seq;

/** Stores usually list records in id order; checking is cheaper than sorting 100,000 again. */
function isSorted(list: ReadonlyArray<{ seq: number }>): boolean {
  for (let i = 1; i < list.length; i++) if ((list[i] as { seq: number }).seq < (list[i - 1] as { seq: number }).seq) return false;
  return true;
}

/**
 * Sorts `list` oldest first: by sequence when every id has one (`sequenced`), else (a Nodepool
 * 11 uuid build, or an upload under one, is there) by creation, with `seq` set to the rank.
 */
function byAge<T extends { seq: number; rec: { id: string; created: number } }>(list: T[], sequenced: boolean): void {
  if (sequenced) {
    list.sort(bySeq);
    return;
  }
  list.sort((a, b) => byCreated(a.rec, b.rec));
  list.forEach((x, i) => { (x as { seq: number }).seq = i; });
}

/** One pass's indexes and working states over a snapshot, and the actions decided so far. */
export class PlanView {
  readonly now: number;
  readonly snapshot: PlannerSnapshot;
  readonly lifecycle: PlannerSnapshot['config']['imageLifecycle'];
  /** Configured diskimages by name, in config order. */
  readonly diskimages = new Map<string, DiskimageConfig>();
  /** Diskimages some provider takes, or with explicit formats. */
  readonly needed = new Set<string>();
  /** Configured upload targets, in provider then provider-diskimage order. */
  readonly targets: UploadTarget[] = [];
  /** Every build, grouped by diskimage (configured ones first, in config order), ascending. */
  readonly builds: WorkingBuild[] = [];
  readonly buildById = new Map<string, WorkingBuild>();
  readonly buildsByDiskimage = new Map<string, WorkingBuild[]>();
  /** Every upload, ascending by upload id. */
  readonly uploads: WorkingUpload[];
  readonly actions: Action[] = [];
  /** Deletions refused in this pass, and why (the plan's `held`). */
  readonly held: string[] = [];
  /** Config removals this pass met, and since when (the plan's `removals`). */
  readonly removals = new Map<string, number>();
  /** Every image-provider pair with uploads, a target or a pause, in creation order. */
  readonly pairList: UploadPair[] = [];
  /** diskimage → provider → pair. */
  private readonly pairs = new Map<string, Map<string, UploadPair>>();
  /** Subjects without a working copy (requests, stray image ids) that have an action. */
  private readonly touched = new Set<string>();
  private readonly buildPauses = new Set<string>();
  private readonly uploadPauses = new Set<UploadPair>();
  private clientIdSet: Set<string> | undefined;
  /** Per diskimage: the formats of the providers that take it. */
  private readonly listedFormats = new Map<string, Set<string>>();

  /**
   * Whether what `key` names ({@link removalKey}) has been missing from the config for the
   * grace period; notes it as missing since the earlier pass that saw it so, or now.
   */
  removalDue(key: string): boolean {
    const since = this.removals.get(key) ?? this.snapshot.removedSince.get(key) ?? this.now;
    this.removals.set(key, since);
    return this.now - since >= this.lifecycle.configRemovalGrace * 1000;
  }

  constructor(snapshot: PlannerSnapshot) {
    this.snapshot = snapshot;
    this.now = snapshot.now;
    const { config } = snapshot;
    this.lifecycle = config.imageLifecycle;
    for (const d of config.diskimages) {
      this.diskimages.set(d.name, d);
      if (d.formats) this.needed.add(d.name);
    }
    for (const p of config.providers) {
      for (const t of imageTargets(p)) {
        const diskimage = this.diskimages.get(t.diskimage);
        if (!diskimage) continue;
        this.needed.add(t.diskimage);
        let formats = this.listedFormats.get(t.diskimage);
        if (!formats) this.listedFormats.set(t.diskimage, (formats = new Set()));
        formats.add(t.format);
        const pair = this.pair(t.diskimage, p.name);
        pair.target = { provider: p.name, imageName: t.diskimage, diskimage, configPaused: t.pause, validate: t.validate, pair };
        this.targets.push(pair.target);
      }
    }
    for (const r of snapshot.uploadRetries ?? []) {
      const pair = this.pair(r.diskimage, r.provider);
      pair.retryRequested = Math.max(pair.retryRequested ?? r.requested, r.requested);
    }
    for (const pr of snapshot.pauses) {
      if (pr.provider === null) this.buildPauses.add(pr.diskimage);
      else this.uploadPauses.add(this.pair(pr.diskimage, pr.provider));
    }

    for (const d of this.diskimages.keys()) this.buildsByDiskimage.set(d, []);
    for (const rec of snapshot.builds) {
      const b: WorkingBuild = {
        rec, seq: sequenceOf(rec.id), state: rec.state, stateTime: rec.stateTime, reason: rec.reason, uploads: [], touched: false,
        pins: NO_PINS, revoked: undefined,
      };
      this.buildById.set(rec.id, b);
      push(this.buildsByDiskimage, rec.diskimage, b);
    }
    // A pin or revocation names its build by diskimage and id; one naming no build here is ignored.
    for (const pin of snapshot.pins ?? []) {
      const b = this.buildById.get(pin.buildId);
      if (b?.rec.diskimage === pin.diskimage) b.pins = [...b.pins, pin];
    }
    for (const r of snapshot.revocations ?? []) {
      const b = this.buildById.get(r.buildId);
      if (b?.rec.diskimage === r.diskimage) b.revoked = r;
    }
    const unconfigured = [...this.buildsByDiskimage.keys()].filter((d) => !this.diskimages.has(d)).sort();
    for (const d of [...this.diskimages.keys(), ...unconfigured]) {
      const list = this.buildsByDiskimage.get(d) ?? [];
      byAge(list, hasSequenceOrder(list.map((b) => b.rec.id)));
      for (const b of list) this.builds.push(b);
    }

    this.uploads = snapshot.uploads.map((rec) => ({
      rec, seq: uploadSequenceOf(rec.id), pair: this.pair(rec.diskimage, rec.provider), state: rec.state, stateTime: rec.stateTime,
      reason: rec.reason, build: this.buildById.get(rec.buildId), kept: false, touched: false,
    }));
    if (!this.uploads.every((u) => UPLOAD_SEQ_RE.test(u.rec.id))) byAge(this.uploads, false);
    else if (!isSorted(this.uploads)) this.uploads.sort(bySeq);
    for (const u of this.uploads) {
      u.build?.uploads.push(u);
      u.pair.uploads.push(u);
    }
  }

  /** The pair of `diskimage` and `provider`, created empty when new. */
  private pair(diskimage: string, provider: string): UploadPair {
    let byProvider = this.pairs.get(diskimage);
    if (!byProvider) this.pairs.set(diskimage, (byProvider = new Map()));
    let pair = byProvider.get(provider);
    if (!pair) {
      pair = { diskimage, provider, uploads: [], target: undefined, newestReady: undefined, retryRequested: undefined };
      byProvider.set(provider, pair);
      this.pairList.push(pair);
    }
    return pair;
  }

  /** Adds an action unless the record already has one in this pass; true when added. */
  emit(subject: ActionSubject, action: Action): boolean {
    if (typeof subject === 'string') {
      if (this.touched.has(subject)) return false;
      this.touched.add(subject);
    } else {
      if (subject.touched) return false;
      subject.touched = true;
    }
    this.actions.push(action);
    return true;
  }

  /** Whether gearmand's admin answered this pass. */
  get adminReachable(): boolean {
    return this.snapshot.registered !== null;
  }

  /** Client ids registering `name` (none when gearmand's admin did not answer). */
  holders(name: string): readonly string[] {
    return this.snapshot.registered?.get(name) ?? [];
  }

  isRegistered(name: string): boolean {
    return this.holders(name).length > 0;
  }

  /** Whether any function is registered by `clientId`. */
  isConnected(clientId: string): boolean {
    if (!this.clientIdSet) {
      this.clientIdSet = new Set();
      for (const ids of this.snapshot.registered?.values() ?? []) for (const id of ids) this.clientIdSet.add(id);
    }
    return this.clientIdSet.has(clientId);
  }

  /** Why a diskimage's builds are paused. */
  buildPausedBy(d: DiskimageConfig): PausedBy | null {
    if (d.pause) return 'config';
    return this.buildPauses.has(d.name) ? 'operator' : null;
  }

  /** Why uploads to a target are paused. */
  uploadPausedBy(t: UploadTarget): PausedBy | null {
    if (t.configPaused) return 'config';
    return this.uploadPauses.has(t.pair) ? 'operator' : null;
  }

  /**
   * `buildFormats` of a configured diskimage, from the formats gathered once per pass, so a
   * pass stays linear in diskimages × providers.
   */
  formatsOf(diskimage: DiskimageConfig): string[] {
    return formatsFor(diskimage, this.listedFormats.get(diskimage.name) ?? []);
  }

  /** Builds of `diskimage`, newest first. */
  *newestFirst(diskimage: string): Generator<WorkingBuild> {
    const list = this.buildsByDiskimage.get(diskimage) ?? [];
    for (let i = list.length - 1; i >= 0; i--) yield list[i] as WorkingBuild;
  }

  /** The newest build of `diskimage` in `state` (ready by default). */
  newest(diskimage: string, state: BuildState = 'ready'): WorkingBuild | undefined {
    const list = this.buildsByDiskimage.get(diskimage) ?? [];
    for (let i = list.length - 1; i >= 0; i--) if ((list[i] as WorkingBuild).state === state) return list[i];
    return undefined;
  }

  /** The newest ready build of `diskimage` that is not revoked: the one new uploads carry. */
  newestGood(diskimage: string): WorkingBuild | undefined {
    for (const b of this.newestFirst(diskimage)) if (isGoodBuild(b)) return b;
    return undefined;
  }

  /**
   * The external id of the newest ready upload of `diskimage` to `provider` whose build is
   * not revoked (what a snapshot build on that diskimage boots), if there is one.
   */
  newestReadyUpload(diskimage: string, provider: string): string | undefined {
    const uploads = this.pairs.get(diskimage)?.get(provider)?.uploads ?? [];
    for (let i = uploads.length - 1; i >= 0; i--) {
      const u = uploads[i] as WorkingUpload;
      if (u.state === 'ready' && u.rec.externalId && (!u.build || u.build.revoked === undefined)) return u.rec.externalId;
    }
    return undefined;
  }
}

/** A ready build no operator revoked. */
export function isGoodBuild(b: WorkingBuild): boolean {
  return b.state === 'ready' && b.revoked === undefined;
}

/**
 * A ready upload of a build no operator revoked, and not itself revoked by its rollout (a canary
 * aborted after launch failures): one of those retention counts among the kept.
 */
export function isGoodUpload(u: WorkingUpload): boolean {
  return u.state === 'ready' && u.build?.revoked === undefined && u.rec.rollout?.state !== 'revoked';
}

/**
 * Whether a pin holds `u` (its build pinned on its provider, or diskimage-wide): then retention
 * never deletes it while it is ready, unless its build is being deleted.
 */
export function isPinnedUpload(u: WorkingUpload): boolean {
  const b = u.build;
  if (u.state !== 'ready' || !b || b.pins.length === 0 || b.state === 'deleting') return false;
  return b.pins.some((p) => p.provider === null || p.provider === u.rec.provider);
}
