/**
 * Our richer web lists, served at `/api/<name>` (Nodepool 11's shapes of the same lists are at
 * `/<name>`, nodepool-views.ts): for each of Nodepool's read-only lists, the same table, lines
 * under it and JSON as the CLI command of the same name prints, made by the same lib/status
 * presenters from the server's store and current config.
 */
import type { Config } from '../../lib/config/schema.js';
import { providerPools } from '../../lib/drivers/config-registry.js';
import { ageSeconds } from '../../lib/status/age.js';
import { BUILD_COLUMNS, buildRows, diskimageAttention } from '../../lib/status/builds.js';
import { corruptJson, corruptLines, corruptRows } from '../../lib/status/corrupt.js';
import { IMAGE_STATUS_COLUMNS, imageStatusAttention, imageStatusRow, imageStatuses } from '../../lib/status/image-status.js';
import { LABEL_COLUMNS, labelAttention, labelRow, labelSummaries } from '../../lib/status/labels.js';
import { LIFECYCLE_STATUS_KEY, type LifecycleStatus } from '../../lib/status/lifecycle-status.js';
import { NODE_DETAIL_COLUMNS, nodeJson, nodeRows } from '../../lib/status/nodes.js';
import { REQUEST_COLUMNS, requestJson, requestRows } from '../../lib/status/requests.js';
import { imageListJson, targetAttention, uploadTable } from '../../lib/status/uploads.js';
import { NODE_LOCK_PREFIX } from '../../lib/store/lock-names.js';
import type { Store } from '../../lib/store/store.js';

/** Where the views read from. */
export interface StatusSource {
  store: Store;
  /** The server's current config. */
  config: () => Config;
  /** Epoch ms, for ages. */
  clock: () => number;
}

/** One endpoint's answer before formatting: a table with lines under it, and the JSON form. */
export interface StatusView {
  columns: readonly string[];
  rows: string[][];
  /** What needs attention, printed under the table (as the CLI does). */
  lines: string[];
  json: unknown;
  /** The column `?fields=id` names when the table has no `ID` column (the id of its JSON records). */
  idColumn?: string;
}

/** A view maker; `params` are the request's query parameters. */
export type StatusViewFn = (src: StatusSource, params: URLSearchParams) => Promise<StatusView>;

async function lifecycleStatus(store: Store): Promise<LifecycleStatus> {
  return (await store.getStatus<LifecycleStatus>(LIFECYCLE_STATUS_KEY))?.value ?? { diskimages: [], targets: [] };
}

/** `nodepool image-list`: uploads (with `Progress` while any runs), and the upload targets that need attention. */
const imageList: StatusViewFn = async ({ store, clock }) => {
  const [uploads, status, pauses, corrupt] = await Promise.all([
    store.listUploads(), lifecycleStatus(store), store.listPauses(), store.listCorrupt({ kinds: ['upload', 'pause'] }),
  ]);
  const now = clock();
  const table = uploadTable(uploads, now);
  const json = imageListJson(uploads, status.targets, now);
  // Corrupt records as the CLI shows them (lib/status/corrupt.ts).
  return {
    columns: table.columns, rows: [...table.rows, ...corruptRows(table.columns, corrupt, ['upload'])], idColumn: 'Upload ID',
    lines: [...targetAttention({ targets: status.targets, uploads, pauses, now }),
      ...corruptLines(corrupt.filter((c) => c.kind === 'upload' || c.provider !== undefined), ['upload', 'pause'])],
    json: { ...json, uploads: [...json.uploads, ...corruptJson(corrupt, ['upload'])] },
  };
};

/** `nodepool dib-image-list`: builds, and the diskimages that need attention. */
const dibImageList: StatusViewFn = async ({ store, clock }) => {
  const [builds, status, pauses, corrupt] = await Promise.all([
    store.listBuilds(), lifecycleStatus(store), store.listPauses(), store.listCorrupt({ kinds: ['build', 'pause', 'build-request'] }),
  ]);
  const now = clock();
  return {
    columns: BUILD_COLUMNS, rows: [...buildRows(builds, now), ...corruptRows(BUILD_COLUMNS, corrupt, ['build'])],
    lines: [...diskimageAttention({ statuses: status.diskimages, builds, pauses, now }), ...corruptLines(corrupt, ['build', 'pause', 'build-request'])],
    json: { builds: [...builds.map((b) => ({ ...b, age: ageSeconds(b.stateTime, now) })), ...corruptJson(corrupt, ['build'])], diskimages: status.diskimages },
  };
};

/** `nodepool image-status`: paused and requested diskimages. */
const imageStatus: StatusViewFn = async ({ store, config, clock }) => {
  const [builds, requests, pauses] = await Promise.all([store.listBuilds(), store.listBuildRequests(), store.listPauses()]);
  const statuses = imageStatuses({ diskimages: config().diskimages, builtDiskimages: builds.map((b) => b.diskimage), requests, pauses, now: clock() });
  return { columns: IMAGE_STATUS_COLUMNS, rows: statuses.map(imageStatusRow), lines: imageStatusAttention(statuses), json: statuses };
};

/** `nodepool list --detail` (Nodepool's webapp shows every column); `?node_id=` keeps one node. */
const nodeList: StatusViewFn = async ({ store, clock }, params) => {
  const id = params.get('node_id');
  const [all, locks, allCorrupt] = await Promise.all([store.listNodes(), store.listLocks(NODE_LOCK_PREFIX), store.listCorrupt({ kinds: ['node'] })]);
  const nodes = id === null ? all : all.filter((n) => n.id === id);
  const corrupt = id === null ? allCorrupt : allCorrupt.filter((c) => c.id === id);
  const locked = new Set(locks.filter((l) => l.live).map((l) => l.resource.slice(NODE_LOCK_PREFIX.length)));
  const now = clock();
  return {
    columns: NODE_DETAIL_COLUMNS, rows: [...nodeRows(nodes, locked, now, true), ...corruptRows(NODE_DETAIL_COLUMNS, corrupt, ['node'])],
    lines: corruptLines(corrupt, ['node']),
    json: [...nodes.map((n) => nodeJson(n, locked.has(n.id), now)), ...corruptJson(corrupt, ['node'])],
  };
};

/** `nodepool request-list`. */
const requestList: StatusViewFn = async ({ store, clock }) => {
  const [requests, corrupt] = await Promise.all([store.listRequests(), store.listCorrupt({ kinds: ['request'] })]);
  const now = clock();
  return {
    columns: REQUEST_COLUMNS, rows: [...requestRows(requests, now), ...corruptRows(REQUEST_COLUMNS, corrupt, ['request'])],
    lines: corruptLines(corrupt, ['request']),
    json: [...requests.map((r) => requestJson(r, now)), ...corruptJson(corrupt, ['request'])], idColumn: 'Request ID',
  };
};

/** `nodepool label-list`: node counts per label against min-ready, and the pools serving it. */
const labelList: StatusViewFn = async ({ store, config }) => {
  const c = config();
  const pools = c.providers.flatMap((p) => providerPools(p).map((pool) => ({ provider: p.name, pool: pool.name, labels: pool.labels })));
  const summaries = labelSummaries({ labels: c.labels, pools, nodes: await store.listNodes() });
  return { columns: LABEL_COLUMNS, rows: summaries.map(labelRow), lines: labelAttention(summaries), json: summaries };
};

/** Our lists by Nodepool's path, served under `/api` (each also answers with a `.json` suffix). */
export const STATUS_VIEWS: ReadonlyMap<string, StatusViewFn> = new Map([
  ['/image-list', imageList],
  ['/dib-image-list', dibImageList],
  ['/image-status', imageStatus],
  ['/node-list', nodeList],
  ['/request-list', requestList],
  ['/label-list', labelList],
]);
