/**
 * Presenters for labels (`nodepool label-list`, later the web status): per label, how many
 * nodes are ready, allocated, in use and building against its min-ready, and which provider
 * pools serve it. Pure: the caller resolves pools from the config (lib/drivers/registry.ts).
 */
import type { NodeRecord } from '../store/models.js';

/** Columns of `nodepool label-list`. */
export const LABEL_COLUMNS = ['Label', 'Min Ready', 'Ready', 'Allocated', 'In Use', 'Building', 'Providers'] as const;

/** One provider pool and the labels it serves. */
export interface ServingPool {
  provider: string;
  pool: string;
  labels: readonly string[];
}

/** What {@link labelSummaries} looks at. */
export interface LabelInput {
  /** Configured labels in config order. */
  labels: ReadonlyArray<{ name: string; minReady: number }>;
  pools: readonly ServingPool[];
  nodes: readonly NodeRecord[];
}

/** The counts of one label. */
export interface LabelSummary {
  label: string;
  /** Null for a label that nodes carry but the config no longer defines. */
  minReady: number | null;
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
  const rows = [...input.labels.map((l) => ({ label: l.name, minReady: l.minReady as number | null })),
    ...extra.map((label) => ({ label, minReady: null }))];
  return rows.map(({ label, minReady }) => {
    const nodes = input.nodes.filter((n) => n.labels.includes(label));
    const count = (pred: (n: NodeRecord) => boolean): number => nodes.filter(pred).length;
    return {
      label, minReady,
      ready: count((n) => n.state === 'ready' && n.allocatedTo === null),
      allocated: count((n) => n.state === 'ready' && n.allocatedTo !== null),
      inUse: count((n) => n.state === 'in-use'),
      building: count((n) => n.state === 'init' || n.state === 'building'),
      providers: input.pools.filter((p) => p.labels.includes(label)).map((p) => `${p.provider}/${p.pool}`),
    };
  });
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
