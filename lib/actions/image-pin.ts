/**
 * Operator actions: pin a diskimage's launches to one build (`nodepool image-pin`), on one
 * provider or everywhere, and remove the pin (`image-unpin`) (issue 24 §1). While pinned, every
 * launcher boots that build's upload whatever is newer (lib/rollout/boot-upload.ts) and
 * retention keeps it; newer builds still build and upload, ready for the unpin. A pin is refused
 * for a build that could not serve: unknown, of another diskimage, revoked, being deleted, or
 * without a ready upload where the pin applies.
 */
import type { Config } from '../config/schema.js';
import { imageTarget, imageTargets } from '../drivers/config-registry.js';
import { StoreError } from '../errors.js';
import type { PinRecord, UploadRecord } from '../store/models.js';
import type { Store } from '../store/store.js';
import { refuse, type ActionResult, type Refused } from './action-result.js';
import { findDiskimage, findProvider, isRefused } from './config-lookup.js';
import { deletePending } from './image-delete.js';
import { blankReason, storedReason } from './reason.js';
import { findBuild, unservableBuild, type RolloutActionContext } from './rollout-context.js';

/** Arguments of {@link pinImage}. */
export interface PinArgs {
  diskimage: string;
  buildId: string;
  /** Pin only the launches on this provider; absent: on every provider. */
  provider?: string;
  /** Shown with the pin in the lists. */
  reason?: string;
}

/** The answer of {@link pinImage}. */
export type ImagePinResult = ActionResult<{
  pin: PinRecord;
  /** The pin this one replaced (same diskimage and provider), if any. */
  replaced: PinRecord | null;
  /** The build's ready uploads the pin applies to. */
  uploads: UploadRecord[];
  /** Providers taking the diskimage where a diskimage-wide pin cannot apply (no ready upload of the build there). */
  warnings: string[];
}, 'unknown-diskimage' | 'unknown-provider' | 'unknown-build' | 'wrong-state' | 'invalid-argument'>;

/** The answer of {@link unpinImage}: the pin removed, or none (nothing to unpin). */
export type ImageUnpinResult = ActionResult<{
  diskimage: string;
  provider: string | null;
  removed: PinRecord | null;
  /** Providers' own pins of the diskimage that a diskimage-wide unpin leaves in force. */
  warnings: string[];
}, 'unknown-diskimage' | 'unknown-provider'>;

/** `Launches of ubuntu-jammy on cloud-a`, or `on every provider`. */
function pinSubject(diskimage: string, provider: string | null): string {
  return `Launches of ${diskimage} on ${provider ?? 'every provider'}`;
}

/** The configured diskimage, and the provider when given and it takes the diskimage; else a refusal. */
function checkTarget(config: Config, diskimage: string, provider: string | undefined): Refused<'unknown-diskimage' | 'unknown-provider'> | undefined {
  const d = findDiskimage(config, diskimage);
  if (isRefused(d)) return d;
  if (provider === undefined) return undefined;
  const p = findProvider(config, provider);
  if (isRefused(p)) return p;
  if (!imageTarget(p, diskimage)) return refuse('unknown-provider', `Provider ${provider} does not list diskimage ${diskimage}`);
  return undefined;
}

/** Pins `diskimage`'s launches (on `provider`, or everywhere) to build `buildId`; pinning again replaces the pin. */
export async function pinImage({ store, config }: RolloutActionContext, args: PinArgs): Promise<ImagePinResult> {
  const { diskimage, buildId } = args;
  const provider = args.provider ?? null;
  const blank = blankReason(args.reason);
  if (blank) return blank;
  const reason = storedReason(args.reason);
  const bad = checkTarget(config, diskimage, args.provider);
  if (bad) return bad;
  const build = await findBuild(store, buildId);
  if (isRefused(build)) return build;
  if (build.diskimage !== diskimage) return refuse('unknown-build', `Build ${buildId} is a build of ${build.diskimage}, not of ${diskimage}`);
  const unservable = unservableBuild(build, 'pin');
  if (unservable) return unservable;
  const revoked = (await store.listRevocations()).find((r) => r.buildId === buildId);
  if (revoked) return refuse('wrong-state', `Build ${buildId} is revoked; nodepool image-unrevoke ${buildId} before pinning it`);
  const ready = (await store.listUploads({ buildId, states: ['ready'] })).filter((u) => provider === null || u.provider === provider);
  if (ready.length === 0) {
    return refuse('wrong-state', `Build ${buildId} has no ready upload${provider === null ? '' : ` on ${provider}`}; nothing to pin to`);
  }
  const samePin = (p: PinRecord): boolean => p.diskimage === diskimage && p.provider === provider;
  const before = await store.listPins();
  // What this write replaced, as the store swapped it: of two pins at once, only one replaced the pin before them.
  const replaced = await store.setPin(diskimage, provider, buildId, reason);
  const pin = (await store.listPins()).find(samePin);
  if (!pin) throw new StoreError(`the pin of ${diskimage} on ${provider ?? 'every provider'} was not found after it was written`);
  // Written, now check: a delete of the build or of an upload it boots that began meanwhile
  // (lib/actions/image-delete.ts, top) is seen here, and this pin, not the delete, is taken back.
  const deleting = await deletedMeanwhile(store, buildId, ready);
  if (deleting) {
    if (pin.buildId === buildId) await withdrawPin(store, pin, replaced);
    return deleting;
  }
  const warnings = provider !== null ? [] : diskimageWideWarnings(config, before, diskimage, buildId, new Set(ready.map((u) => u.provider)));
  const was = replaced && replaced.buildId !== buildId ? ` (was ${replaced.buildId})` : '';
  return {
    ok: true, pin, replaced, uploads: ready, warnings,
    message: `${pinSubject(diskimage, provider)} pinned to ${buildId}${reason ? ` (${reason})` : ''}${was}`,
  };
}

/** A refusal when build `buildId`, or one of the `ready` uploads the pin boots, is now gone, being deleted or about to be. */
async function deletedMeanwhile(store: Store, buildId: string, ready: readonly UploadRecord[]): Promise<Refused<'wrong-state'> | undefined> {
  const gone = refuse('wrong-state', `Build ${buildId} is being deleted; it cannot be pinned`);
  const build = await store.getBuild(buildId);
  if (!build || build.state === 'deleting' || deletePending(build.reason)) return gone;
  for (const u of ready) {
    const now = await store.getUpload(u.id);
    if (!now || now.state === 'deleting' || deletePending(now.reason)) {
      return refuse('wrong-state', `Upload ${u.id} of build ${buildId} to ${u.provider} is being deleted; the build cannot be pinned`);
    }
  }
  return undefined;
}

/**
 * Takes `pin` back: puts back the pin it `replaced`, or removes it. The store swaps and answers
 * what it swapped out: when that was not `pin` (another pin was written since), it is put back.
 */
async function withdrawPin(store: Store, pin: PinRecord, replaced: PinRecord | null): Promise<void> {
  const { diskimage, provider } = pin;
  const out = replaced
    ? await store.setPin(diskimage, provider, replaced.buildId, replaced.reason ?? undefined)
    : await store.setPin(diskimage, provider, null);
  if (out && (out.buildId !== pin.buildId || out.since !== pin.since)) {
    await store.setPin(diskimage, provider, out.buildId, out.reason ?? undefined);
  }
}

/** Where a diskimage-wide pin does not decide: a provider's own pin, or no ready upload of the build there. */
function diskimageWideWarnings(config: Config, pins: readonly PinRecord[], diskimage: string, buildId: string, served: ReadonlySet<string>): string[] {
  const warnings: string[] = [];
  for (const p of config.providers.filter((x) => imageTargets(x).some((t) => t.diskimage === diskimage))) {
    const own = pins.find((x) => x.diskimage === diskimage && x.provider === p.name);
    if (own) warnings.push(`${p.name} keeps its own pin to ${own.buildId}`);
    else if (!served.has(p.name)) warnings.push(`${p.name} has no ready upload of ${buildId}; its launches of ${diskimage} boot its newest upload`);
  }
  return warnings;
}

/**
 * Removes the pin of `diskimage` (on `provider`, or the diskimage-wide one), or a corrupt pin
 * record of theirs. A pin the store holds is removed even when the config no longer names its
 * diskimage or provider; with none, unknown names are refused and a known one answers that
 * there was nothing to unpin.
 */
export async function unpinImage({ store, config }: RolloutActionContext, args: { diskimage: string; provider?: string }): Promise<ImageUnpinResult> {
  const { diskimage } = args;
  const provider = args.provider ?? null;
  const pins = await store.listPins();
  const pin = pins.find((p) => p.diskimage === diskimage && p.provider === provider) ?? null;
  // A diskimage-wide unpin leaves the providers' own pins, which still hold there.
  const warnings = provider !== null ? [] : pins.filter((p) => p.diskimage === diskimage && p.provider !== null)
    .map((p) => `${p.provider}'s own pin to ${p.buildId} stays (nodepool image-unpin ${diskimage} --provider ${p.provider})`);
  if (!pin) {
    // A corrupt pin (left out of listPins) of the same diskimage and provider goes too.
    const corrupt = (await store.listCorrupt({ kinds: ['pin'] })).find((c) => c.diskimage === diskimage && (c.provider ?? null) === provider);
    if (corrupt) {
      await store.setPin(diskimage, provider, null);
      return { ok: true, diskimage, provider, removed: null, warnings, message: `Corrupt pin record ${corrupt.id} removed (${corrupt.reason})` };
    }
    const bad = checkTarget(config, diskimage, args.provider);
    if (bad) return bad;
    return { ok: true, diskimage, provider, removed: null, warnings, message: `${pinSubject(diskimage, provider)} were not pinned; nothing to unpin` };
  }
  await store.setPin(diskimage, provider, null);
  return { ok: true, diskimage, provider, removed: pin, warnings, message: `${pinSubject(diskimage, provider)} unpinned (were pinned to ${pin.buildId})` };
}
