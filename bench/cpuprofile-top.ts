/**
 * Prints the top frames of a V8 CPU profile (`node --cpu-prof` writes `*.cpuprofile`): self time
 * per function, and total (inclusive) time per function, each as a share of the busy time (the
 * sampled time minus `(idle)`: waiting for gearmand is not our cost).
 *
 *   node --import tsx bench/cpuprofile-top.ts <file.cpuprofile> [top=25] [filter]
 *
 * `filter` keeps only frames whose location contains it in the inclusive table (e.g. `lib/`),
 * which shows what our own code costs including the library calls it makes.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

interface CallFrame { functionName: string; url: string; lineNumber: number }
interface ProfileNode { id: number; callFrame: CallFrame; children?: number[] }
interface CpuProfile { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] }

const [file, topArg, filter] = process.argv.slice(2);
if (!file) {
  console.error('usage: cpuprofile-top.ts <file.cpuprofile> [top=25] [filter]');
  process.exit(2);
}
const TOP = Number(topArg ?? 25);
const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;

function frameKey(f: CallFrame): string {
  const name = f.functionName || '(anonymous)';
  if (!f.url) return name;
  const where = f.url.replace(/^file:\/\//, '');
  const short = where.includes('/node_modules/')
    ? where.slice(where.lastIndexOf('/node_modules/') + 14)
    : path.relative(process.cwd(), where);
  return `${name} ${short}:${f.lineNumber + 1}`;
}

const byId = new Map<number, ProfileNode>();
const parent = new Map<number, number>();
for (const n of profile.nodes) {
  byId.set(n.id, n);
  for (const c of n.children ?? []) parent.set(c, n.id);
}

const self = new Map<string, number>();
const total = new Map<string, number>();
let sampled = 0;
for (let i = 0; i < profile.samples.length; i++) {
  const dt = profile.timeDeltas[i + 1] ?? 0;
  const id = profile.samples[i] as number;
  const node = byId.get(id);
  if (!node) continue;
  sampled += dt;
  const key = frameKey(node.callFrame);
  self.set(key, (self.get(key) ?? 0) + dt);
  // inclusive: every distinct function on the stack gets the sample once (recursion counted once)
  const seen = new Set<string>();
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const k = frameKey((byId.get(cur) as ProfileNode).callFrame);
    if (seen.has(k)) continue;
    seen.add(k);
    total.set(k, (total.get(k) ?? 0) + dt);
  }
}

const busy = sampled - (self.get('(idle)') ?? 0);

function print(title: string, m: Map<string, number>, keep: (k: string) => boolean): void {
  console.log(`${title} (% of ${(busy / 1000).toFixed(0)} ms busy; ${(sampled / 1000).toFixed(0)} ms sampled)`);
  const rows = [...m].filter(([k]) => keep(k)).sort((a, b) => b[1] - a[1]).slice(0, TOP);
  for (const [k, us] of rows) console.log(`${((100 * us) / busy).toFixed(1).padStart(6)}%  ${(us / 1000).toFixed(0).padStart(6)} ms  ${k}`);
}

print('self time', self, (k) => k !== '(idle)');
console.log('');
const skip = new Set(['(root)', '(program)', '(idle)', '(garbage collector)']);
print(`total time${filter ? ` of frames in ${filter}` : ''}`, total, (k) => !skip.has(k) && (!filter || k.includes(filter)));
