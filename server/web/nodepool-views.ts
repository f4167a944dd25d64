/**
 * The lists of Nodepool 11's webapp at its paths (`/dib-image-list`, `/image-list`,
 * `/image-status`, `/node-list`, `/request-list`, `/label-list`): read from the server's store
 * by the same gathering functions as our lists and the CLI (lib/status/list-data.ts) and shaped
 * by lib/status/nodepool-lists.ts. Corrupt records, attention lines and our extra fields are
 * left out here; the richer lists stay at `/api/<same name>` (status-views.ts).
 */
import {
  readBuildList, readImageStatusList, readNodeList, readRequestList, readRolloutRecords, settingsFor,
} from '../../lib/status/list-data.js';
import * as lists from '../../lib/status/nodepool-lists.js';
import type { NodepoolList } from '../../lib/status/nodepool-format.js';
import type { StatusSource } from '../../lib/status/list-views.js';

/** A list maker; `params` are the request's query parameters. */
export type NodepoolViewFn = (src: StatusSource, params: URLSearchParams) => Promise<NodepoolList>;

const dibImageList: NodepoolViewFn = async ({ store, config }) => {
  const { builds, pauses, pins, revocations } = await readBuildList(store);
  return lists.dibImageList(builds, lists.pausedDiskimages(config().diskimages, pauses), { pins, revocations });
};

const imageList: NodepoolViewFn = async ({ store, config, clock }) => {
  const [uploads, { pins, revocations }] = await Promise.all([store.listUploads(), readRolloutRecords(store)]);
  return lists.imageList(uploads, { pins, revocations, settingsFor: settingsFor(config()), now: clock() });
};

const imageStatus: NodepoolViewFn = async ({ store, config }) => {
  const { builds, requests, pauses, pins, revocations } = await readImageStatusList(store);
  return lists.imageStatus({ diskimages: config().diskimages, builds, requests, pauses, rollout: { pins, revocations } });
};

/** `?node_id=` keeps that node (none when unknown), as Nodepool's `getNode`; an empty one keeps all. */
const nodeList: NodepoolViewFn = async ({ store, clock }, params) => {
  const { nodes, locked } = await readNodeList(store, { nodeId: params.get('node_id') || null });
  return lists.nodeList(nodes, locked, clock());
};

const requestList: NodepoolViewFn = async ({ store }) => lists.requestList((await readRequestList(store)).requests);

const labelList: NodepoolViewFn = async ({ store }) => lists.labelList(await store.listLaunchers());

/** Nodepool's list endpoints by path (each also answers with a `.json` suffix, which asks for JSON). */
export const NODEPOOL_VIEWS: ReadonlyMap<string, NodepoolViewFn> = new Map([
  ['/dib-image-list', dibImageList],
  ['/image-list', imageList],
  ['/image-status', imageStatus],
  ['/node-list', nodeList],
  ['/request-list', requestList],
  ['/label-list', labelList],
]);
