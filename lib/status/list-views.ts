/**
 * The status lists as one view each (a table, the lines under it, and the JSON form), made from
 * the reads of list-data.ts by the presenters beside this file. `nodepool image-list`,
 * `dib-image-list`, `image-status`, `list`, `request-list` and `label-list` print these, and
 * the web serves the same ones at `/api/<name>` (server/web/status-views.ts).
 */
import type { Config } from '../config/schema.js';
import type { Store } from '../store/store.js';
import type { NodeRequestRecord } from '../store/models.js';
import type { WaitReason } from '../fleet/placement.js';
import { breakerSettings, waitReasons } from '../fleet/standing.js';
import { ageSeconds } from './age.js';
import { buildTable, diskimageAttention } from './builds.js';
import { corruptJson, corruptLines, corruptRows } from './corrupt.js';
import { imageStatusAttention, imageStatuses, imageStatusTable } from './image-status.js';
import { labelAttention, labelsAt, labelSummaries, labelTable } from './labels.js';
import {
  readBuildList, readImageStatusList, readLabelList, readNodeList, readRequestList, readUploadList, settingsFor,
} from './list-data.js';
import { buildPinned, buildRevoked } from './rollout-status.js';
import { nodeColumns, nodeJson, nodeRows } from './nodes.js';
import { REQUEST_COLUMNS, requestJson, requestRows } from './requests.js';
import { renderTable } from './table.js';
import { imageListJson, targetAttention, uploadTable } from './uploads.js';

/** Where the views read from. */
export interface StatusSource {
  store: Store;
  /** The current config (the server's, reloaded; the CLI's, loaded once). */
  config: () => Config;
  /** Epoch ms, for ages. */
  clock: () => number;
}

/** One list before formatting: a table with lines under it, and the JSON form. */
export interface StatusView {
  columns: readonly string[];
  rows: string[][];
  /** What needs attention, printed under the table. */
  lines: string[];
  json: unknown;
  /** The column `?fields=id` names when the table has no `ID` column (the id of its JSON records). */
  idColumn?: string;
}

/** The table and the lines under it, as the CLI prints them. */
export function viewText(view: Pick<StatusView, 'columns' | 'rows' | 'lines'>): string {
  return renderTable(view.columns, view.rows) + view.lines.map((l) => `${l}\n`).join('');
}

/** The JSON form as the CLI prints it (`--json`). */
export function viewJsonText(view: Pick<StatusView, 'json'>): string {
  return `${JSON.stringify(view.json, null, 2)}\n`;
}

/**
 * `image-list`: uploads (with `Progress` while any runs, and each one's rollout and launches
 * while any has some), and the upload targets that need attention.
 */
export async function uploadListView({ store, config, clock }: StatusSource): Promise<StatusView> {
  const { uploads, status, pauses, corrupt, pins, revocations } = await readUploadList(store);
  const now = clock();
  const rollout = { pins, revocations, settingsFor: settingsFor(config()), now };
  const table = uploadTable(uploads, now, rollout);
  const json = imageListJson(uploads, status.targets, now, rollout);
  return {
    columns: table.columns, rows: [...table.rows, ...corruptRows(table.columns, corrupt, ['upload'])], idColumn: 'Upload ID',
    lines: [...targetAttention({ targets: status.targets, uploads, pauses, now }),
      ...corruptLines(corrupt.filter((c) => c.kind === 'upload' || c.provider !== undefined), ['upload', 'pause', 'upload-retry'])],
    json: { ...json, uploads: [...json.uploads, ...corruptJson(corrupt, ['upload'])] },
  };
}

/** The build view, with the server's reasons for holding deletions back. */
export interface BuildListView extends StatusView {
  json: { builds: unknown[]; diskimages: unknown[] };
  /** Why the server holds deletions back (`deletion held: …`); the CLI shows these, the web list does not. */
  held: string[];
}

/**
 * `dib-image-list`: builds (with `Pinned` and `Revoked` while any is), and the diskimages that
 * need attention. Each build's JSON adds `pinned` (`all`, provider names) and `revoked` (`{since, reason}` or null).
 */
export async function buildListView({ store, clock }: StatusSource): Promise<BuildListView> {
  const { builds, status, pauses, corrupt, pins, revocations } = await readBuildList(store);
  const now = clock();
  const table = buildTable(builds, now, { pins, revocations });
  const buildJson = (b: (typeof builds)[number]): unknown => ({
    ...b, age: ageSeconds(b.stateTime, now), pinned: buildPinned(pins, b), revoked: buildRevoked(revocations, b),
  });
  return {
    columns: table.columns, rows: [...table.rows, ...corruptRows(table.columns, corrupt, ['build'])],
    lines: [...diskimageAttention({ statuses: status.diskimages, builds, pauses, now }), ...corruptLines(corrupt, ['build', 'pause', 'build-request'])],
    json: { builds: [...builds.map(buildJson), ...corruptJson(corrupt, ['build'])], diskimages: status.diskimages },
    held: status.held ?? [],
  };
}

/** `image-status`: paused and requested diskimages, and their pins and revoked builds. */
export async function imageStatusView({ store, config, clock }: StatusSource): Promise<StatusView> {
  const { builds, requests, pauses, pins, revocations } = await readImageStatusList(store);
  const statuses = imageStatuses({
    diskimages: config().diskimages, builtDiskimages: builds.map((b) => b.diskimage), requests, pauses, rollout: { pins, revocations }, now: clock(),
  });
  const table = imageStatusTable(statuses);
  return { columns: table.columns, rows: table.rows, lines: imageStatusAttention(statuses), json: statuses };
}

/** Options of {@link nodeListView}. */
export interface NodeListViewOptions {
  /** Every column (`list --detail`; the web always). */
  detail?: boolean;
  /** Keep only this node. */
  nodeId?: string | null;
}

/** `list`: nodes, and the corrupt node records with what removes them. */
export async function nodeListView({ store, clock }: StatusSource, opts: NodeListViewOptions = {}): Promise<StatusView> {
  const { nodes, locked, corrupt } = await readNodeList(store, { nodeId: opts.nodeId });
  const now = clock();
  const columns = nodeColumns(opts.detail ?? false);
  return {
    columns, rows: [...nodeRows(nodes, locked, now, opts.detail ?? false), ...corruptRows(columns, corrupt, ['node'])],
    lines: corruptLines(corrupt, ['node']),
    json: [...nodes.map((n) => nodeJson(n, locked.has(n.id), now)), ...corruptJson(corrupt, ['node'])],
  };
}

/** `request-list`: node requests by priority, then age. */
export async function requestListView({ store, clock, config }: StatusSource): Promise<StatusView> {
  const { requests, corrupt, launchers } = await readRequestList(store);
  const now = clock();
  const settings = breakerSettings(config().launcher.breaker);
  const reasons = (r: NodeRequestRecord): WaitReason[] => waitReasons(r, launchers, now, settings);
  return {
    columns: REQUEST_COLUMNS, rows: [...requestRows(requests, now, reasons), ...corruptRows(REQUEST_COLUMNS, corrupt, ['request'])],
    lines: corruptLines(corrupt, ['request']),
    json: [...requests.map((r) => requestJson(r, now, reasons(r))), ...corruptJson(corrupt, ['request'])], idColumn: 'Request ID',
  };
}

/** `label-list`: node counts per label against min-ready (a schedule's value now, and its next change), and the pools serving it. */
export async function labelListView({ store, config, clock }: StatusSource): Promise<StatusView> {
  const c = config();
  const { nodes, pools } = await readLabelList(store, c);
  const summaries = labelSummaries({ labels: labelsAt(c.labels, clock()), pools, nodes });
  return { ...labelTable(summaries), lines: labelAttention(summaries), json: summaries };
}
