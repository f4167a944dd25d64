/**
 * Operator actions: pause and unpause a diskimage's builds, or its uploads to one provider
 * (`nodepool image-pause`, `image-unpause`). The server skips paused work, and a build request
 * is refused, until unpaused. Only an operator pause is removed: a `pause: true` in the config
 * stays in force, and the answer says so.
 */
import type { Config } from '../config/schema.js';
import { imageTarget } from '../drivers/config-registry.js';
import type { Store } from '../store/store.js';
import { blankReason, storedReason } from './reason.js';
import { refuse, type ActionResult, type Refused } from './action-result.js';
import { findDiskimage, findProvider, isRefused } from './config-lookup.js';

/** What the pause actions need. */
export interface ImagePauseContext {
  store: Store;
  config: Config;
}

/** What to pause: a diskimage's builds, or with `provider` its uploads there. */
export interface PauseTarget {
  diskimage: string;
  provider?: string;
}

type PauseRefusal = 'unknown-diskimage' | 'unknown-provider' | 'invalid-argument';

/** The answer of {@link pauseImage} and {@link unpauseImage}. */
export type ImagePauseResult = ActionResult<{
  diskimage: string;
  provider: string | null;
  /** Whether an operator pause was recorded before. */
  wasPaused: boolean;
  /** Whether the config pauses the same thing (`pause: true`), which an unpause leaves in force. */
  pausedByConfig: boolean;
  /** What the operator should know besides the message (the config's pause after an unpause). */
  warnings: string[];
}, PauseRefusal>;

/**
 * Checks the diskimage and provider against the config; answers whether the config pauses the
 * same thing already, or a refusal for an unknown name.
 */
export function pausedByConfig(config: Config, t: PauseTarget): boolean | Refused<PauseRefusal> {
  const d = findDiskimage(config, t.diskimage);
  if (isRefused(d)) return d;
  if (t.provider === undefined) return d.pause;
  const p = findProvider(config, t.provider);
  if (isRefused(p)) return p;
  const pd = imageTarget(p, t.diskimage);
  if (!pd) return refuse('unknown-provider', `Provider ${t.provider} does not list diskimage ${t.diskimage}`);
  return pd.pause;
}

/** `Builds of X` or `Uploads of X to P`. */
export function pauseSubject(t: PauseTarget): string {
  return t.provider === undefined ? `Builds of ${t.diskimage}` : `Uploads of ${t.diskimage} to ${t.provider}`;
}

async function setPause(ctx: ImagePauseContext, t: PauseTarget, paused: boolean, reason?: string): Promise<ImagePauseResult> {
  const byConfig = pausedByConfig(ctx.config, t);
  if (typeof byConfig !== 'boolean') return byConfig;
  const provider = t.provider ?? null;
  const wasPaused = (await ctx.store.listPauses()).some((p) => p.diskimage === t.diskimage && p.provider === provider);
  await ctx.store.setPause(t.diskimage, provider, paused, paused ? reason : undefined);
  const subject = pauseSubject(t);
  const base = { ok: true as const, diskimage: t.diskimage, provider, wasPaused, pausedByConfig: byConfig };
  if (paused) return { ...base, warnings: [], message: `${subject} paused${reason ? ` (${reason})` : ''}` };
  return {
    ...base,
    // Only an operator pause is removed; say so when there was none rather than claim an unpause.
    message: wasPaused ? `${subject} unpaused` : `${subject} were not paused by an operator; nothing to unpause`,
    warnings: byConfig ? [`${ctx.config.file} still pauses them (pause: true)`] : [],
  };
}

/** Records an operator pause (with an optional reason shown in the lists). */
export async function pauseImage(ctx: ImagePauseContext, args: PauseTarget & { reason?: string }): Promise<ImagePauseResult> {
  return blankReason(args.reason) ?? setPause(ctx, args, true, storedReason(args.reason));
}

/** Removes an operator pause. */
export function unpauseImage(ctx: ImagePauseContext, args: PauseTarget): Promise<ImagePauseResult> {
  return setPause(ctx, args, false);
}
