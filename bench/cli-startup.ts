/**
 * Start-up time of the CLI as operators run it (the installed package: compiled JS) against
 * the development path (tsx compiling the TypeScript sources), for `nodepool --help`,
 * `nodepool dib-image-list` on a SQLite store holding 50 builds, and `nodepool
 * config-validate` (config code only: no driver runtime, no store). Goal: the installed CLI
 * answers in under 300 ms.
 *
 *   node --import tsx bench/cli-startup.ts [--runs 20] [--prefix DIR]
 *
 * Without `--prefix`, it packs the checkout (`npm pack`) and installs the tarball into a
 * temporary prefix first (about a minute: better-sqlite3 compiles). Each run times every
 * command once, in turn (wall clock of the whole process, spawn to exit), so load on a shared
 * machine falls on all of them alike; `node -e 0` is the floor. The CPU time (user + system)
 * moves less than the wall clock when other work shares the machine.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../lib/config/load.js';
import { openStore } from '../lib/store/open-store.js';

function flag(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? undefined : process.argv[i + 1];
}

const RUNS = Number(flag('runs') ?? 20);
const REPO = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'nodepool-cli-startup-'));

function install(): string {
  const prefix = path.join(tmp, 'prefix');
  console.log('packing and installing into a temporary prefix (about a minute)...');
  const [report] = JSON.parse(execFileSync('npm', ['pack', '--json', '--pack-destination', tmp], { cwd: REPO, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })) as Array<{ filename: string }>;
  execFileSync('npm', ['install', '--global', '--prefix', prefix, '--allow-scripts=better-sqlite3', '--no-audit', '--no-fund', '--loglevel=error', path.join(tmp, (report as { filename: string }).filename)], { stdio: 'inherit' });
  return prefix;
}

function stats(ms: number[]): { median: number; p90: number } {
  const s = [...ms].sort((a, b) => a - b);
  const at = (q: number): number => s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)] as number;
  return { median: at(0.5), p90: at(0.9) };
}

try {
  const prefix = flag('prefix') ?? install();
  const installed = path.join(prefix, 'bin', 'nodepool');
  const configFile = path.join(tmp, 'nodepool.yaml');
  writeFileSync(configFile, `state-dir: ${path.join(tmp, 'state')}\ngearman-servers: [{host: 127.0.0.1}]\ndiskimages: [{name: debian-bookworm}, {name: ubuntu-jammy}]\n`);
  const store = await openStore(loadConfig(configFile));
  for (let i = 0; i < 50; i++) {
    const b = await store.createBuild({ diskimage: i % 2 ? 'debian-bookworm' : 'ubuntu-jammy', formats: ['qcow2'] });
    await store.updateBuild(b.id, { state: 'ready', builderHostname: 'builder-1' });
  }
  await store.close();

  const env = { ...process.env };
  delete env.NODEPOOL_CONFIG;
  const tsx = [process.execPath, '--import', 'tsx', path.join(REPO, 'bin/nodepool.ts')];
  const commands: Array<{ name: string; installed: string[]; tsx: string[] }> = [
    { name: 'nodepool --help', installed: [installed, '--help'], tsx: [...tsx, '--help'] },
    { name: 'nodepool dib-image-list', installed: [installed, '-c', configFile, 'dib-image-list'], tsx: [...tsx, '-c', configFile, 'dib-image-list'] },
    { name: 'nodepool config-validate', installed: [installed, '-c', configFile, 'config-validate'], tsx: [...tsx, '-c', configFile, 'config-validate'] },
  ];
  /** Wall clock (spawn to exit) and CPU (user + system, from sh's `times`, 10 ms steps) of one run. */
  const time = (argv: string[]): { wall: number; cpu: number } => {
    const t = process.hrtime.bigint();
    // tsx is resolved from the working directory: the checkout for the tsx path.
    const r = spawnSync('sh', ['-c', '"$@" >/dev/null 2>/dev/null; rc=$?; times; exit $rc', 'sh', ...argv], {
      cwd: argv[0] === installed ? tmp : REPO, env, encoding: 'utf8',
    });
    const wall = Number(process.hrtime.bigint() - t) / 1e6;
    if (r.status !== 0) throw new Error(`${argv.join(' ')} exited ${r.status}`);
    const [user, sys] = [...(r.stdout.split('\n')[1] ?? '').matchAll(/(\d+)m([\d.]+)s/g)].map((m) => Number(m[1]) * 60_000 + Number(m[2]) * 1000);
    return { wall, cpu: (user ?? 0) + (sys ?? 0) };
  };
  type Samples = { wall: number[]; cpu: number[] };
  const samples = (): Samples => ({ wall: [], cpu: [] });
  const add = (to: Samples, t: { wall: number; cpu: number }): void => { to.wall.push(t.wall); to.cpu.push(t.cpu); };
  const floor = samples();
  const results = commands.map(() => ({ installed: samples(), tsx: samples() }));
  for (const c of commands) { time(c.installed); time(c.tsx); } // warm the file cache
  for (let run = 0; run < RUNS; run++) {
    add(floor, time([process.execPath, '-e', '0']));
    commands.forEach((c, i) => {
      const r = results[i] as { installed: Samples; tsx: Samples };
      add(r.installed, time(c.installed));
      add(r.tsx, time(c.tsx));
    });
  }

  const f = (n: number): string => `${n.toFixed(0)} ms`;
  const cell = (x: Samples): string => `${f(stats(x.wall).median)} / ${f(stats(x.wall).p90)} / ${f(stats(x.cpu).median)}`.padStart(26);
  console.log(`\n${RUNS} runs each; wall clock from spawn to exit (median / p90) and CPU (median, user + system)\n`);
  console.log(`${'command'.padEnd(26)}| ${'installed: wall / p90 / cpu'.padStart(27)} | ${'tsx: wall / p90 / cpu'.padStart(26)} | tsx / installed (wall)`);
  console.log(`${'-'.repeat(26)}|${'-'.repeat(29)}|${'-'.repeat(28)}|-----------------------`);
  console.log(`${'node -e 0 (the floor)'.padEnd(26)}| ${cell(floor).padStart(27)} | ${''.padStart(26)} |`);
  let ok = true;
  commands.forEach((c, i) => {
    const r = results[i] as { installed: Samples; tsx: Samples };
    ok &&= stats(r.installed.wall).median < 300;
    console.log(`${c.name.padEnd(26)}| ${cell(r.installed).padStart(27)} | ${cell(r.tsx)} | ${(stats(r.tsx.wall).median / stats(r.installed.wall).median).toFixed(2)}x`);
  });
  // A busy machine slows every process alike: the floor says how busy it was.
  console.log(`\ngoal (installed median < 300 ms): ${ok ? 'met' : 'NOT met'} (node -e 0 took ${f(stats(floor.wall).median)}; about 40 ms on an idle machine here)`);
  process.exitCode = ok ? 0 : 1;
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
