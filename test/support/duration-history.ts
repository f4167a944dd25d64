/**
 * How long each test file took on the last runs on this machine, kept in the temp dir (like the
 * bootable test image), so the test runner (test/run.ts) starts the longest queued files first:
 * a long file taken last would set the end of the run on its own while the other lanes idle. A
 * machine with no history keeps the queues in path order.
 */
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** The history file: `{ "<path from the repository root>": <ms> }`. */
export const DURATION_HISTORY = path.join(os.tmpdir(), 'nodepool-test-durations.json');

/** The durations recorded so far (empty when there is no history or it cannot be read). */
export function readDurations(file = DURATION_HISTORY): Map<string, number> {
  try {
    const raw = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    return new Map(Object.entries(raw).filter((e): e is [string, number] => typeof e[1] === 'number' && e[1] >= 0));
  } catch {
    return new Map();
  }
}

/** Records this run's durations over the earlier ones (files this run did not run keep theirs). */
export function recordDurations(durations: ReadonlyMap<string, number>, file = DURATION_HISTORY): void {
  const all = readDurations(file);
  for (const [f, ms] of durations) all.set(f, ms);
  const tmp = `${file}.${process.pid}`;
  writeFileSync(tmp, `${JSON.stringify(Object.fromEntries([...all].sort()), null, 1)}\n`);
  renameSync(tmp, file);
}

/**
 * `files` with the longest first, by `durations` (keyed as `key(file)` gives); a file with no
 * history counts as the median of those with one, and equal ones keep their order.
 */
export function longestFirst(files: readonly string[], durations: ReadonlyMap<string, number>, key: (file: string) => string = (f) => f): string[] {
  const known = files.map((f) => durations.get(key(f))).filter((ms): ms is number => ms !== undefined).sort((a, b) => a - b);
  if (known.length === 0) return [...files];
  const median = known[Math.floor(known.length / 2)] as number;
  return files
    .map((f, i) => ({ f, i, ms: durations.get(key(f)) ?? median }))
    .sort((a, b) => b.ms - a.ms || a.i - b.i)
    .map(({ f }) => f);
}
