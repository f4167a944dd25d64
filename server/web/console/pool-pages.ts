/**
 * The console's pages of the pool (issue 25 §3): nodes (filtered by provider, label and state
 * through query parameters; hold, release and delete buttons), node requests, and labels with
 * their min-ready against the current supply (as `label-list` counts it). Reads with the CLI's
 * list-data.ts; the page functions are pure.
 */
import { formatAge } from '../../../lib/status/age.js';
import { labelsAt, labelSummaries, type LabelSummary } from '../../../lib/status/labels.js';
import { readNodeList, readRequestList, servingPools } from '../../../lib/status/list-data.js';
import { holdExpiresText } from '../../../lib/status/nodes.js';
import { waitText } from '../../../lib/status/requests.js';
import type { WaitReason } from '../../../lib/fleet/placement.js';
import { breakerSettings, waitReasons } from '../../../lib/fleet/standing.js';
import { NODE_STATES, type NodeRecord, type NodeRequestRecord } from '../../../lib/store/models.js';
import type { WebContext } from '../web-context.js';
import { byStateText } from './overview-page.js';
import { countByState } from './count-sampler.js';
import { stateCell, type ActionButton, type Cell, type ConsolePage } from './page-model.js';

const enc = encodeURIComponent;

/** The node filter of the query (`?provider=&label=&state=`; empty means any). */
export interface NodeFilterQuery {
  provider: string;
  label: string;
  state: string;
}

export function nodeFilterOf(params: URLSearchParams): NodeFilterQuery {
  return { provider: params.get('provider') ?? '', label: params.get('label') ?? '', state: params.get('state') ?? '' };
}

export interface NodesData {
  now: number;
  nodes: NodeRecord[];
  locked: ReadonlySet<string>;
  filter: NodeFilterQuery;
}

export async function readNodes(ctx: WebContext, params: URLSearchParams): Promise<NodesData> {
  const { nodes, locked } = await readNodeList(ctx.store);
  return { now: ctx.clock(), nodes, locked, filter: nodeFilterOf(params) };
}

function nodeActions(n: NodeRecord): ActionButton[] {
  return [
    n.state === 'hold'
      ? { label: 'Release', method: 'POST', path: `/api/node/${enc(n.id)}/release` }
      : { label: 'Hold', method: 'POST', path: `/api/node/${enc(n.id)}/hold` },
    { label: 'Delete', method: 'DELETE', path: `/api/node/${enc(n.id)}`, confirm: `Delete node ${n.id}?` },
  ];
}

/** The nodes page. */
export function nodesPage(d: NodesData): ConsolePage {
  const f = d.filter;
  const shown = d.nodes.filter((n) => (!f.provider || n.provider === f.provider) && (!f.label || n.labels.includes(f.label)) && (!f.state || n.state === f.state));
  const distinct = (xs: string[]): string[] => [...new Set(xs)].sort();
  return {
    title: 'Nodes', nav: '/nodes', generated: d.now,
    summary: { text: `${shown.length} of ${d.nodes.length} nodes${shown.length ? `: ${byStateText(countByState(shown), NODE_STATES)}` : ''}`, ok: true },
    filters: [
      { name: 'provider', label: 'Provider', options: distinct(d.nodes.map((n) => n.provider)), value: f.provider },
      { name: 'label', label: 'Label', options: distinct(d.nodes.flatMap((n) => n.labels)), value: f.label },
      { name: 'state', label: 'State', options: [...NODE_STATES], value: f.state },
    ],
    blocks: [{
      kind: 'table', id: 'nodes', empty: d.nodes.length ? 'no node matches the filter' : 'no nodes',
      columns: ['Node', 'Provider', 'Pool', 'Labels', 'State', 'Age', 'Address', 'Server ID', 'Image', 'Locked', 'Allocated to', 'Hold', ''],
      rows: shown.map((n): Cell[] => [
        n.id, n.provider, n.pool, n.labels.join(','), stateCell(n.state), formatAge(d.now - n.stateTime),
        n.interfaceIp ?? n.publicIpv4 ?? n.publicIpv6 ?? n.privateIpv4 ?? '', n.externalId ?? '', n.image ?? '', d.locked.has(n.id) ? 'locked' : '',
        n.allocatedTo ?? '', [n.holdReason ?? '', holdExpiresText(n.holdExpiration, d.now)].filter(Boolean).join(', expires in '),
        { actions: nodeActions(n) },
      ]),
    }],
  };
}

export interface RequestsData {
  now: number;
  requests: NodeRequestRecord[];
  /** Why each waiting request is not served, by request id (lib/fleet/standing.ts). */
  waiting: ReadonlyMap<string, WaitReason[]>;
}

export async function readRequests(ctx: Pick<WebContext, 'store' | 'clock' | 'config'>): Promise<RequestsData> {
  const { requests, launchers } = await readRequestList(ctx.store);
  const now = ctx.clock();
  const settings = breakerSettings(ctx.config().launcher.breaker);
  return { now, requests, waiting: new Map(requests.map((r) => [r.id, waitReasons(r, launchers, now, settings)])) };
}

/** The requests page. */
export function requestsPage(d: RequestsData): ConsolePage {
  return {
    title: 'Requests', nav: '/requests', generated: d.now,
    summary: { text: `${d.requests.length} requests${d.requests.length ? `: ${byStateText(countByState(d.requests), [])}` : ''}`, ok: true },
    blocks: [{
      kind: 'table', id: 'requests', empty: 'no requests',
      columns: ['Request', 'State', 'Priority', 'Labels', 'Requestor', 'Provider', 'Nodes', 'Declined by', 'Age', 'Reason', 'Waiting'],
      rows: d.requests.map((r) => [r.id, stateCell(r.state), String(r.priority), r.labels.join(','), r.requestor, r.provider ?? '',
        r.nodes.join(','), r.declinedBy.join(','), formatAge(d.now - r.stateTime), { text: r.reason ?? '', pre: true },
        { text: waitText(d.waiting.get(r.id) ?? []), pre: true }]),
    }],
  };
}

export interface LabelsData {
  now: number;
  summaries: LabelSummary[];
}

export async function readLabels(ctx: WebContext): Promise<LabelsData> {
  const config = ctx.config();
  const now = ctx.clock();
  const nodes = await ctx.store.listNodes();
  return { now, summaries: labelSummaries({ labels: labelsAt(config.labels, now), pools: servingPools(config), nodes }) };
}

/** `ok`, `short 2` (ready below min-ready), `not configured`, `no pool serves it`. */
export function supplyCell(s: LabelSummary): Cell {
  if (s.minReady === null) return { text: 'not configured', cls: 'state-hold' };
  if (s.providers.length === 0) return { text: 'no pool serves it', cls: 'state-failed' };
  return s.ready >= s.minReady ? { text: 'ok', cls: 'state-ok' } : { text: `short ${s.minReady - s.ready}`, cls: 'state-short' };
}

/** The labels page. */
export function labelsPage(d: LabelsData): ConsolePage {
  const short = d.summaries.filter((s) => s.minReady !== null && s.ready < s.minReady).length;
  return {
    title: 'Labels', nav: '/labels', generated: d.now,
    summary: { text: short ? `${short} label${short === 1 ? '' : 's'} below min-ready` : 'every label at min-ready', ok: short === 0 },
    blocks: [{
      kind: 'table', id: 'labels', empty: 'no labels',
      columns: ['Label', 'Min ready', 'Ready', 'Allocated', 'In use', 'Building', 'Supply', 'Next min-ready', 'Providers'],
      rows: d.summaries.map((s) => [s.label, s.minReady === null ? '' : String(s.minReady), String(s.ready), String(s.allocated), String(s.inUse),
        String(s.building), supplyCell(s),
        s.minReadySchedule ? (s.minReadySchedule.nextChange ? `${s.minReadySchedule.nextChange.minReady} at ${new Date(s.minReadySchedule.nextChange.at).toISOString().slice(0, 16).replace('T', ' ')} UTC` : 'none within a year') : '',
        s.providers.join(', ')]),
    }],
  };
}
