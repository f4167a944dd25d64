/**
 * Planner rule 7: a revocation outlives its build only briefly. Once the store holds neither
 * the revoked build's record nor any upload of it (retention, an operator's delete or a config
 * removal took them), nothing can boot from it, and the revocation goes: `image-status` and the
 * console would otherwise list builds long gone, one more per revocation, forever. A revocation
 * younger than {@link revocationGraceMs} stays, whatever the snapshot says: the snapshot lists
 * builds and revocations side by side, and a build created and revoked while it was read would
 * look gone.
 */
import type { PlanView } from './plan-view.js';

/** How old a revocation of a build with no records must be before it goes: 3 passes, at least 10 s. */
export function revocationGraceMs(intervalSeconds: number): number {
  return Math.max(10_000, 3 * intervalSeconds * 1000);
}

export function forgetRevocations(view: PlanView): void {
  const { snapshot } = view;
  const named = new Set([...snapshot.builds.map((b) => b.id), ...snapshot.uploads.map((u) => u.buildId)]);
  const grace = revocationGraceMs(view.lifecycle.interval);
  for (const r of snapshot.revocations ?? []) {
    if (named.has(r.buildId) || view.now - r.since < grace) continue;
    view.emit(`revocation ${r.buildId}`, { type: 'forget-revocation', diskimage: r.diskimage, buildId: r.buildId });
  }
}
