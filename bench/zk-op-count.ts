/**
 * ZooKeeper requests by kind and by caller, for the churn bench's "operations per request"
 * (bench/static-churn.ts `--zk-ops`). Bench-only: it wraps ZkClient's calls (getData,
 * getChildren, exists, create, setData, remove, multi; a multi is one request) when installed,
 * and costs nothing otherwise. Each call's key is its kind and the first store and launcher
 * functions on its stack (a stack capture per call: counts, not CPU, are what a counted run
 * is for). Loaded with `--import` into nodepool-server, `BENCH_ZK_OPS=<file>` installs it there
 * and writes the counts so far to that file on SIGUSR2.
 */
import { renameSync, writeFileSync } from 'node:fs';
import { ZkClient } from '../lib/store/zookeeper/zk-client.js';

/** Requests by `kind caller<caller<caller`. */
export type OpCounts = Record<string, number>;

const counts: OpCounts = {};
const KINDS = ['getData', 'getChildren', 'exists', 'create', 'setData', 'remove', 'multi'] as const;
let installed = false;

/** The first few frames that are not this file's or the client's, as `Class.method`. */
function callers(): string {
  const frames = (new Error().stack ?? '').split('\n').slice(1);
  const names: string[] = [];
  for (const f of frames) {
    if (f.includes('zk-op-count') || f.includes('zk-client.ts') || f.includes('node:internal')) continue;
    const m = /at (?:async )?([^\s(]+)/.exec(f);
    const name = m?.[1]?.replace(/^Object\./, '');
    if (!name || name.startsWith('file:') || name.endsWith('.guard') || ['new', 'Promise.all', '<anonymous>', 'Array.map'].includes(name)) continue;
    names.push(name);
    if (names.length >= 3) break;
  }
  return names.join('<');
}

/** Wraps ZkClient's calls in this process (once). */
export function installZkOpCounter(): void {
  if (installed) return;
  installed = true;
  Error.stackTraceLimit = Math.max(Error.stackTraceLimit, 40);
  const proto = ZkClient.prototype as unknown as Record<string, (...args: unknown[]) => unknown>;
  for (const kind of KINDS) {
    const original = proto[kind] as (...args: unknown[]) => unknown;
    proto[kind] = function counted(this: unknown, ...args: unknown[]): unknown {
      const key = `${kind} ${callers()}`;
      counts[key] = (counts[key] ?? 0) + 1;
      return original.apply(this, args);
    };
  }
}

/** The counts so far (a copy). */
export function opCounts(): OpCounts {
  return { ...counts };
}

/** `after − before`, keys with no change left out. */
export function opDelta(after: OpCounts, before: OpCounts): OpCounts {
  const out: OpCounts = {};
  for (const [k, v] of Object.entries(after)) if (v - (before[k] ?? 0) > 0) out[k] = v - (before[k] ?? 0);
  return out;
}

/** Total requests in `c`. */
export const opTotal = (c: OpCounts): number => Object.values(c).reduce((a, b) => a + b, 0);

const file = process.env.BENCH_ZK_OPS;
if (file) {
  installZkOpCounter();
  process.on('SIGUSR2', () => {
    writeFileSync(`${file}.part`, JSON.stringify(counts));
    renameSync(`${file}.part`, file);
  });
}
