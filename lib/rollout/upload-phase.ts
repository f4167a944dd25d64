/**
 * Where an upload stands in its rollout (issue 24), pure: canary, promoted or revoked, from its
 * record, the store's revocations and the provider diskimage's `rollout:` settings, combining
 * the rollout policies (policies.ts); and what a launch's outcome decides. The boot choice is
 * boot-upload.ts; every launcher on every host decides the same from the same store.
 */
import type { RevocationRecord, UploadRecord, UploadRollout } from '../store/models.js';
import { ROLLOUT_POLICIES } from './policies.js';
import type { RolloutSettings, UploadPhase } from './rollout-policy.js';

/**
 * Where `upload` stands at `now`. A phase a policy fixes (a revoked build revokes every upload
 * of it) holds first; then a written decision stands; without settings an upload is promoted
 * as soon as it is ready (no rollout); otherwise it is a canary until a policy aborts it or
 * every policy that judges promotion lets it be promoted.
 */
export function uploadPhase(upload: UploadRecord, revocations: readonly RevocationRecord[],
  settings: RolloutSettings | undefined, now: number): UploadPhase {
  for (const p of ROLLOUT_POLICIES) {
    const fixed = p.fixedPhase?.(upload, revocations);
    if (fixed) return fixed;
  }
  const written = upload.rollout;
  if (written && written.state !== 'canary') return { state: written.state, since: written.time, reason: written.reason, derived: false };
  if (!settings) return { state: 'promoted', since: upload.stateTime, reason: null, derived: true };
  const q = { upload, settings, since: written?.time ?? upload.stateTime, now };
  for (const p of ROLLOUT_POLICIES) {
    const reason = p.abort?.(q);
    if (reason !== undefined) return { state: 'revoked', since: now, reason, derived: true };
  }
  const votes = ROLLOUT_POLICIES.flatMap((p) => (p.promotes ? [p.promotes(q)] : []));
  if (votes.length > 0 && votes.every((v) => v !== false)) {
    const words = votes.filter((v): v is string => typeof v === 'string');
    return { state: 'promoted', since: now, reason: words.length > 0 ? words.join('; ') : null, derived: true };
  }
  return { state: 'canary', since: q.since, reason: written?.reason ?? null, derived: !written };
}

/**
 * The decision to write on `upload` after a launch was counted on it, or undefined when its
 * record already says what the counts and age say (or it is still a canary).
 */
export function decisionAfterLaunch(upload: UploadRecord, revocations: readonly RevocationRecord[],
  settings: RolloutSettings | undefined, now: number): UploadRollout | undefined {
  const phase = uploadPhase(upload, revocations, settings, now);
  if (!phase.derived || phase.state === 'canary' || !settings) return undefined;
  return { state: phase.state, time: now, reason: phase.reason };
}

/** Human words for a phase, as the CLI and web show it (`canary 10% 7/20 launches`, `promoted`, `revoked: why`). */
export function phaseWords(phase: UploadPhase, upload: UploadRecord, settings: RolloutSettings | undefined): string {
  if (phase.state === 'revoked') return phase.reason ? `revoked: ${phase.reason}` : 'revoked';
  if (phase.state === 'promoted' || !settings) return 'promoted';
  return `canary ${settings.canary}% ${upload.launches ?? 0}/${settings.promoteAfter.launches} launches`;
}
