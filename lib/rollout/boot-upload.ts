/**
 * Which upload of a diskimage a provider boots now: the one core policy every image-managing
 * driver asks (openstack and qemu used to pick "the newest" each their own way, and compared
 * ids, which says nothing about age once Nodepool 11's uuid builds are adopted): the newest
 * ready upload the driver can use, unless the rollout state says otherwise (issue 24: a pin, a
 * revocation, a canary's share; lib/images/rollout.ts). Pure; the store reads are the caller's.
 */
import { byCreated, UPLOAD_SEQ_RE } from '../images/image-file.js';
import { launchShare, pinFor, uploadPhase, type RolloutSettings } from '../images/rollout.js';
import type { PinRecord, RevocationRecord, RolloutState, UploadRecord } from '../store/models.js';

/**
 * Uploads oldest first, as retention ranks them: by sequence when every id has one (a sequence
 * is the order of creation on every host, whatever their clocks), else by creation time.
 */
export function uploadsByAge<T extends Pick<UploadRecord, 'id' | 'created'>>(uploads: readonly T[]): T[] {
  const sequenced = uploads.every((u) => UPLOAD_SEQ_RE.test(u.id));
  return [...uploads].sort(sequenced ? (a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0) : byCreated);
}

/** What a launch of `diskimage` on `provider` may boot, and what the driver can use. */
export interface BootChoice {
  provider: string;
  diskimage: string;
  /** The driver's own check (its file exists, say); every upload passes when absent. */
  usable?: (upload: UploadRecord) => boolean;
  /** The store's rollout state; absent: the newest usable upload serves. */
  rollout?: RolloutView;
  /** The launch's key (its node id) for a canary's share; absent (an availability check): the newest serves. */
  key?: string;
}

/** What the store and config say about rollout, read once for a choice. */
export interface RolloutView {
  pins: readonly PinRecord[];
  revocations: readonly RevocationRecord[];
  /** The provider diskimage's `rollout:` settings, if it has any. */
  settings?: RolloutSettings;
  now: number;
}

/**
 * The upload `choice.provider` boots for `choice.diskimage` out of `uploads` (any list the
 * store gave; others are ignored), among the ready ones that have their image in the provider,
 * pass the driver's check and are not revoked: the pinned build's when there is a pin and this
 * provider has it; else the newest, unless it is a canary and the launch's key falls outside its
 * share, when the previous one serves: the newest older upload that is promoted, else (none is)
 * the next older one. Undefined when none can.
 */
export function bootUpload(uploads: readonly UploadRecord[], choice: BootChoice): UploadRecord | undefined {
  const { rollout } = choice;
  const candidates = uploads.filter((u) => u.provider === choice.provider && u.diskimage === choice.diskimage
    && u.state === 'ready' && u.externalId !== null && u.externalId !== '');
  const usable = uploadsByAge(candidates).reverse().filter((u) => choice.usable?.(u) ?? true);
  if (!rollout) return usable[0];
  const phase = (u: UploadRecord): RolloutState => uploadPhase(u, rollout.revocations, rollout.settings, rollout.now).state;
  const newestFirst = usable.filter((u) => phase(u) !== 'revoked');
  const pin = pinFor(rollout.pins, choice.diskimage, choice.provider);
  const pinned = pin && newestFirst.find((u) => u.buildId === pin.buildId);
  if (pinned) return pinned;
  const [newest, ...older] = newestFirst;
  if (!newest || older.length === 0 || choice.key === undefined || !rollout.settings || phase(newest) !== 'canary') return newest;
  if (launchShare(choice.key) < rollout.settings.canary) return newest;
  return older.find((u) => phase(u) === 'promoted') ?? older[0];
}
