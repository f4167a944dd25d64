/**
 * Figures of the fault suite (test/faults/): each scenario appends one JSON line to the file
 * named by `NODEPOOL_FAULTS_REPORT` (nothing is written when it is unset), and
 * `node --import tsx test/support/fault-report.ts table <file>` prints them as a table
 * (markdown, the form the README shows).
 */
import { appendFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** One scenario's figures. */
export interface FaultFigures {
  scenario: string;
  /** How many times the fault was injected. */
  runs: number;
  /** Runs after which the system reached its wanted state again (within the scenario's bound). */
  recovered: number;
  /** Ready build/upload records (or valid answers) that disappeared or changed. */
  lost: number;
  /** Cloud images, files or processes left that no record accounts for. */
  leaked: number;
  /** Longest time from the fault to the wanted state again, in ms (null when not measured). */
  recoverMs: number | null;
  /** Free-form extra figures (RSS, error counts). */
  notes?: string;
}

/** Appends `f` to the report file, when `NODEPOOL_FAULTS_REPORT` names one. */
export function recordFault(f: FaultFigures): void {
  const file = process.env.NODEPOOL_FAULTS_REPORT;
  if (!file) return;
  appendFileSync(file, `${JSON.stringify(f)}\n`);
}

/** The report's lines as a markdown table, one row per scenario (the last line of a scenario wins), sorted by name, then the notes. */
export function faultTable(text: string): string {
  const rows = new Map<string, FaultFigures>();
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const f = JSON.parse(line) as FaultFigures;
    rows.set(f.scenario, f);
  }
  const head = ['scenario', 'runs', 'recovered', 'lost', 'leaked', 'time to recover'];
  const sorted = [...rows.values()].sort((a, b) => a.scenario.localeCompare(b.scenario, 'en'));
  const body = sorted.map((f) => [
    f.scenario, String(f.runs), String(f.recovered), String(f.lost), String(f.leaked),
    f.recoverMs === null ? '—' : `${(f.recoverMs / 1000).toFixed(1)} s`,
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((r) => (r[i] as string).length)));
  const fmt = (r: string[]): string => `| ${r.map((c, i) => c.padEnd(widths[i] as number)).join(' | ')} |`;
  const notes = sorted.filter((f) => f.notes).map((f) => `- ${f.scenario}: ${f.notes}`);
  return [fmt(head), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...body.map(fmt), ...(notes.length ? ['', ...notes] : [])].join('\n');
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [cmd, file] = process.argv.slice(2);
  if (cmd !== 'table' || !file) {
    process.stderr.write('usage: node --import tsx test/support/fault-report.ts table <report.jsonl>\n');
    process.exit(2);
  }
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    process.stderr.write(`${file}: no fault figures were recorded\n`);
    process.exit(1);
  }
  process.stdout.write(`${faultTable(text)}\n`);
}
