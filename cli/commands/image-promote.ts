/**
 * `nodepool image-promote <build-id>`: ends the canary of the build's ready uploads at once, so
 * they serve every launch. The action is lib/actions/image-promote.ts `promoteBuild`.
 */
import { promoteBuild } from '../../lib/actions/image-promote.js';
import type { CommandContext, CommandResult } from './shared.js';
import { runActionCommand } from './action-refusal.js';

/**
 * Promotes a build's ready uploads; exit 0 (uploads a failed canary revoked named on stderr),
 * 1 for a revoked build or one with no ready upload, 3 for an unknown build.
 */
export function imagePromote(opts: CommandContext & { buildId: string }): Promise<CommandResult> {
  return runActionCommand(opts, (ctx) => promoteBuild(ctx, { buildId: opts.buildId }));
}
