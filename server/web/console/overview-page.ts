/**
 * The console's overview at `/` (issue 25 §3): health (ready, every loop with its last
 * failure), counts of nodes, requests, builds and uploads by state, node and request counts
 * over the last hours as charts (count-sampler.ts), recent failures and the newest entries of
 * the audit trail. {@link readOverview} reads; {@link overviewPage} is pure.
 */
import { formatAge } from '../../../lib/status/age.js';
import { coerceError } from '../../../lib/errors.js';
import { stuckForMs, type LoopHealth } from '../../../lib/periodic-loop.js';
import type { AuditRecord, BuildRecord, NodeRecord, NodeRequestRecord, UploadRecord } from '../../../lib/store/models.js';
import { BUILD_STATES, NODE_STATES, REQUEST_STATES, UPLOAD_STATES } from '../../../lib/store/models.js';
import type { WebContext } from '../web-context.js';
import { readinessReport } from '../health.js';
import { chartGeometry, type ChartFrame } from './chart-geometry.js';
import { chartSvg } from './chart-svg.js';
import { countByState, type CountSample } from './count-sampler.js';
import { stateCell, type Block, type Cell, type ConsolePage } from './page-model.js';

/** Audit entries shown. */
export const AUDIT_SHOWN = 20;
/** Failures shown. */
export const FAILURES_SHOWN = 10;

/** What the overview is made from. */
export interface OverviewData {
  now: number;
  started: boolean;
  loops: readonly LoopHealth[];
  builds: readonly BuildRecord[];
  uploads: readonly UploadRecord[];
  nodes: readonly NodeRecord[];
  requests: readonly NodeRequestRecord[];
  /** The newest entries, or why the trail could not be read. */
  audit: readonly AuditRecord[] | { error: string };
  samples: readonly CountSample[];
  windowMs: number;
}

/** Reads what the overview shows. */
export async function readOverview(ctx: WebContext, samples: readonly CountSample[], windowMs: number): Promise<OverviewData> {
  const [builds, uploads, nodes, requests, audit] = await Promise.all([
    ctx.store.listBuilds(), ctx.store.listUploads(), ctx.store.listNodes(), ctx.store.listRequests(),
    ctx.store.listAudit({ limit: AUDIT_SHOWN }).catch((raw: unknown) => ({ error: coerceError(raw).message })),
  ]);
  return { now: ctx.clock(), started: ctx.started(), loops: ctx.loops(), builds, uploads, nodes, requests, audit, samples, windowMs };
}

const CHART_FRAME: Omit<ChartFrame, 'now' | 'windowMs'> = { width: 560, height: 200, margin: { left: 36, right: 130, top: 10, bottom: 22 } };

/** `ready 3, building 1` in the order of `states`, then any others. */
export function byStateText(counts: Readonly<Record<string, number>>, states: readonly string[]): string {
  const keys = [...states.filter((s) => counts[s]), ...Object.keys(counts).filter((s) => !states.includes(s)).sort()];
  return keys.map((s) => `${s} ${counts[s]}`).join(', ');
}

function loopRow(l: LoopHealth, now: number): Cell[] {
  const stuck = stuckForMs(l, now);
  const state = stuck !== null ? 'stuck' : l.consecutiveFailures > 0 ? 'failing' : l.passes === 0 ? 'waiting' : 'ok';
  return [
    l.name, { text: state, cls: `state-${state === 'ok' ? 'ok' : state === 'waiting' ? 'pending' : 'failed'}` }, String(l.passes), String(l.consecutiveFailures),
    l.lastSuccess === null ? 'never' : `${formatAge(now - l.lastSuccess)} ago`,
    stuck !== null ? `pass running for ${formatAge(stuck)}` : '',
    { text: l.lastError ?? '', pre: true },
  ];
}

/** The failed builds, uploads, nodes and requests, newest first. */
export function recentFailures(d: Pick<OverviewData, 'builds' | 'uploads' | 'nodes' | 'requests'>, limit = FAILURES_SHOWN): Array<{ kind: string; id: string; what: string; time: number; reason: string; href?: string }> {
  return [
    ...d.builds.filter((b) => b.state === 'failed' || b.state === 'lost').map((b) => ({ kind: `build ${b.state}`, id: b.id, what: b.diskimage, time: b.stateTime, reason: b.reason ?? '', href: `/builds/${encodeURIComponent(b.id)}` })),
    ...d.uploads.filter((u) => u.state === 'failed').map((u) => ({ kind: 'upload failed', id: u.id, what: `${u.buildId} to ${u.provider}`, time: u.stateTime, reason: u.reason ?? '', href: `/builds/${encodeURIComponent(u.buildId)}` })),
    ...d.nodes.filter((n) => n.state === 'failed' || n.state === 'aborted').map((n) => ({ kind: `node ${n.state}`, id: n.id, what: `${n.labels.join(',')} on ${n.provider}`, time: n.stateTime, reason: n.reason ?? '' })),
    ...d.requests.filter((r) => r.state === 'failed').map((r) => ({ kind: 'request failed', id: r.id, what: `${r.labels.join(',')} for ${r.requestor}`, time: r.stateTime, reason: r.reason ?? '' })),
  ].sort((a, b) => b.time - a.time).slice(0, limit);
}

/** The overview page. */
export function overviewPage(d: OverviewData): ConsolePage {
  const report = readinessReport(d.started, d.loops, d.now);
  const summary = report.ready ? { text: 'ready: every loop passes', ok: true }
    : { text: report.text.split('\n').join('; '), ok: false };
  const counts: Cell[][] = [
    ['Nodes', String(d.nodes.length), byStateText(countByState(d.nodes), NODE_STATES)],
    ['Requests', String(d.requests.length), byStateText(countByState(d.requests), REQUEST_STATES)],
    ['Builds', String(d.builds.length), byStateText(countByState(d.builds), BUILD_STATES)],
    ['Uploads', String(d.uploads.length), byStateText(countByState(d.uploads), UPLOAD_STATES)],
  ];
  const frame = { ...CHART_FRAME, now: d.now, windowMs: d.windowMs };
  const chart = (key: 'nodes' | 'requests', order: readonly string[], title: string): Block => ({
    kind: 'chart', id: `chart-${key}`, title,
    svg: chartSvg(chartGeometry(d.samples.map((s) => ({ time: s.time, counts: s[key] })), frame, order), title),
  });
  const span = d.windowMs >= 3_600_000 ? `${Math.round(d.windowMs / 3_600_000)} h` : `${Math.max(1, Math.round(d.windowMs / 60_000))} min`;
  const audit: Block = 'error' in d.audit
    ? { kind: 'lines', id: 'audit', title: 'Audit trail', lines: [`audit trail unavailable: ${d.audit.error}`] }
    : {
      kind: 'table', id: 'audit', title: `Audit trail (newest ${AUDIT_SHOWN})`, empty: 'no writes yet',
      columns: ['Time (UTC)', 'User', 'Role', 'Action', 'Target', 'Result', 'Status', 'Message', 'From'],
      rows: d.audit.map((a) => [new Date(a.time).toISOString().replace('T', ' ').slice(0, 19), a.user ?? '', a.role ?? '', a.action, a.target,
        stateCell(a.result), String(a.status), a.message, a.remote ?? '']),
    };
  return {
    title: 'Overview', nav: '/', generated: d.now, summary,
    blocks: [
      { kind: 'table', id: 'loops', title: 'Loops', columns: ['Loop', 'State', 'Passes', 'Failed in a row', 'Last success', 'Stuck', 'Last error'], rows: d.loops.map((l) => loopRow(l, d.now)), empty: 'no loops run here' },
      { kind: 'table', id: 'counts', title: 'Counts', columns: ['What', 'Total', 'By state'], rows: counts },
      chart('nodes', NODE_STATES, `Nodes by state, last ${span}`),
      chart('requests', REQUEST_STATES, `Requests by state, last ${span}`),
      {
        kind: 'table', id: 'failures', title: 'Recent failures', columns: ['What failed', 'ID', 'Of', 'Age', 'Reason'], empty: 'no failures kept',
        rows: recentFailures(d).map((f) => [{ text: f.kind, cls: 'state-failed' }, f.href ? { text: f.id, href: f.href } : f.id, f.what, formatAge(d.now - f.time), { text: f.reason, pre: true }]),
      },
      audit,
    ],
  };
}
