import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { configValidate } from '../../cli/commands/config-validate.js';
import { recordFault } from '../support/fault-report.js';
import { nodeScript } from '../support/node-command.js';

const N = 1000;
const CLI_SAMPLE = 50;
const CLI_PARALLEL = 3;
const ROOT = path.resolve('.');

/** The two configs the project ships, the quick-start one with its placeholders filled as `make run` does. */
const BASES: Array<[string, string]> = [
  ['nodepool.example.yaml', readFileSync('config/nodepool.example.yaml', 'utf8')],
  ['quickstart.yaml', readFileSync('config/quickstart.yaml', 'utf8')
    .replaceAll('@@GEARMAN_PORT@@', '4730').replaceAll('@@DIR@@', '/tmp/quickstart').replaceAll('@@CLOUDS_YAML@@', '/tmp/quickstart/clouds.yaml')
    .replaceAll('@@STATIC_NODES@@', '[{name: 127.0.0.1, labels: [static-host], username: root, host-key: "ssh-ed25519 AAAA"}]')
    .replaceAll('@@DIB_CMD@@', '/usr/bin/disk-image-create').replaceAll('@@DIB_ENV@@', '{DIB_RELEASE: bookworm}')],
];

/** mulberry32; mutation `i` uses seed `i`, so a failing one can be reproduced from its index. */
function prng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const VALUES = ['two', '-1', '0', '1.5', '3000000', '99999999999999999999', '[]', '{}', 'null', '~', 'true', '""', "'x'", '[1, [2]]', '{a: {b: c}}', '!!binary aGk=', '&a x', '*a', '0x1F', '.inf', '2024-01-01', '"../../etc"'];

/** One mutated config: byte flips, a cut, deleted lines, or values swapped for other types. */
function mutate(text: string, rand: () => number): { text: string; how: string } {
  const at = (n: number): number => Math.floor(rand() * n);
  const kind = at(5);
  if (kind === 0) {
    const b = Buffer.from(text);
    const flips = 1 + at(4);
    for (let k = 0; k < flips; k++) b[at(b.length)] = at(256);
    return { text: b.toString('latin1'), how: `${flips} byte flips` };
  }
  if (kind === 1) {
    const cut = at(text.length);
    return { text: text.slice(0, cut), how: `truncated at ${cut}` };
  }
  const lines = text.split('\n');
  if (kind === 2) {
    const n = 1 + at(3);
    for (let k = 0; k < n; k++) lines.splice(at(lines.length), 1);
    return { text: lines.join('\n'), how: `${n} lines deleted` };
  }
  if (kind === 3) {
    const i = at(lines.length);
    const line = lines[i] as string;
    lines[i] = at(2) ? `  ${line}` : line.replace(/^ {1,2}/, '');
    return { text: lines.join('\n'), how: `line ${i + 1} re-indented` };
  }
  const swaps = 1 + at(3);
  for (let k = 0; k < swaps; k++) {
    const candidates = lines.map((l, i) => [l, i] as const).filter(([l]) => /^\s*(- )?[\w-]+: \S/.test(l));
    const [line, i] = candidates[at(candidates.length)] as readonly [string, number];
    lines[i] = line.replace(/^(\s*(?:- )?[\w-]+: ).*$/, `$1${VALUES[at(VALUES.length)] as string}`);
  }
  return { text: lines.join('\n'), how: `${swaps} values swapped` };
}

type Verdict = 'valid' | 'invalid' | string;

/** What config-validate made of one file: valid (exit 0), invalid naming the file (exit 2), or what went wrong. */
function judge(file: string, r: { exitCode: number | null; stdout: string; stderr: string }): Verdict {
  const base = path.basename(file);
  if (/\n\s+at .+:\d+:\d+\)?\n/.test(`${r.stderr}\n`) || /TypeError|ReferenceError|RangeError|Cannot read/.test(r.stderr)) return `crash: ${r.stderr.slice(0, 300)}`;
  if (r.exitCode === 0 && r.stdout.includes(`${base}: valid`)) return 'valid';
  if (r.exitCode === 2 && r.stderr.startsWith(file) && r.stderr.trim().length > file.length + 2) return 'invalid';
  return `unclear (exit ${r.exitCode}): ${(r.stderr || r.stdout).slice(0, 300)}`;
}

describe('faults: mutated config files through config-validate', () => {
  let dir = '';
  before(async () => { dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-mutated-')); });
  after(() => rm(dir, { recursive: true, force: true }));

  it(`gives ${N.toLocaleString('en')} mutated configs a clear verdict (valid, or exit 2 naming the file), in-process and for a sample through the CLI`, { timeout: 300_000 }, async () => {
    const t0 = Date.now();
    const files: string[] = [];
    const bad: string[] = [];
    let valid = 0;
    for (let i = 0; i < N; i++) {
      const [name, text] = BASES[i % BASES.length] as [string, string];
      const m = mutate(text, prng(i));
      const file = path.join(dir, `${i}-${name}`);
      await writeFile(file, m.text);
      files.push(file);
      let v: Verdict;
      try {
        v = judge(file, await configValidate(file));
      } catch (err) {
        v = `crash: ${(err as Error).stack ?? String(err)}`.slice(0, 400);
      }
      if (v === 'valid') valid += 1;
      else if (v !== 'invalid') bad.push(`#${i} ${name} (${m.how}): ${v}`);
    }
    const inProcessMs = Date.now() - t0;
    // A sample through the real CLI: argv, the loader, printing and the exit code.
    const run = promisify(execFile);
    const sample = files.filter((_, i) => i % (N / CLI_SAMPLE) === 0);
    const t1 = Date.now();
    let next = 0;
    await Promise.all(Array.from({ length: CLI_PARALLEL }, async () => {
      while (next < sample.length) {
        const file = sample[next++] as string;
        const r = await run(process.execPath, [...nodeScript('bin/nodepool.ts'), '-c', file, 'config-validate'], { cwd: ROOT, env: { ...process.env, NODEPOOL_CONFIG: '' } })
          .then((o) => ({ exitCode: 0, stdout: o.stdout, stderr: o.stderr }),
            (e: { code?: number; stdout?: string; stderr?: string }) => ({ exitCode: typeof e.code === 'number' ? e.code : null, stdout: e.stdout ?? '', stderr: e.stderr ?? '' }));
        const v = judge(file, r);
        if (v !== 'valid' && v !== 'invalid') bad.push(`CLI ${path.basename(file)}: ${v}`);
      }
    }));
    const cliMs = Date.now() - t1;
    recordFault({
      scenario: '1,000 mutated config files (config-validate)', runs: N + sample.length, recovered: N + sample.length - bad.length, lost: 0, leaked: 0, recoverMs: null,
      notes: `${valid} still valid, ${N - valid - bad.filter((b) => b.startsWith('#')).length} refused with exit 2 naming the file, ${bad.length} crashes or unclear; ${N} in-process in ${(inProcessMs / 1000).toFixed(1)} s, ${sample.length} through the CLI in ${(cliMs / 1000).toFixed(1)} s`,
    });
    assert.deepEqual(bad, [], 'every mutated config got a clear verdict');
  });
});
