/**
 * Rollout intents in ZooKeeper (issue 24), beside Nodepool 11's tree and never changing it:
 * a diskimage-wide pin at `/nodepool/images/<diskimage>/pin`, per provider at
 * `…/provider-pins/<provider>` (`{"build_id", "since", "reason"}`), and revoked builds at
 * `…/revocations/<build id>` (`{"since", "reason"}`). Lists read the watched cache; every
 * launcher's cache sees a write within one notification, which also wakes its listeners.
 */
import { checkBuildOf, checkProviderOrNull } from '../checks.js';
import type { CorruptRecord } from '../corrupt.js';
import type { PinRecord, RevocationRecord } from '../models.js';
import type { ZkContext } from './context.js';
import {
  corruptIntents, keepingSince, listIntents, removeIntent, upsert, writeIntent, type IntentPlaces, type IntentReader,
} from './intent-nodes.js';
import { encode } from './records.js';
import { pinFromJson, pinId, pinJson, revocationFromJson, revocationJson } from './rollout-records.js';

const PINS: IntentPlaces = { whole: 'pin', dir: 'provider-pins' };
const REVOCATIONS: IntentPlaces = { dir: 'revocations' };

/** A corrupt pin is skipped (and named by corrupt()): which build it pins cannot be told. */
const PIN_READER: IntentReader<PinRecord> = {
  kind: 'pin',
  id: pinId,
  where: (diskimage, provider) => ({ diskimage, provider }),
  parse: pinFromJson,
};

/**
 * A corrupt revocation still revokes (the znode's existence is the operator's intent), with
 * `since` its creation and a reason saying it is corrupt; it is also named by corrupt().
 */
const REVOCATION_READER: IntentReader<RevocationRecord> = {
  kind: 'revocation',
  id: (_diskimage, buildId) => buildId ?? '',
  where: (diskimage) => ({ diskimage }),
  parse: (diskimage, buildId, j, ctime) => revocationFromJson(diskimage, buildId ?? '', j, ctime),
  corrupt: (diskimage, buildId, c, ctime) => ({
    diskimage, buildId: buildId ?? '', since: ctime, reason: `corrupt revocation record (${c?.reason ?? 'unreadable'})`,
  }),
};

/** Pins and revocations of one store handle. */
export class ZkRolloutIntents {
  constructor(private readonly ctx: ZkContext) {}

  /** Pins `diskimage` (on `provider`, or everywhere when null) to `buildId`; null unpins. Pinning again replaces build, reason and since. */
  async setPin(diskimage: string, provider: string | null, buildId: string | null, reason?: string): Promise<void> {
    const { layout } = this.ctx;
    const what = `pin of ${diskimage}`;
    checkProviderOrNull(provider, `pinning ${diskimage}`);
    const path = provider === null ? layout.pin(diskimage) : layout.providerPin(diskimage, provider);
    const client = this.ctx.main();
    if (buildId === null) return removeIntent(client, path);
    checkBuildOf(diskimage, buildId, `pinning ${diskimage}`);
    const parents = provider === null ? [layout.image(diskimage)] : [layout.image(diskimage), layout.providerPins(diskimage)];
    await upsert(client, path, encode(pinJson({ buildId, since: this.ctx.clock(), reason: reason ?? null }), what), parents);
  }

  /** From the cache, by diskimage then provider (diskimage-wide first); corrupt pins are left out. */
  listPins(): Promise<PinRecord[]> {
    return listIntents(this.ctx, PINS, PIN_READER);
  }

  /** Revokes (or unrevokes) build `buildId` of `diskimage`; revoking again keeps `since`, a new reason replaces the old. */
  async setRevocation(diskimage: string, buildId: string, revoked: boolean, reason?: string): Promise<void> {
    const { layout } = this.ctx;
    checkBuildOf(diskimage, buildId, `${revoked ? 'revoking' : 'unrevoking'} build ${buildId}`);
    const path = layout.revocation(diskimage, buildId);
    const client = this.ctx.main();
    if (!revoked) return removeIntent(client, path);
    const since = this.ctx.clock();
    await writeIntent(client, path, `revocation of ${buildId}`, [layout.image(diskimage), layout.revocations(diskimage)],
      keepingSince((j, ctime) => revocationFromJson(diskimage, buildId, j, ctime), revocationJson, reason),
      () => revocationJson({ since, reason: reason ?? null }));
  }

  /** From the cache, by diskimage then build id; a corrupt revocation still revokes. */
  listRevocations(): Promise<RevocationRecord[]> {
    return listIntents(this.ctx, REVOCATIONS, REVOCATION_READER);
  }

  /** From the cache (call ctx.fresh() first): corrupt pins and revocations, by diskimage. */
  corrupt(): CorruptRecord[] {
    return [...corruptIntents(this.ctx, PINS, PIN_READER), ...corruptIntents(this.ctx, REVOCATIONS, REVOCATION_READER)];
  }
}
