/**
 * The lists of Nodepool 11's webapp at its paths (`/dib-image-list`, `/image-list`,
 * `/image-status`, `/node-list`, `/request-list`, `/label-list`): read from the server's store
 * and shaped by lib/status/nodepool-lists.ts. Corrupt records, attention lines and our extra
 * fields are left out here; the richer lists stay at `/api/<same name>` (status-views.ts).
 */
import * as lists from '../../lib/status/nodepool-lists.js';
import type { NodepoolList } from '../../lib/status/nodepool-format.js';
import { NODE_LOCK_PREFIX } from '../../lib/store/lock-names.js';
import type { StatusSource } from './status-views.js';

/** A list maker; `params` are the request's query parameters. */
export type NodepoolViewFn = (src: StatusSource, params: URLSearchParams) => Promise<NodepoolList>;

const dibImageList: NodepoolViewFn = async ({ store, config }) => {
  const [builds, pauses] = await Promise.all([store.listBuilds(), store.listPauses()]);
  return lists.dibImageList(builds, lists.pausedDiskimages(config().diskimages, pauses));
};

const imageList: NodepoolViewFn = async ({ store }) => lists.imageList(await store.listUploads());

const imageStatus: NodepoolViewFn = async ({ store, config }) => {
  const [builds, requests, pauses] = await Promise.all([store.listBuilds(), store.listBuildRequests(), store.listPauses()]);
  return lists.imageStatus({ diskimages: config().diskimages, builds, requests, pauses });
};

/** `?node_id=` keeps that node (none when unknown), as Nodepool's `getNode`. */
const nodeList: NodepoolViewFn = async ({ store, clock }, params) => {
  const id = params.get('node_id');
  const [all, locks] = await Promise.all([store.listNodes(), store.listLocks(NODE_LOCK_PREFIX)]);
  const locked = new Set(locks.filter((l) => l.live).map((l) => l.resource.slice(NODE_LOCK_PREFIX.length)));
  return lists.nodeList(id ? all.filter((n) => n.id === id) : all, locked, clock());
};

const requestList: NodepoolViewFn = async ({ store }) => lists.requestList(await store.listRequests());

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
