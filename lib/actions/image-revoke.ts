/**
 * Operator actions: revoke a build (`nodepool image-revoke`) and undo it (`image-unrevoke`)
 * (issue 24 §2). From the moment it is revoked no launcher boots any upload of the build (the
 * previous good build serves), retention does not count it and the lifecycle builds anew; with
 * `delete-ready`, the idle ready nodes booted from it are deleted through the node-delete action.
 * Unrevoking also resets the uploads of the build a failed canary revoked automatically, so
 * they start their canary again with fresh counts.
 */
import { StoreError } from '../errors.js';
import type { NodeRecord, RevocationRecord, UploadRecord } from '../store/models.js';
import { nodeLock } from '../store/lock-names.js';
import type { Store } from '../store/store.js';
import { refuse, type ActionResult } from './action-result.js';
import { isRefused } from './config-lookup.js';
import { deleteNode } from './node-delete.js';
import { blankReason, storedReason } from './reason.js';
import { findBuild, unservableBuild, type RolloutActionContext } from './rollout-context.js';

/** What a revocation does to ready nodes booted from the build: leave them, or delete the idle ones. */
export const REVOKE_NODES = ['keep', 'delete-ready'] as const;
export type RevokeNodes = (typeof REVOKE_NODES)[number];

/** Arguments of {@link revokeBuild}. */
export interface RevokeArgs {
  buildId: string;
  /** Shown with the revocation in the lists. */
  reason?: string;
  /** Default `keep`. */
  nodes?: RevokeNodes;
}

/** A ready node of the build left alone, and why (allocated, locked, or its delete refused). */
export interface SkippedNode {
  nodeId: string;
  why: string;
}

/** The answer of {@link revokeBuild}. */
export type RevokeResult = ActionResult<{
  revocation: RevocationRecord;
  /** Whether the build was revoked before (the reason is replaced, `since` kept). */
  wasRevoked: boolean;
  /** Ready nodes booted from the build that were marked for deletion (`delete-ready`). */
  deletedNodes: string[];
  /** Ready nodes booted from the build that were busy, so kept (`delete-ready`). */
  skippedNodes: SkippedNode[];
  /** Pins of the build, which no longer decide while it is revoked. */
  warnings: string[];
}, 'unknown-build' | 'wrong-state' | 'invalid-argument'>;

/** The answer of {@link unrevokeBuild}. */
export type UnrevokeResult = ActionResult<{
  buildId: string;
  /** The operator's revocation removed, if there was one. */
  removed: RevocationRecord | null;
  /** Uploads whose automatic revocation (a failed canary) was reset to a fresh canary. */
  resetUploads: string[];
}, 'unknown-build' | 'wrong-state'>;

/** The reason written on an upload whose automatic revocation an operator reset. */
export const UNREVOKED_REASON = 'unrevoked';

/** Revokes build `buildId`; with `nodes: 'delete-ready'` also deletes the idle ready nodes booted from it. */
export async function revokeBuild(ctx: RolloutActionContext, args: RevokeArgs): Promise<RevokeResult> {
  const { store } = ctx;
  const blank = blankReason(args.reason);
  if (blank) return blank;
  const reason = storedReason(args.reason);
  const build = await findBuild(store, args.buildId);
  if (isRefused(build)) return build;
  // A build being deleted may still be revoked: its uploads serve until they are gone.
  const failed = build.state === 'failed' ? unservableBuild(build, 'revoke') : undefined;
  if (failed) return failed;
  const wasRevoked = (await store.listRevocations()).some((r) => r.buildId === build.id);
  await store.setRevocation(build.diskimage, build.id, true, reason);
  const revocation = (await store.listRevocations()).find((r) => r.buildId === build.id);
  if (!revocation) throw new StoreError(`the revocation of ${build.id} was not found after it was written`);
  const warnings = (await store.listPins()).filter((p) => p.buildId === build.id)
    .map((p) => `${p.diskimage} on ${p.provider ?? 'every provider'} is pinned to ${build.id}, which serves no launch while revoked (nodepool image-unpin ${p.diskimage}${p.provider === null ? '' : ` --provider ${p.provider}`})`);
  const { deleted, skipped } = args.nodes === 'delete-ready' ? await deleteReadyNodes(ctx, build.id) : { deleted: [], skipped: [] };
  const what = `Build ${build.id} ${wasRevoked ? 'was already revoked' : 'revoked'}${reason ? ` (${reason})` : ''}: no launch boots its uploads`;
  const nodes = args.nodes === 'delete-ready'
    ? `; ${deleted.length} ready node(s) marked for deletion${skipped.length > 0 ? `, ${skipped.length} kept because busy (${skipped.map((s) => s.nodeId).join(', ')})` : ''}`
    : '';
  return { ok: true, revocation, wasRevoked, deletedNodes: deleted, skippedNodes: skipped, warnings, message: `${what}${nodes}` };
}

/** The ready nodes booted from any upload of the build (`node.image` is the upload id). */
async function readyNodesOf(store: Store, uploads: readonly UploadRecord[]): Promise<NodeRecord[]> {
  const ids = new Set(uploads.map((u) => u.id));
  return (await store.listNodes({ states: ['ready'] })).filter((n) => n.image !== null && ids.has(n.image));
}

/**
 * Marks the build's idle ready nodes for deletion (node-delete's path: under the node's lock,
 * re-checked there); a node allocated to a request or locked by a launcher or consumer is kept.
 */
async function deleteReadyNodes(ctx: RolloutActionContext, buildId: string): Promise<{ deleted: string[]; skipped: SkippedNode[] }> {
  const { store } = ctx;
  const nodes = await readyNodesOf(store, await store.listUploads({ buildId }));
  const deleted: string[] = [];
  const skipped: SkippedNode[] = [];
  for (const n of nodes) {
    if (n.allocatedTo !== null) {
      skipped.push({ nodeId: n.id, why: `allocated to request ${n.allocatedTo}` });
      continue;
    }
    if ((await store.getLock(nodeLock(n.id)))?.live) {
      skipped.push({ nodeId: n.id, why: 'locked' });
      continue;
    }
    const r = await deleteNode(ctx, { nodeId: n.id, requestor: 'nodepool image-revoke', lockTimeoutMs: 0, onlyIfIdle: true });
    if (r.ok) deleted.push(n.id);
    else if (r.refusal !== 'unknown-node') skipped.push({ nodeId: n.id, why: r.message });
  }
  return { deleted, skipped };
}

/**
 * Removes build `buildId`'s revocation and resets each upload of it a failed canary revoked to
 * a fresh canary (counts zeroed). Refused when nothing of the build was revoked.
 */
export async function unrevokeBuild(ctx: RolloutActionContext, args: { buildId: string }): Promise<UnrevokeResult> {
  const { store } = ctx;
  const id = args.buildId;
  // A revocation outlives its build's record for a few passes: only a build still recorded is checked.
  const build = await findBuild(store, id);
  if (!isRefused(build)) {
    const unservable = unservableBuild(build, 'unrevoke');
    if (unservable) return unservable;
  }
  const removed = (await store.listRevocations()).find((r) => r.buildId === id) ?? null;
  const revokedUploads = (await store.listUploads({ buildId: id })).filter((u) => u.rollout?.state === 'revoked');
  if (!removed && revokedUploads.length === 0) {
    if (isRefused(build)) return build;
    return refuse('wrong-state', `Build ${id} is not revoked, nor any upload of it; nothing to unrevoke`);
  }
  if (removed) await store.setRevocation(removed.diskimage, id, false);
  const time = (ctx.now ?? Date.now)();
  const resetUploads: string[] = [];
  for (const u of revokedUploads) {
    const updated = await store.updateUpload(u.id, { rollout: { state: 'canary', time, reason: UNREVOKED_REASON }, launches: 0, launchFailures: 0 });
    if (updated) resetUploads.push(u.id);
  }
  const parts = [
    removed ? `Build ${id} unrevoked: its uploads serve launches again` : `Build ${id} was not revoked by an operator`,
    resetUploads.length > 0 ? `upload(s) ${resetUploads.join(', ')} revoked by a failed canary start a new canary` : '',
  ].filter(Boolean);
  return { ok: true, buildId: id, removed, resetUploads, message: parts.join('; ') };
}
