/**
 * `nodepool image-revoke <build-id> [--reason TEXT] [--nodes keep|delete-ready]`: no launch
 * boots any upload of the build from now on (the previous good build serves); `delete-ready`
 * also marks the idle ready nodes booted from it for deletion. `nodepool image-unrevoke
 * <build-id>` undoes it, and resets uploads a failed canary revoked. The actions are
 * lib/actions/image-revoke.ts `revokeBuild` and `unrevokeBuild`.
 */
import { revokeBuild, unrevokeBuild, type RevokeNodes } from '../../lib/actions/image-revoke.js';
import type { CommandContext, CommandResult } from './shared.js';
import { runActionCommand } from './action-refusal.js';

/** Options of {@link imageRevoke}. */
export interface ImageRevokeOptions extends CommandContext {
  buildId: string;
  reason?: string;
  /** Default `keep`. */
  nodes?: RevokeNodes;
}

/**
 * Revokes a build; exit 0 (each ready node kept because busy named on stderr), 3 for an
 * unknown build.
 */
export function imageRevoke(opts: ImageRevokeOptions): Promise<CommandResult> {
  return runActionCommand(opts, async (ctx) => {
    const r = await revokeBuild(ctx, { buildId: opts.buildId, reason: opts.reason, nodes: opts.nodes ?? 'keep' });
    if (!r.ok) return r;
    return { ...r, warnings: [...r.warnings, ...r.skippedNodes.map((s) => `node ${s.nodeId} kept: ${s.why}`)] };
  });
}

/** Unrevokes a build; exit 0, 1 when nothing of it was revoked, 3 for an unknown build. */
export function imageUnrevoke(opts: Omit<ImageRevokeOptions, 'reason' | 'nodes'>): Promise<CommandResult> {
  return runActionCommand(opts, (ctx) => unrevokeBuild(ctx, { buildId: opts.buildId }));
}
