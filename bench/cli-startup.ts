/**
 * Start-up time of the CLI as operators run it (the installed package: compiled JS) against
 * the development path (tsx compiling the TypeScript sources), for `nodepool --help` and
 * `nodepool dib-image-list` on a SQLite store holding 50 builds. Goal: the installed CLI
 * answers in under 300 ms.
 *
 *   node --import tsx bench/cli-startup.ts [--runs 20] [--prefix DIR]
 *
 * Without `--prefix`, it packs the checkout (`npm pack`) and installs the tarball into a
 * temporary prefix first (about a minute: better-sqlite3 compiles). Each run times every
 * command once, in turn (wall clock of the whole process, spawn to exit), so load on a shared
 * machine falls on all of them alike; `node -e 0` is the floor.
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
  execFileSync('npm', ['install', '--global', '--prefix', prefix, '--no-audit', '--no-fund', '--loglevel=error', path.join(tmp, (report as { filename: string }).filename)], { stdio: 'inherit' });
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
  ];
  const time = (argv: string[]): number => {
    const t = process.hrtime.bigint();
    // tsx is resolved from the working directory: the checkout for the tsx path.
    const r = spawnSync(argv[0] as string, argv.slice(1), { cwd: argv[0] === installed ? tmp : REPO, env, stdio: ['ignore', 'ignore', 'pipe'] });
    const ms = Number(process.hrtime.bigint() - t) / 1e6;
    if (r.status !== 0) throw new Error(`${argv.join(' ')} exited ${r.status}: ${String(r.stderr)}`);
    return ms;
  };
  const floor: number[] = [];
  const results = commands.map(() => ({ installed: [] as number[], tsx: [] as number[] }));
  for (const c of commands) { time(c.installed); time(c.tsx); } // warm the file cache
  for (let run = 0; run < RUNS; run++) {
    floor.push(time([process.execPath, '-e', '0']));
    commands.forEach((c, i) => {
      (results[i] as { installed: number[] }).installed.push(time(c.installed));
      (results[i] as { tsx: number[] }).tsx.push(time(c.tsx));
    });
  }

  const f = (n: number): string => `${n.toFixed(0)} ms`.padStart(7);
  console.log(`\n${RUNS} runs each; wall clock from spawn to exit\n`);
  console.log(`${'command'.padEnd(26)}| ${'installed median'.padStart(16)} | ${'p90'.padStart(7)} | ${'tsx median'.padStart(10)} | ${'p90'.padStart(7)} | tsx / installed`);
  console.log(`${'-'.repeat(26)}|${'-'.repeat(18)}|${'-'.repeat(9)}|${'-'.repeat(12)}|${'-'.repeat(9)}|----------------`);
  const fl = stats(floor);
  console.log(`${'node -e 0 (the floor)'.padEnd(26)}| ${f(fl.median).padStart(16)} | ${f(fl.p90)} | ${''.padStart(10)} | ${''.padStart(7)} |`);
  let ok = true;
  commands.forEach((c, i) => {
    const inst = stats((results[i] as { installed: number[] }).installed);
    const dev = stats((results[i] as { tsx: number[] }).tsx);
    ok &&= inst.median < 300;
    console.log(`${c.name.padEnd(26)}| ${f(inst.median).padStart(16)} | ${f(inst.p90)} | ${f(dev.median).padStart(10)} | ${f(dev.p90)} | ${(dev.median / inst.median).toFixed(2)}x`);
  });
  console.log(`\ngoal (installed median < 300 ms): ${ok ? 'met' : 'NOT met'}`);
  process.exitCode = ok ? 0 : 1;
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
