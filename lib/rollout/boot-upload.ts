/**
 * Which upload of a diskimage a provider boots now: the one core policy every image-managing
 * driver asks (openstack and qemu used to pick "the newest" each their own way, and compared
 * ids, which says nothing about age once Nodepool 11's uuid builds are adopted): the newest
 * ready upload the driver can use, unless a rollout policy says otherwise (issue 24: a pin, a
 * revocation, a canary's share; policies.ts). Pure; the store reads are boot-choice.ts.
 */
import { byCreated, UPLOAD_SEQ_RE } from '../images/image-file.js';
import type { RolloutState, UploadRecord } from '../store/models.js';
import { ROLLOUT_POLICIES } from './policies.js';
import type { RolloutView } from './rollout-policy.js';
import { uploadPhase } from './upload-phase.js';

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

/**
 * The upload `choice.provider` boots for `choice.diskimage` out of `uploads` (any list the
 * store gave; others are ignored), among the ready ones that have their image in the provider,
 * pass the driver's check and are not revoked: the first rollout policy's answer (the pinned
 * build's when there is a pin and this provider has it; a canary's share by the launch's key),
 * else the newest. Undefined when none can.
 */
export function bootUpload(uploads: readonly UploadRecord[], choice: BootChoice): UploadRecord | undefined {
  const { rollout } = choice;
  const candidates = uploads.filter((u) => u.provider === choice.provider && u.diskimage === choice.diskimage
    && u.state === 'ready' && u.externalId !== null && u.externalId !== '');
  const usable = uploadsByAge(candidates).reverse().filter((u) => choice.usable?.(u) ?? true);
  if (!rollout) return usable[0];
  const phase = (u: UploadRecord): RolloutState => uploadPhase(u, rollout.revocations, rollout.settings, rollout.now).state;
  const newestFirst = usable.filter((u) => phase(u) !== 'revoked');
  if (newestFirst.length === 0) return undefined;
  const q = { provider: choice.provider, diskimage: choice.diskimage, view: rollout, phase, ...(choice.key !== undefined ? { key: choice.key } : {}) };
  for (const p of ROLLOUT_POLICIES) {
    const chosen = p.boot?.(newestFirst, q);
    if (chosen) return chosen;
  }
  return newestFirst[0];
}
