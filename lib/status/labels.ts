/**
 * Presenters for labels (`nodepool label-list`, later the web status): per label, how many
 * nodes are ready, allocated, in use and building against its min-ready, and which provider
 * pools serve it. Pure: the caller resolves pools from the config (lib/drivers/registry.ts).
 */
import { minReadyAt, type MinReadyNow, type ScheduledLabel } from '../config/min-ready-schedule.js';
import type { NodeRecord } from '../store/models.js';

/** Columns of `nodepool label-list`. */
export const LABEL_COLUMNS = ['Label', 'Min Ready', 'Ready', 'Allocated', 'In Use', 'Building', 'Providers'] as const;
/** The column added while any label has a `min-ready-schedule`: its next change (`2 at 2026-03-30 17:00 UTC`). */
export const NEXT_MIN_READY_COLUMN = 'Next Min Ready';

/** Where a scheduled label's min-ready comes from now, and its next change (`at`: epoch ms). */
export type MinReadySchedule = Pick<MinReadyNow, 'source' | 'nextChange'>;

/** One provider pool and the labels it serves. */
export interface ServingPool {
  provider: string;
  pool: string;
  labels: readonly string[];
}

/** What {@link labelSummaries} looks at. */
export interface LabelInput {
  /** Configured labels in config order. */
  labels: ReadonlyArray<{ name: string; minReady: number; minReadySchedule?: MinReadySchedule }>;
  pools: readonly ServingPool[];
  nodes: readonly NodeRecord[];
}

/** The counts of one label. */
export interface LabelSummary {
  label: string;
  /** Null for a label that nodes carry but the config no longer defines. */
  minReady: number | null;
  /** Only for a label with a `min-ready-schedule`. */
  minReadySchedule?: MinReadySchedule;
  /** Ready and not allocated to a request (what min-ready counts). */
  ready: number;
  /** Ready and allocated to a request. */
  allocated: number;
  inUse: number;
  /** In state init or building. */
  building: number;
  /** `<provider>/<pool>` of every pool serving the label, in config order. */
  providers: string[];
}

/**
 * A summary per configured label, then per label found only on nodes (sorted). A node with
 * several labels (a static host) counts under each.
 */
export function labelSummaries(input: LabelInput): LabelSummary[] {
  const configured = new Set(input.labels.map((l) => l.name));
  const extra = [...new Set(input.nodes.flatMap((n) => n.labels))].filter((l) => !configured.has(l)).sort();
  const rows = [...input.labels.map((l) => ({ label: l.name, minReady: l.minReady as number | null, schedule: l.minReadySchedule })),
    ...extra.map((label) => ({ label, minReady: null, schedule: undefined }))];
  return rows.map(({ label, minReady, schedule }) => {
    const nodes = input.nodes.filter((n) => n.labels.includes(label));
    const count = (pred: (n: NodeRecord) => boolean): number => nodes.filter(pred).length;
    return {
      label, minReady, ...(schedule ? { minReadySchedule: schedule } : {}),
      ready: count((n) => n.state === 'ready' && n.allocatedTo === null),
      allocated: count((n) => n.state === 'ready' && n.allocatedTo !== null),
      inUse: count((n) => n.state === 'in-use'),
      building: count((n) => n.state === 'init' || n.state === 'building'),
      providers: input.pools.filter((p) => p.labels.includes(label)).map((p) => `${p.provider}/${p.pool}`),
    };
  });
}

/** Config labels with their min-ready at `now` (a schedule's value, with its next change). */
export function labelsAt(labels: ReadonlyArray<ScheduledLabel & { name: string }>, now: number): LabelInput['labels'] {
  return labels.map((l) => {
    if (l.minReadySchedule.length === 0) return { name: l.name, minReady: l.minReady };
    const r = minReadyAt(l, now);
    return { name: l.name, minReady: r.minReady, minReadySchedule: { source: r.source, nextChange: r.nextChange } };
  });
}

/** The label-list table: {@link NEXT_MIN_READY_COLUMN} only while some label has a schedule. */
export function labelTable(summaries: readonly LabelSummary[]): { columns: string[]; rows: string[][] } {
  const scheduled = summaries.some((s) => s.minReadySchedule !== undefined);
  const next = (s: LabelSummary): string => {
    const change = s.minReadySchedule?.nextChange;
    if (!s.minReadySchedule) return '';
    if (!change) return 'none within a year';
    return `${change.minReady} at ${new Date(change.at).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
  };
  return {
    columns: scheduled ? [...LABEL_COLUMNS, NEXT_MIN_READY_COLUMN] : [...LABEL_COLUMNS],
    rows: summaries.map((s) => (scheduled ? [...labelRow(s), next(s)] : labelRow(s))),
  };
}

/** One table row; Min Ready is empty for a label the config does not define. */
export function labelRow(s: LabelSummary): string[] {
  return [
    s.label, s.minReady === null ? '' : String(s.minReady), String(s.ready), String(s.allocated), String(s.inUse),
    String(s.building), s.providers.join(','),
  ];
}

/** Lines under the table: labels no pool serves (requests for them fail), and labels no longer configured. */
export function labelAttention(summaries: readonly LabelSummary[]): string[] {
  const lines: string[] = [];
  for (const s of summaries) {
    if (s.minReady === null) lines.push(`${s.label}: not defined in the config (nodes still carry it)`);
    else if (s.providers.length === 0) lines.push(`${s.label}: no provider pool serves it; requests for it fail`);
  }
  return lines;
}
