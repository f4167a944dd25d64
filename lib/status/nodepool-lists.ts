/**
 * The read-only lists of Nodepool 11's webapp (`nodepool/status.py`), made from our records:
 * Nodepool's field names, value shapes and row order, for `/dib-image-list`, `/image-list`,
 * `/image-status`, `/node-list`, `/request-list` and `/label-list`. Our richer forms of the
 * same lists are the CLI's presenters beside this file. Pure.
 */
import type { BuildRecord, BuildRequest, LauncherRecord, NodeRecord, NodeRequestRecord, PauseRecord, UploadRecord } from '../store/models.js';
import { formatAge } from './age.js';
import type { NodepoolList } from './nodepool-format.js';
import {
  buildPinned, buildRevoked, diskimageRollout, hasRolloutInfo, revokedText, uploadLaunches, uploadPinned, uploadRollout,
  type BuildRevoked, type RolloutRecords, type UploadRolloutInput,
} from './rollout-status.js';

const NO_ROLLOUT: RolloutRecords = { pins: [], revocations: [] };

/** Epoch seconds as Nodepool's `int(state_time)`. */
const epochSeconds = (ms: number): number => Math.trunc(ms / 1000);

const byString = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The build's number under `/nodepool/images/<image>/builds/`: our ids are
 * `<diskimage>-<number>`, so the number is what follows the diskimage's name.
 */
export function buildNumber(buildId: string, diskimage: string): string {
  return buildId.startsWith(`${diskimage}-`) ? buildId.slice(diskimage.length + 1) : buildId;
}

/**
 * `/dib-image-list`: one row per build, by image name then build number. `id` is
 * `<image>-<build number>`, `formats` sorted, `state` `paused` while the image's builds are
 * paused (`paused` names those images), `age` the epoch second of the last state change.
 * Beside Nodepool's fields (issue 24): `pinned` (`all`, provider names) and `revoked`
 * (`{since: <epoch second>, reason}` or null); the table adds `Pinned` and `Revoked` while any build is.
 */
export function dibImageList(builds: readonly BuildRecord[], paused: ReadonlySet<string>, rollout: RolloutRecords = NO_ROLLOUT): NodepoolList {
  const rows = [...builds]
    .sort((a, b) => byString(a.diskimage, b.diskimage) || byString(buildNumber(a.id, a.diskimage), buildNumber(b.id, b.diskimage)))
    .map((b) => {
      const revoked = buildRevoked(rollout.revocations, b);
      return {
        id: `${b.diskimage}-${buildNumber(b.id, b.diskimage)}`, image: b.diskimage, builder: b.builderHostname,
        formats: [...b.formats].sort(), state: paused.has(b.diskimage) ? 'paused' : b.state, age: epochSeconds(b.stateTime),
        pinned: buildPinned(rollout.pins, b), revoked: revoked ? { since: epochSeconds(revoked.since), reason: revoked.reason } : null,
      };
    });
  const shown = rows.some((r) => r.pinned.length > 0 || r.revoked !== null);
  return {
    columns: [['id', 'ID'], ['image', 'Image'], ['builder', 'Builder'], ['formats', 'Formats'], ['state', 'State'], ['age', 'Age'],
      ...(shown ? [['pinned', 'Pinned'], ['revoked', 'Revoked']] as const : [])],
    rows, cells: { revoked: (v) => revokedText(v as BuildRevoked | null) },
  };
}

/**
 * `/image-list`: one row per upload, by image, build number, provider, then upload id; `id` is
 * the build number. Beside Nodepool's fields (issue 24), given `rollout`: `rollout`
 * (`{state, words}`, null unless ready or revoked), `launches` and `launch_failures`; the table
 * adds `Rollout`, `Launches` and `Launch Failures` while some upload has rollout settings, a
 * decision, a revoked build or counted launches.
 */
export function imageList(uploads: readonly UploadRecord[], rollout?: UploadRolloutInput): NodepoolList {
  const key = (u: UploadRecord): string[] => [u.diskimage, buildNumber(u.buildId, u.diskimage), u.provider, u.id];
  const rows = [...uploads]
    .sort((a, b) => {
      const ka = key(a);
      const kb = key(b);
      for (let i = 0; i < ka.length; i++) if (ka[i] !== kb[i]) return byString(ka[i] as string, kb[i] as string);
      return 0;
    })
    .map((u) => {
      const phase = rollout ? uploadRollout(u, rollout) : null;
      const counts = uploadLaunches(u);
      return {
        id: buildNumber(u.buildId, u.diskimage), upload_id: u.id, provider: u.provider, image: u.diskimage,
        external_name: u.externalName, external_id: u.externalId, state: u.state, age: epochSeconds(u.stateTime),
        rollout: phase ? { state: phase.state, words: phase.words } : null, launches: counts.launches, launch_failures: counts.launchFailures,
        pinned: rollout ? uploadPinned(u, rollout.pins) : false,
      };
    });
  const shown = rollout !== undefined && uploads.some((u) => hasRolloutInfo(u, rollout));
  return {
    columns: [['id', 'Build ID'], ['upload_id', 'Upload ID'], ['provider', 'Provider'], ['image', 'Image'],
      ['external_name', 'Provider Image Name'], ['external_id', 'Provider Image ID'], ['state', 'State'], ['age', 'Age'],
      ...(shown ? [['rollout', 'Rollout'], ['launches', 'Launches'], ['launch_failures', 'Launch Failures']] as const : [])],
    rows, cells: { rollout: (v) => (v as { words: string } | null)?.words ?? '' },
  };
}

/** What {@link imageStatus} looks at. */
export interface ImageStatusInput {
  /** Configured diskimages (`pause: true` pauses their builds). */
  diskimages: ReadonlyArray<{ name: string; pause: boolean }>;
  builds: readonly BuildRecord[];
  requests: readonly BuildRequest[];
  pauses: readonly PauseRecord[];
  /** The store's pins and revocations (issue 24); none when absent. */
  rollout?: RolloutRecords;
}

/** The diskimages whose builds are paused, by the config or by an operator (`image-pause`). */
export function pausedDiskimages(diskimages: ImageStatusInput['diskimages'], pauses: readonly PauseRecord[]): Set<string> {
  return new Set([...diskimages.filter((d) => d.pause).map((d) => d.name), ...pauses.filter((p) => p.provider === null).map((p) => p.diskimage)]);
}

/**
 * `/image-status`: one row per image (configured, built, requested or paused), by name.
 * `paused` is true while its builds are paused by the config or an operator (Nodepool knows
 * only the operator's pause znode; our config pause stops builds the same way).
 * `build_request` is `pending` while an operator's build request waits, `building` while a
 * build runs beside it, null without one; `build_request_age` is the request's epoch second.
 * Beside Nodepool's fields (issue 24): `pins` (`[{provider: <name> or all, build, since, reason}]`)
 * and `revocations` (`[{build, since, reason}]`), since in epoch seconds; the table adds
 * `Pinned` and `Revoked` while any image has one.
 */
export function imageStatus(input: ImageStatusInput): NodepoolList {
  const paused = pausedDiskimages(input.diskimages, input.pauses);
  const rollout = input.rollout ?? NO_ROLLOUT;
  const names = [...new Set([
    ...input.diskimages.map((d) => d.name), ...input.builds.map((b) => b.diskimage), ...input.requests.map((r) => r.diskimage),
    ...input.pauses.filter((p) => p.provider === null).map((p) => p.diskimage),
    ...rollout.pins.map((p) => p.diskimage), ...rollout.revocations.map((r) => r.diskimage),
  ])].sort(byString);
  const rows = names.map((image) => {
    const request = input.requests.find((r) => r.diskimage === image);
    const building = input.builds.some((b) => b.diskimage === image && b.state === 'building');
    const r = diskimageRollout(rollout, image);
    return {
      image, paused: paused.has(image), build_request: request ? (building ? 'building' : 'pending') : null,
      build_request_age: request ? epochSeconds(request.requested) : null,
      pins: r.pins.map((p) => ({ provider: p.provider, build: p.buildId, since: epochSeconds(p.since), reason: p.reason })),
      revocations: r.revocations.map((x) => ({ build: x.buildId, since: epochSeconds(x.since), reason: x.reason })),
    };
  });
  const shown = rows.some((r) => r.pins.length > 0 || r.revocations.length > 0);
  return {
    columns: [['image', 'Image'], ['paused', 'Paused'], ['build_request', 'Build Request'], ['build_request_age', 'Build Request Age'],
      ...(shown ? [['pins', 'Pinned'], ['revocations', 'Revoked']] as const : [])],
    rows,
    cells: {
      pins: (v) => (v as Array<{ provider: string; build: string }>).map((p) => `${p.provider}: ${p.build}`).join(', '),
      revocations: (v) => (v as Array<{ build: string }>).map((x) => x.build).join(', '),
    },
  };
}

/**
 * `/node-list`: one row per node, by id. `age` is already `DD:HH:MM:SS` (as Nodepool's JSON
 * has it), `locked` is `locked`/`unlocked` (`locked` holds the ids whose lock is live),
 * `comment` is the hold's reason, and `connection_port` is `redacted` unless an integer.
 */
export function nodeList(nodes: readonly NodeRecord[], locked: ReadonlySet<string>, nowMs: number): NodepoolList {
  const rows = [...nodes].sort((a, b) => byString(a.id, b.id)).map((n) => ({
    id: n.id, provider: n.provider, label: [...n.labels], server_id: n.externalId, public_ipv4: n.publicIpv4, ipv6: n.publicIpv6,
    state: n.state, age: formatAge(nowMs - n.stateTime), locked: locked.has(n.id) ? 'locked' : 'unlocked', pool: n.pool,
    hostname: n.hostname, private_ipv4: n.privateIpv4, AZ: n.az, username: n.username,
    connection_port: Number.isInteger(n.connectionPort) ? n.connectionPort : 'redacted', launcher: n.launcher,
    allocated_to: n.allocatedTo, hold_job: n.holdJob ?? null, comment: n.holdReason, user_data: n.userData ?? null,
    driver_data: n.driverData ?? null,
  }));
  return {
    columns: [['id', 'ID'], ['provider', 'Provider'], ['label', 'Label'], ['server_id', 'Server ID'], ['public_ipv4', 'Public IPv4'],
      ['ipv6', 'IPv6'], ['state', 'State'], ['age', 'Age'], ['locked', 'Locked'], ['pool', 'Pool'], ['hostname', 'Hostname'],
      ['private_ipv4', 'Private IPv4'], ['AZ', 'AZ'], ['username', 'Username'], ['connection_port', 'Port'], ['launcher', 'Launcher'],
      ['allocated_to', 'Allocated To'], ['hold_job', 'Hold Job'], ['comment', 'Comment'], ['user_data', 'User Data'],
      ['driver_data', 'Driver Data']],
    rows,
  };
}

/** `/request-list`: one row per request, by id (priority, then age). */
export function requestList(requests: readonly NodeRequestRecord[]): NodepoolList {
  const rows = [...requests].sort((a, b) => byString(a.id, b.id)).map((r) => ({
    id: r.id, relative_priority: r.relativePriority ?? 0, state: r.state, requestor: r.requestor, node_types: [...r.labels],
    nodes: [...r.nodes], declined_by: [...r.declinedBy], event_id: r.eventId ?? null,
  }));
  return {
    columns: [['id', 'Request ID'], ['relative_priority', 'Priority'], ['state', 'State'], ['requestor', 'Requestor'],
      ['node_types', 'Node Types'], ['nodes', 'Nodes'], ['declined_by', 'Declined By'], ['event_id', 'Event ID']],
    rows,
  };
}

/** `/label-list`: the union of the registered pools' `supported_labels`, in the order first met. */
export function labelList(launchers: readonly LauncherRecord[]): NodepoolList {
  const labels = new Set(launchers.flatMap((l) => l.supportedLabels));
  return { columns: [['label', 'Label']], rows: [...labels].map((label) => ({ label })) };
}
