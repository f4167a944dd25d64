/**
 * Operator action: promote a build's uploads at once (`nodepool image-promote`, issue 24 §3):
 * each ready upload of it ends its canary and serves every launch of its labels. A revoked
 * build is refused (unrevoke it first), and so is an upload a failed canary revoked, which
 * `image-unrevoke` resets.
 */
import { StateConflictError } from '../errors.js';
import type { UploadRecord } from '../store/models.js';
import { refuse, type ActionResult } from './action-result.js';
import { isRefused } from './config-lookup.js';
import { findBuild, unservableBuild, type RolloutActionContext } from './rollout-context.js';

/** The reason written on an upload an operator promoted. */
export const PROMOTED_REASON = 'promoted by operator';

/** The answer of {@link promoteBuild}. */
export type PromoteResult = ActionResult<{
  buildId: string;
  /** The ready uploads now promoted. */
  promoted: UploadRecord[];
  /** Ready uploads left revoked (a failed canary), with what to do about them. */
  warnings: string[];
}, 'unknown-build' | 'wrong-state'>;

/** Promotes every ready upload of build `buildId` that is not revoked. */
export async function promoteBuild(ctx: RolloutActionContext, args: { buildId: string }): Promise<PromoteResult> {
  const { store } = ctx;
  const build = await findBuild(store, args.buildId);
  if (isRefused(build)) return build;
  const id = build.id;
  const unservable = unservableBuild(build, 'promote');
  if (unservable) return unservable;
  if ((await store.listRevocations()).some((r) => r.buildId === id)) {
    return refuse('wrong-state', `Build ${id} is revoked; nodepool image-unrevoke ${id} first`);
  }
  const ready = await store.listUploads({ buildId: id, states: ['ready'] });
  if (ready.length === 0) return refuse('wrong-state', `Build ${id} has no ready upload; nothing to promote`);
  const revoked = ready.filter((u) => u.rollout?.state === 'revoked');
  const warnings = revoked.map((u) => `upload ${u.id} on ${u.provider} stays revoked (${u.rollout?.reason ?? 'no reason recorded'}); nodepool image-unrevoke ${id} resets it`);
  if (revoked.length === ready.length) {
    return refuse('wrong-state', `Every ready upload of build ${id} was revoked by a failed canary; nodepool image-unrevoke ${id} first`);
  }
  const time = (ctx.now ?? Date.now)();
  const promoted: UploadRecord[] = [];
  for (const u of ready.filter((x) => x.rollout?.state !== 'revoked')) {
    const updated = await store.updateUpload(u.id, { rollout: { state: 'promoted', time, reason: PROMOTED_REASON } }, { expectStates: ['ready'] })
      .catch((err: unknown) => { if (err instanceof StateConflictError) return undefined; throw err; });
    if (updated) promoted.push(updated);
  }
  if (promoted.length === 0) return refuse('wrong-state', `Build ${id} has no ready upload; nothing to promote`);
  const where = promoted.map((u) => `${u.provider} (upload ${u.id})`).join(', ');
  return { ok: true, buildId: id, promoted, warnings, message: `Build ${id} promoted on ${where}: it serves every launch` };
}
