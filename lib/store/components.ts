/**
 * Nodepool 11's component registry (`/nodepool/components/<kind>/<hostname><seq>`), which
 * Nodepool 11 and Zuul read to find launchers, their pools and labels (Zuul's
 * `getRegisteredLaunchers` reads each pool's `id` and `supported_labels`), and builders. The
 * JSON is written with sorted keys, as Nodepool's `json.dumps(sort_keys=True)`; `model_api` is
 * always 0: a real Nodepool process exits when it sees a component above its own model API.
 * Pure: the ZooKeeper store writes what these functions make.
 */
import { packageVersion, readBuildInfo, type BuildInfo } from '../build-info.js';
import type { LauncherRecord } from './models.js';

/** Component kinds a process registers for itself; pool components come with launcher registrations. */
export const PROCESS_COMPONENT_KINDS = ['launcher', 'builder'] as const;
export type ProcessComponentKind = (typeof PROCESS_COMPONENT_KINDS)[number];

/** Every kind under `/nodepool/components`. */
export type ComponentKind = ProcessComponentKind | 'pool';

/** Nodepool's component states (it only ever writes `running` and `stopped`). */
export type ComponentState = 'initializing' | 'running' | 'paused' | 'stopped';

/** A launcher or builder component: one per process (launcher) or per builder host the server knows of. */
export interface ComponentInfo {
  /** The host's short name (up to the first dot), as Python's `socket.gethostname()` usually gives. */
  hostname: string;
  state: ComponentState;
}

/** A component as read back from the registry (ZooKeeper only). */
export interface ComponentEntry {
  kind: ComponentKind;
  /** The znode's name: `<hostname><10-digit sequence>`. */
  name: string;
  /** The znode's JSON as stored. */
  data: Record<string, unknown>;
}

/** Nodepool's pool `priority` when none is set. */
export const DEFAULT_POOL_PRIORITY = 100;

/** The host part before the first dot (`nl01.example.org` → `nl01`). */
export function shortHostname(hostname: string): string {
  const short = hostname.split('.')[0] ?? '';
  return short === '' ? hostname : short;
}

/**
 * The `version` a component carries, as Nodepool's `"<release>"` or `"<release> <git>"`: the
 * package version and the revision it was built from (lib/build-info.ts).
 */
export function componentVersion(info: BuildInfo | undefined = readBuildInfo()): string {
  if (!info) return packageVersion();
  return info.revision ? `${info.version} ${info.revision}` : info.version;
}

/** A JSON object with its keys sorted (Nodepool writes components with `sort_keys=True`). */
export function sortedKeys(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.keys(o).sort().map((k) => [k, o[k]]));
}

/** A launcher or builder component's JSON. */
export function componentJson(kind: ProcessComponentKind, info: ComponentInfo, version: string): Record<string, unknown> {
  return sortedKeys({ hostname: shortHostname(info.hostname), kind, model_api: 0, state: info.state, version });
}

/**
 * A pool component's JSON for a launcher registration (one pool worker): its `id` is the
 * launcher id (the one in `declined_by` and `node.launcher`).
 */
export function poolComponentJson(l: LauncherRecord, hostname: string, version: string): Record<string, unknown> {
  return sortedKeys({
    hostname: shortHostname(hostname), id: l.id, kind: 'pool', model_api: 0, name: l.pool, paused: l.paused ?? false,
    priority: l.priority ?? DEFAULT_POOL_PRIORITY, provider_name: l.provider, state: 'running',
    supported_labels: [...l.supportedLabels], version,
  });
}
