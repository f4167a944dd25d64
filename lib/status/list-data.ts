/**
 * The reads behind each status list, once: what `nodepool image-list`, `dib-image-list`,
 * `image-status`, `list`, `request-list` and `label-list` show, and the web's lists of the same
 * name (server/web/status-views.ts, nodepool-views.ts), gathered from the store by one function
 * per list. The presenters beside this file shape what these return; nothing here formats.
 */
import type { Config } from '../config/schema.js';
import { providerPools } from '../drivers/config-registry.js';
import type { CorruptRecord } from '../store/corrupt.js';
import { NODE_LOCK_PREFIX } from '../store/lock-names.js';
import { rolloutSettingsFor } from '../rollout/rollout-config.js';
import type {
  BuildRecord, BuildRequest, LauncherRecord, NodeRecord, NodeRequestRecord, PauseRecord, PinRecord, RevocationRecord, UploadRecord,
} from '../store/models.js';
import type { Store } from '../store/store.js';
import type { ServingPool } from './labels.js';
import { LIFECYCLE_STATUS_KEY, type LifecycleStatus } from './lifecycle-status.js';
import type { RolloutRecords, SettingsFor } from './rollout-status.js';

/** The server's last published lifecycle status, or an empty one when it published none. */
export async function readLifecycleStatus(store: Store): Promise<LifecycleStatus> {
  return (await store.getStatus<LifecycleStatus>(LIFECYCLE_STATUS_KEY))?.value ?? { diskimages: [], targets: [] };
}

/** Ids of nodes whose lock is held by a live session. */
export async function lockedNodeIds(store: Store): Promise<Set<string>> {
  const locks = await store.listLocks(NODE_LOCK_PREFIX);
  return new Set(locks.filter((l) => l.live).map((l) => l.resource.slice(NODE_LOCK_PREFIX.length)));
}

/** Every pool of every configured provider, with the labels it serves. */
export function servingPools(config: Config): ServingPool[] {
  return config.providers.flatMap((p) => providerPools(p).map((pool) => ({ provider: p.name, pool: pool.name, labels: pool.labels })));
}

/** The store's pins and revocations (issue 24), read together. */
export async function readRolloutRecords(store: Store): Promise<{ pins: PinRecord[]; revocations: RevocationRecord[] }> {
  const [pins, revocations] = await Promise.all([store.listPins(), store.listRevocations()]);
  return { pins, revocations };
}

/** The `rollout:` settings of each provider diskimage in `config`. */
export function settingsFor(config: Config): SettingsFor {
  return (provider, diskimage) => rolloutSettingsFor(config, provider, diskimage);
}

/** What the upload list shows. */
export interface UploadListData extends RolloutRecords {
  uploads: UploadRecord[];
  status: LifecycleStatus;
  pauses: PauseRecord[];
  /** Corrupt upload and pause records. */
  corrupt: CorruptRecord[];
}

/** Reads the upload list (`image-list`). */
export async function readUploadList(store: Store): Promise<UploadListData> {
  const [uploads, status, pauses, corrupt, rollout] = await Promise.all([
    store.listUploads(), readLifecycleStatus(store), store.listPauses(), store.listCorrupt({ kinds: ['upload', 'pause'] }),
    readRolloutRecords(store),
  ]);
  return { uploads, status, pauses, corrupt, ...rollout };
}

/** What the build list shows. */
export interface BuildListData extends RolloutRecords {
  builds: BuildRecord[];
  status: LifecycleStatus;
  pauses: PauseRecord[];
  /** Corrupt build, pause and build-request records. */
  corrupt: CorruptRecord[];
}

/** Reads the build list (`dib-image-list`). */
export async function readBuildList(store: Store): Promise<BuildListData> {
  const [builds, status, pauses, corrupt, rollout] = await Promise.all([
    store.listBuilds(), readLifecycleStatus(store), store.listPauses(), store.listCorrupt({ kinds: ['build', 'pause', 'build-request'] }),
    readRolloutRecords(store),
  ]);
  return { builds, status, pauses, corrupt, ...rollout };
}

/** What the diskimage status list shows. */
export interface ImageStatusData extends RolloutRecords {
  builds: BuildRecord[];
  requests: BuildRequest[];
  pauses: PauseRecord[];
}

/** Reads the diskimage status list (`image-status`). */
export async function readImageStatusList(store: Store): Promise<ImageStatusData> {
  const [builds, requests, pauses, rollout] = await Promise.all([
    store.listBuilds(), store.listBuildRequests(), store.listPauses(), readRolloutRecords(store),
  ]);
  return { builds, requests, pauses, ...rollout };
}

/** What the node list shows. */
export interface NodeListData {
  nodes: NodeRecord[];
  /** Ids of the nodes locked by a live session. */
  locked: Set<string>;
  /** Corrupt node records. */
  corrupt: CorruptRecord[];
}

/** Reads the node list (`list`); `nodeId` keeps that node (and a corrupt record of that id) only. */
export async function readNodeList(store: Store, opts: { nodeId?: string | null } = {}): Promise<NodeListData> {
  const [nodes, locked, corrupt] = await Promise.all([store.listNodes(), lockedNodeIds(store), store.listCorrupt({ kinds: ['node'] })]);
  const id = opts.nodeId ?? null;
  if (id === null) return { nodes, locked, corrupt };
  return { nodes: nodes.filter((n) => n.id === id), locked, corrupt: corrupt.filter((c) => c.id === id) };
}

/** What the request list shows. */
export interface RequestListData {
  requests: NodeRequestRecord[];
  /** Corrupt request records. */
  corrupt: CorruptRecord[];
  /** The registered pools (why a request waits is read from their standings). */
  launchers: LauncherRecord[];
}

/** Reads the node request list (`request-list`). */
export async function readRequestList(store: Store): Promise<RequestListData> {
  const [requests, corrupt, launchers] = await Promise.all([store.listRequests(), store.listCorrupt({ kinds: ['request'] }), store.listLaunchers()]);
  return { requests, corrupt, launchers };
}

/** What the label list shows. */
export interface LabelListData {
  nodes: NodeRecord[];
  pools: ServingPool[];
}

/** Reads the label list (`label-list`): the nodes, and the pools of `config` serving labels. */
export async function readLabelList(store: Store, config: Config): Promise<LabelListData> {
  return { nodes: await store.listNodes(), pools: servingPools(config) };
}
