/**
 * Our richer web lists, served at `/api/<name>` (Nodepool 11's shapes of the same lists are at
 * `/<name>`, nodepool-views.ts): for each of Nodepool's read-only lists, the same table, lines
 * under it and JSON as the CLI command of the same name prints, made by the same view functions
 * (lib/status/list-views.ts) from the server's store and current config.
 */
import {
  buildListView, imageStatusView, labelListView, nodeListView, requestListView, uploadListView,
  type StatusSource, type StatusView,
} from '../../lib/status/list-views.js';

export type { StatusSource, StatusView } from '../../lib/status/list-views.js';

/** A view maker; `params` are the request's query parameters. */
export type StatusViewFn = (src: StatusSource, params: URLSearchParams) => Promise<StatusView>;

/** `nodepool dib-image-list`, without the CLI's `deletion held` lines and JSON key. */
const dibImageList: StatusViewFn = async (src) => {
  const { held: _held, ...view } = await buildListView(src);
  return view;
};

/** `nodepool list --detail` (Nodepool's webapp shows every column); `?node_id=` keeps one node. */
const nodeList: StatusViewFn = (src, params) => nodeListView(src, { detail: true, nodeId: params.get('node_id') });

/** Our lists by Nodepool's path, served under `/api` (each also answers with a `.json` suffix). */
export const STATUS_VIEWS: ReadonlyMap<string, StatusViewFn> = new Map([
  ['/image-list', uploadListView],
  ['/dib-image-list', dibImageList],
  ['/image-status', imageStatusView],
  ['/node-list', nodeList],
  ['/request-list', requestListView],
  ['/label-list', labelListView],
]);
