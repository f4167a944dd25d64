/**
 * Splitting a nodeset across pools (pure). A node request is served by one pool, as in
 * Nodepool. When no live launcher serves every label of a nodeset, the client asks for it
 * in parts: each part the labels one launcher serves (the launcher serving the most of the
 * remaining labels first), and the labels nobody serves as a last part, which then fails
 * with the launchers' reason.
 */
import type { LauncherRecord } from '../store/models.js';

/** One request of a split nodeset: its labels and their positions in the nodeset. */
export interface NodesetPart {
  labels: string[];
  positions: number[];
}

export function splitNodeset(labels: readonly string[], launchers: ReadonlyArray<Pick<LauncherRecord, 'supportedLabels'>>): NodesetPart[] {
  const whole = (): NodesetPart[] => [{ labels: [...labels], positions: labels.map((_, i) => i) }];
  if (launchers.length === 0 || launchers.some((l) => labels.every((x) => l.supportedLabels.includes(x)))) return whole();
  let remaining = labels.map((label, position) => ({ label, position }));
  const parts: NodesetPart[] = [];
  while (remaining.length) {
    let best: typeof remaining = [];
    for (const l of launchers) {
      const covered = remaining.filter((r) => l.supportedLabels.includes(r.label));
      if (covered.length > best.length) best = covered;
    }
    if (best.length === 0) best = remaining;
    parts.push({ labels: best.map((b) => b.label), positions: best.map((b) => b.position) });
    remaining = remaining.filter((r) => !best.includes(r));
  }
  return parts;
}
