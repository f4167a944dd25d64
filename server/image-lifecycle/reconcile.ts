/**
 * Planner rule 4: reconcile the store with what builders advertise over Gearman. A ready
 * build nobody advertises for 3 passes is lost; a lost one advertised again is found; an id
 * advertised that the store has no use for is a stray to delete: a failed build's at once, an
 * id with no record at all only once it has stayed unknown for `stray-grace` and while
 * {@link unknownGuard} does not refuse (another installation's files, or a new or wrong store).
 */
import { fn } from '../../lib/gearman/functions.js';
import { parseImageId } from '../../lib/images/image-file.js';
import type { PlanView, WorkingBuild } from './plan-view.js';
import { graceOver, suspectReason, UNKNOWN_ADVICE, unknownGuard } from './unknown-ids.js';

/** Passes a ready build may go unadvertised before it is marked lost. */
export const LOST_AFTER_PASSES = 3;

function isImageId(id: string): boolean {
  try {
    parseImageId(id);
    return true;
  } catch {
    return false;
  }
}

/** Rule 4; does nothing while gearmand's admin protocol does not answer. */
export function reconcile(view: PlanView): void {
  const { registered, absentSince, inFlight } = view.snapshot;
  if (!registered) return;
  const lostBefore = view.now - LOST_AFTER_PASSES * view.lifecycle.interval * 1000;
  for (const b of view.builds) {
    const holders = view.holders(fn.imageUpload(b.rec.id));
    if (b.state === 'ready' && holders.length === 0) {
      const since = absentSince.get(b.rec.id);
      if (since !== undefined && since <= lostBefore && view.emit(b, { type: 'mark-lost', buildId: b.rec.id })) {
        b.state = 'lost';
        b.stateTime = view.now;
        b.reason = 'no builder advertises its files';
      }
    } else if (b.state === 'lost' && holders.length > 0) {
      if (view.emit(b, { type: 'mark-found', buildId: b.rec.id, holders: [...holders] })) {
        b.state = 'ready';
        b.stateTime = view.now;
        b.reason = null;
      }
    }
  }

  const strays: Array<{ imageId: string; holders: string[]; build: WorkingBuild | undefined }> = [];
  let advertised = 0;
  let unknown = 0;
  for (const [name, holders] of registered) {
    const f = fn.parse(name);
    if (f?.kind !== 'upload' || holders.length === 0 || !isImageId(f.imageId)) continue;
    advertised++;
    const b = view.buildById.get(f.imageId);
    if (!b) unknown++;
    if (b && b.state !== 'failed') continue;
    if (inFlight.buildDeletes.has(f.imageId)) continue;
    strays.push({ imageId: f.imageId, holders: [...holders], build: b });
  }
  const { deleteUnknown } = view.lifecycle;
  const suspect = view.snapshot.unknownSuspect;
  const refusal = deleteUnknown ? null : unknownGuard({ what: 'image ids builders advertise', unknown, total: advertised, records: view.builds.length });
  if (refusal) view.held.push(`${refusal}; ${UNKNOWN_ADVICE}`);
  const suspects = deleteUnknown || refusal ? 0 : strays.filter((s) => !s.build && suspect.has(s.imageId)).length;
  if (suspects) view.held.push(`${suspectReason(suspects, 'image ids builders advertise')}; ${UNKNOWN_ADVICE}`);
  strays.sort((a, b) => (a.imageId < b.imageId ? -1 : a.imageId > b.imageId ? 1 : 0));
  for (const s of strays) {
    if (!s.build && (refusal || (!deleteUnknown && suspect.has(s.imageId)) || !graceOver(view.snapshot.unknownSince.get(s.imageId), view.now, view.lifecycle.strayGrace))) continue;
    view.emit(s.build ?? `stray:${s.imageId}`, { type: 'delete-stray', imageId: s.imageId, holders: s.holders });
  }
}
