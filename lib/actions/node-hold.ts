/**
 * Operator actions: hold a node out of reach of requests and the deleter (`nodepool hold`),
 * and hand a node back (`nodepool release`): in-use, held or ready → used, after which the
 * launcher's deleter deletes a cloud node or puts a static host's slot back.
 */
import type { NodeRecord } from '../store/models.js';
import { refuse, type ActionResult } from './action-result.js';
import { blankReason, storedReason } from './reason.js';
import { withNodeClient, type NodeActionContext, type NodeClientRefusal } from './node-client.js';

/** The reason recorded when none is given. */
export const DEFAULT_HOLD_REASON = 'held with nodepool hold';

/** Arguments of {@link holdNode}. */
export interface HoldArgs {
  nodeId: string;
  /** Why (shown by `list --detail`); default {@link DEFAULT_HOLD_REASON}. */
  reason?: string;
  /** Seconds until the launcher deletes the held node (positive). */
  expireSeconds?: number;
  /** Who holds it: the owner of the session used (default `nodepool hold`). */
  requestor?: string;
}

/** The answer of {@link holdNode} and {@link releaseNode}: the node as it is now. */
export type NodeChangeResult = ActionResult<{ node: NodeRecord }, NodeClientRefusal | 'invalid-argument'>;

/** Holds a ready, in-use or already held node. */
export async function holdNode(ctx: NodeActionContext, args: HoldArgs): Promise<NodeChangeResult> {
  const blank = blankReason(args.reason);
  if (blank) return blank;
  if (args.expireSeconds !== undefined && !(args.expireSeconds > 0)) {
    return refuse('invalid-argument', `The expiry must be a positive number of seconds, got ${args.expireSeconds}`);
  }
  const node = await withNodeClient(ctx, args.requestor ?? 'nodepool hold', (client) =>
    client.hold(args.nodeId, { reason: storedReason(args.reason) ?? DEFAULT_HOLD_REASON, expireSeconds: args.expireSeconds }));
  if ('ok' in node) return node;
  return { ok: true, node, message: `Node ${node.id} held` };
}

/** Releases an in-use, held or ready node (it becomes `used`). */
export async function releaseNode(ctx: NodeActionContext, args: { nodeId: string; requestor?: string }): Promise<NodeChangeResult> {
  const node = await withNodeClient(ctx, args.requestor ?? 'nodepool release', (client) => client.release(args.nodeId));
  if ('ok' in node) return node;
  return { ok: true, node, message: `Node ${node.id} released` };
}
