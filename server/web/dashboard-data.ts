/**
 * What the dashboard (`/`) shows, as one JSON document it polls (`/dashboard.json`): builds
 * with state and age, uploads with their live transfer, nodes counted by provider, label and
 * state and listed with their addresses, requests, and the loops whose passes fail or hang; uploads in validation and why
 * uploads failed (whole reasons, console tails included), and the upload targets that need
 * attention; pins, revoked builds and each upload's rollout (issue 24). Made from the store
 * with the CLI's presenters, so ages, transfers, rollout words and attention lines read as in
 * `image-list`, `dib-image-list`, `image-status` and `list`.
 */
import { formatAge } from '../../lib/status/age.js';
import { readUploadList, settingsFor } from '../../lib/status/list-data.js';
import type { StatusSource } from '../../lib/status/list-views.js';
import {
  buildPinned, buildRevoked, diskimageRollout, pinnedText, revokedText, rolloutLines, uploadLaunches, uploadRollout,
} from '../../lib/status/rollout-status.js';
import { targetAttention, transferText, uploadTransfer } from '../../lib/status/uploads.js';
import type { LoopHealth } from '../../lib/periodic-loop.js';
import { readinessReport, type ReadinessReport } from './health.js';

/** The dashboard's document. */
export interface DashboardData {
  /** Epoch ms the document was made. */
  generated: number;
  ready: boolean;
  started: boolean;
  failing: ReadinessReport['failing'];
  /** Loops whose pass runs past its bound. */
  stuck: ReadinessReport['stuck'];
  builds: Array<{
    id: string; diskimage: string; state: string; age: string; reason: string | null;
    /** `all`, or the providers it is pinned on (comma-joined); empty when not pinned. */
    pinned: string;
    /** `revoked: <reason>` (or `revoked`); empty when not revoked. */
    revoked: string;
  }>;
  uploads: Array<{
    id: string; buildId: string; provider: string; diskimage: string; state: string; age: string;
    /** Whole percent sent while uploading; null otherwise. */
    percent: number | null;
    /** `1.2/3.4 GiB 45% 180 MiB/s` while uploading; null otherwise. */
    transfer: string | null;
    /** Why it failed (possibly several lines), or why its builder is trying again; null otherwise. */
    reason: string | null;
    /** `canary 10% 7/20 launches`, `promoted`, `revoked: <reason>`; null unless ready or revoked. */
    rollout: string | null;
    launches: number;
    launchFailures: number;
  }>;
  /** `image-status`'s lines of each pin and revoked build, with since when and why. */
  rolloutLines: string[];
  /** `image-list`'s lines under the table: targets paused, waiting, backing off, validating, failed uploads. */
  uploadAttention: string[];
  /** Node counts per provider and label, by state (only states with nodes). */
  nodeCounts: Array<{ provider: string; label: string; states: Record<string, number> }>;
  /** `address`: where consumers reach the node (its interface IP, else its public, else its private address). */
  nodes: Array<{ id: string; provider: string; labels: string; state: string; age: string; externalId: string; address: string }>;
  requests: Array<{ id: string; state: string; labels: string; requestor: string; nodes: string; age: string }>;
}

/** Reads the store once and makes the document. */
export async function dashboardData(src: StatusSource, loops: readonly LoopHealth[], started: boolean): Promise<DashboardData> {
  const { store } = src;
  // The uploads part is image-list's (same reads, same attention lines).
  const [builds, { uploads, status, pauses, pins, revocations }, nodes, requests] = await Promise.all([
    store.listBuilds(), readUploadList(store), store.listNodes(), store.listRequests(),
  ]);
  const now = src.clock();
  const age = (t: number): string => formatAge(now - t);
  const report = readinessReport(started, loops, now);
  const rollout = { pins, revocations, settingsFor: settingsFor(src.config()), now };
  const rolloutDiskimages = [...new Set([...pins.map((p) => p.diskimage), ...revocations.map((r) => r.diskimage)])].sort();
  const counts = new Map<string, { provider: string; label: string; states: Record<string, number> }>();
  for (const n of nodes) {
    for (const label of n.labels) {
      const key = `${n.provider}\u0000${label}`;
      const c = counts.get(key) ?? { provider: n.provider, label, states: {} };
      c.states[n.state] = (c.states[n.state] ?? 0) + 1;
      counts.set(key, c);
    }
  }
  return {
    generated: now, ready: report.ready, started, failing: report.failing, stuck: report.stuck,
    builds: builds.map((b) => ({
      id: b.id, diskimage: b.diskimage, state: b.state, age: age(b.stateTime), reason: b.reason,
      pinned: pinnedText(buildPinned(pins, b)), revoked: revokedText(buildRevoked(revocations, b)),
    })),
    uploads: uploads.map((u) => {
      const t = uploadTransfer(u, now);
      return {
        id: u.id, buildId: u.buildId, provider: u.provider, diskimage: u.diskimage, state: u.state, age: age(u.stateTime),
        percent: t ? t.percent : null, transfer: t ? transferText(t) : null, reason: u.reason,
        rollout: uploadRollout(u, rollout)?.words ?? null, ...uploadLaunches(u),
      };
    }),
    rolloutLines: rolloutDiskimages.flatMap((d) => rolloutLines(d, diskimageRollout({ pins, revocations }, d))),
    uploadAttention: [...targetAttention({ targets: status.targets, uploads, pauses, now }), ...(status.held ?? []).map((why) => `deletion held: ${why}`)],
    nodeCounts: [...counts.values()].sort((a, b) => (a.provider + a.label < b.provider + b.label ? -1 : 1)),
    nodes: nodes.map((n) => ({
      id: n.id, provider: n.provider, labels: n.labels.join(','), state: n.state, age: age(n.stateTime), externalId: n.externalId ?? '',
      address: n.interfaceIp ?? n.publicIpv4 ?? n.publicIpv6 ?? n.privateIpv4 ?? '',
    })),
    requests: requests.map((r) => ({ id: r.id, state: r.state, labels: r.labels.join(','), requestor: r.requestor, nodes: r.nodes.join(','), age: age(r.stateTime) })),
  };
}
