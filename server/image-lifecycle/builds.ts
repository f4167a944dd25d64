/**
 * Planner rules for builds: what happens to `building` records (rule 1), and when a
 * diskimage gets a new build, with the build requests it serves and its status (rule 2). A
 * diskimage whose newest ready build is revoked is not up to date: it is built anew as a
 * missing one would be (pause and backoff still hold), and its status says why.
 */
import { fn } from '../../lib/gearman/functions.js';
import type { BuildReason } from './actions.js';
import { failureRun } from './backoff.js';
import type { PlanView, WorkingBuild } from './plan-view.js';
import { builderClientId } from '../../lib/gearman/client-id.js';
import type { DiskimageStatus } from '../../lib/status/lifecycle-status.js';

/** Status text while gearmand's admin protocol does not answer. */
export const ADMIN_UNREACHABLE = 'gearmand admin not reachable';

function failBuild(view: PlanView, b: WorkingBuild, reason: string): void {
  if (!view.emit(b, { type: 'fail-build', buildId: b.rec.id, reason })) return;
  b.state = 'failed';
  b.stateTime = view.now;
  b.reason = reason;
}

/** Rule 1: fail, resume or leave every `building` build. */
export function planBuildingBuilds(view: PlanView): void {
  const { now, lifecycle, snapshot } = view;
  for (const b of view.builds) {
    if (b.state !== 'building') continue;
    const d = view.diskimages.get(b.rec.diskimage);
    const name = b.rec.diskimage;
    const limit = d ? d.buildTimeout + lifecycle.buildTimeoutGrace : undefined;
    const timedOut = limit !== undefined && now > b.stateTime + limit * 1000;
    const buildFn = fn.imageBuild(name);
    if (snapshot.inFlight.builds.has(b.rec.id)) {
      const { builderHostname: host, builderId } = b.rec;
      if (timedOut) failBuild(view, b, `timed out after ${limit} s`);
      else if (!view.adminReachable) continue;
      else if (host && builderId && !view.isConnected(builderClientId(host, builderId))) failBuild(view, b, `builder ${host} disappeared during the build`);
      else if (!view.isRegistered(buildFn)) failBuild(view, b, `no builder registers ${buildFn} any more`);
    } else if (!d) failBuild(view, b, `diskimage ${name} is no longer configured`);
    else if (timedOut) failBuild(view, b, `timed out after ${limit} s`);
    else if (!view.adminReachable) continue;
    else if (!view.isRegistered(buildFn)) failBuild(view, b, `cannot resume: no builder registers ${buildFn}`);
    else {
      // A snapshot build on another diskimage boots its newest ready upload as of now (a resumed
      // job that gearmand still has keeps the base it started with).
      const base = d.snapshot?.baseDiskimage !== undefined ? view.newestReadyUpload(d.snapshot.baseDiskimage, d.snapshot.provider) : undefined;
      view.emit(b, { type: 'resume-build', buildId: b.rec.id, ...(base !== undefined ? { baseImage: base } : {}) });
    }
  }
}

/** Why a snapshot build on another diskimage cannot start yet, or the base it boots. */
function snapshotBase(view: PlanView, d: { snapshot?: { baseDiskimage?: string | undefined; provider: string } | undefined }): { waiting: string } | { baseImage?: string } {
  const base = d.snapshot?.baseDiskimage;
  if (base === undefined || !d.snapshot) return {};
  const id = view.newestReadyUpload(base, d.snapshot.provider);
  return id === undefined ? { waiting: `waiting for a ready upload of base-diskimage ${base} to provider ${d.snapshot.provider}` } : { baseImage: id };
}

/** `newest build <id> revoked: <reason>`, the status text of a diskimage built anew because of it. */
export function revokedText(buildId: string, reason: string | null): string {
  return `newest build ${buildId} revoked${reason ? `: ${reason}` : ''}`;
}

/** Rule 2: start builds and clear served requests; returns one status per configured diskimage. */
export function planNewBuilds(view: PlanView): DiskimageStatus[] {
  const { now, snapshot } = view;
  // The newest pending request per diskimage; the rest are cleared once served.
  const requests = new Map<string, number>();
  const pending = new Set<string>();
  const requestList = [...snapshot.buildRequests].sort((a, b) => (a.diskimage < b.diskimage ? -1 : a.diskimage > b.diskimage ? 1 : a.requested - b.requested));
  for (const r of requestList) {
    const key = `request:${r.diskimage}:${r.requested}`;
    if (!view.diskimages.has(r.diskimage)) {
      view.emit(key, { type: 'clear-request', diskimage: r.diskimage, requested: r.requested });
      continue;
    }
    const served = [...view.newestFirst(r.diskimage)].some((b) => b.state === 'ready' && b.rec.created >= r.requested);
    if (served) view.emit(key, { type: 'clear-request', diskimage: r.diskimage, requested: r.requested });
    else {
      pending.add(r.diskimage);
      requests.set(r.diskimage, Math.max(requests.get(r.diskimage) ?? 0, r.requested));
    }
  }

  const statuses: DiskimageStatus[] = [];
  for (const d of view.diskimages.values()) {
    const ready = view.newest(d.name);
    const run = failureRun(
      [...view.newestFirst(d.name)].filter((b) => !ready || b.seq > ready.seq),
      view.lifecycle,
      (b) => b.state === 'lost',
    );
    const lastFailed = view.newest(d.name, 'failed');
    const requested = requests.get(d.name);
    const status: DiskimageStatus = {
      diskimage: d.name,
      paused: view.buildPausedBy(d),
      waiting: null,
      failures: run.failures,
      lastFailure: lastFailed?.reason ?? null,
      retryAt: run.retryAt,
      rebuildAt: ready ? ready.stateTime + d.rebuildAge * 1000 : null,
      requested: pending.has(d.name),
      revoked: ready?.revoked ? revokedText(ready.rec.id, ready.revoked.reason) : null,
    };
    statuses.push(status);
    if (status.paused || view.newest(d.name, 'building')) continue;

    const formats = view.formatsOf(d);
    let reason: BuildReason | null = null;
    if (!ready) reason = 'missing';
    else if (ready.revoked) reason = 'revoked';
    else if (requested !== undefined) reason = 'request';
    else if (formats.some((f) => !ready.rec.formats.includes(f))) reason = 'format';
    else if (now - ready.stateTime >= d.rebuildAge * 1000) reason = 'age';
    if (reason === null) continue;
    if (!view.needed.has(d.name)) {
      if (requested !== undefined) status.waiting = `not needed: no provider lists ${d.name} and it has no formats`;
      continue;
    }
    const bypass = requested !== undefined && run.newestFailed !== null && requested > run.newestFailed;
    if (run.retryAt !== null && now < run.retryAt && !bypass) continue;
    const buildFn = fn.imageBuild(d.name);
    const base = snapshotBase(view, d);
    if (!view.adminReachable) status.waiting = ADMIN_UNREACHABLE;
    else if (!view.isRegistered(buildFn)) status.waiting = `no builder registers ${buildFn}`;
    else if ('waiting' in base) status.waiting = base.waiting;
    else view.actions.push({ type: 'start-build', diskimage: d.name, formats, reason, ...(requested !== undefined ? { servesRequestsUpTo: requested } : {}), ...base });
  }
  return statuses;
}
