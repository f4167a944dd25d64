/**
 * Rollout intents in ZooKeeper (issue 24), beside Nodepool 11's tree and never changing it:
 * a diskimage-wide pin at `/nodepool/image-intents/<diskimage>/pin`, per provider at
 * `…/provider-pins/<provider>` (`{"build_id", "since", "reason"}`), and revoked builds at
 * `…/revocations/<build id>` (`{"since", "reason"}`). Lists read the watched cache; every
 * launcher's cache sees a write within one notification, which also wakes its listeners.
 */
import { StoreError, ZooKeeperError } from '../../errors.js';
import { checkBuildOf, checkProviderOrNull } from '../checks.js';
import type { CorruptRecord } from '../corrupt.js';
import type { PinRecord, RevocationRecord } from '../models.js';
import { ensure, type ZkContext } from './context.js';
import type { ZkClient } from './zk-client.js';
import {
  corruptIntents, keepingSince, listIntents, removeIntent, writeIntent, type IntentPlaces, type IntentReader,
} from './intent-nodes.js';
import { decode, encode, statTime, type Json } from './records.js';
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

  /**
   * Pins `diskimage` (on `provider`, or everywhere when null) to `buildId`; null unpins. Pinning
   * again replaces build, reason and since. Answers the pin replaced or removed (null: none, or
   * a corrupt one), read at the version written over, so of two pins at once exactly one
   * replaces the pin before them.
   */
  async setPin(diskimage: string, provider: string | null, buildId: string | null, reason?: string): Promise<PinRecord | null> {
    const { layout } = this.ctx;
    checkProviderOrNull(provider, `pinning ${diskimage}`);
    if (buildId !== null) checkBuildOf(diskimage, buildId, `pinning ${diskimage}`);
    const path = provider === null ? layout.pin(diskimage) : layout.providerPin(diskimage, provider);
    const what = `pin of ${diskimage}`;
    const data = buildId === null ? null : encode(pinJson({ buildId, since: this.ctx.clock(), reason: reason ?? null }), what);
    const parse = (j: Json, ctime: number): PinRecord => pinFromJson(diskimage, provider, j, ctime);
    // A pin an older version kept under Nodepool's image, not yet moved (intent-move.ts), is what a new pin replaces.
    const legacy = layout.legacyOf(path);
    const old = legacy !== undefined && this.ctx.cache.get(legacy) ? legacy : undefined;
    const replaced = await swapPin(this.ctx.main(), path, what, layout.intentParents(path), data, parse);
    const replacedOld = old === undefined ? null : await swapPin(this.ctx.main(), old, what, [], null, parse);
    return replaced ?? replacedOld;
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
    if (!revoked) return removeIntent(this.ctx, path);
    const since = this.ctx.clock();
    await writeIntent(client, path, `revocation of ${buildId}`, layout.intentParents(path),
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

/**
 * Writes `data` at `path` (null: removes it) at the version read, answering the pin that was
 * there (null: none, or a corrupt one, which is replaced); read again when another writer came
 * first, so each writer answers the pin it replaced.
 */
async function swapPin(client: ZkClient, path: string, what: string, parents: readonly string[], data: Buffer | null,
  parse: (j: Json, ctimeMs: number) => PinRecord): Promise<PinRecord | null> {
  const taken = (err: unknown, ...codes: string[]): boolean => err instanceof ZooKeeperError && codes.includes(err.code);
  for (let attempt = 1; attempt <= 20; attempt++) {
    const got = await client.getData(path);
    if (!got) {
      if (data === null) return null;
      for (const p of parents) await ensure(client, p);
      try {
        await client.create(path, data);
        return null;
      } catch (err) {
        if (taken(err, 'NODE_EXISTS')) continue;
        throw err;
      }
    }
    let before: PinRecord | null = null;
    try {
      before = parse(decode(got.data, what), statTime(got.stat.ctime));
    } catch (err) {
      if (!(err instanceof StoreError)) throw err; // unreadable or not a pin's: corrupt, replaced
    }
    try {
      if (data === null) await client.remove(path, got.stat.version);
      else await client.setData(path, data, got.stat.version);
      return before;
    } catch (err) {
      if (!taken(err, 'BAD_VERSION', 'NO_NODE')) throw err;
    }
  }
  throw new StoreError(`${what}: ${path} kept changing while it was written`);
}
