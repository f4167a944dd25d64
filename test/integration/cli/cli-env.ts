/**
 * Test support for the CLI tests: a temp state dir and nodepool.yaml, the store opened by the
 * test (which plays the server by writing records and status), and the real bin/nodepool.ts
 * run as a child process against them.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../../lib/config/load.js';
import type { Config } from '../../../lib/config/schema.js';
import { Releasers, waitFor } from '../../../lib/lifecycle.js';
import { openStore } from '../../../lib/store/open-store.js';
import type { Store } from '../../../lib/store/store.js';
import type { LoopHealth } from '../../../lib/periodic-loop.js';
import { runningProcesses, startProcess, type TrackedProcess } from '../../support/processes.js';
import { LIFECYCLE_STATUS_KEY, SERVER_HEARTBEAT_KEY, type DiskimageStatus, type UploadTargetStatus } from '../../../lib/status/lifecycle-status.js';
import { nodeScript } from '../../support/node-command.js';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/**
 * The nodepool.yaml every CLI test uses: two diskimages (one paused by config), two clouds,
 * and a gearmand (never contacted by the CLI; a config with diskimages must name one).
 */
export const CLI_TEST_CONFIG = (stateDir: string): string => `
state-dir: ${stateDir}
gearman-servers: [{host: 127.0.0.1}]
labels: [{name: small}]
diskimages:
  - name: ubuntu-jammy
    formats: [qcow2, raw]
  - name: debian-bookworm
    pause: true
providers:
  - name: cloud-a
    cloud: cloud-a
    diskimages: [{name: ubuntu-jammy}]
    pools: [{name: main, labels: [{name: small, diskimage: ubuntu-jammy, min-ram: 1024}]}]
  - name: cloud-b
    cloud: cloud-b
    diskimages: [{name: ubuntu-jammy, pause: true}, {name: debian-bookworm}]
`;

/** How a CLI run ended. */
export interface CliRun {
  stdout: string;
  stderr: string;
  code: number | null;
}

/** A CLI process still running, with its output so far. */
export interface CliProcess {
  proc: TrackedProcess;
  stdout(): string;
  stderr(): string;
  /** Waits until the output matches (bounded). */
  waitForOutput(re: RegExp, what: string, timeoutMs?: number): Promise<void>;
  /** Resolves when it exits; it is killed after `timeoutMs` of the start. */
  result: Promise<CliRun>;
}

/** One test's world. */
export interface CliEnv {
  dir: string;
  configFile: string;
  config: Config;
  store: Store;
  /** Starts `nodepool -c <configFile> ...args`. */
  start(args: string[], timeoutMs?: number): CliProcess;
  /** Runs `nodepool -c <configFile> ...args` to the end. */
  run(...args: string[]): Promise<CliRun>;
  /** Publishes a heartbeat as a live server would (refreshed now), with these loops' health. */
  heartbeat(interval?: number, loops?: LoopHealth[]): Promise<void>;
  /** Publishes the lifecycle status as the server would. */
  lifecycleStatus(diskimages: DiskimageStatus[], targets?: UploadTargetStatus[]): Promise<void>;
  close(): Promise<void>;
}

/** Starts the CLI with piped output; `-c` is left out when `configFile` is null. */
export function startCli(configFile: string | null, args: string[], timeoutMs = 60_000): CliProcess {
  return startBin('nodepool', [...(configFile === null ? [] : ['-c', configFile]), ...args], timeoutMs);
}

/** Starts `bin/<name>.ts` with piped output (no NODEPOOL_CONFIG from the environment). */
export function startBin(name: 'nodepool' | 'nodepool-builder' | 'nodepool-server', args: string[], timeoutMs = 60_000): CliProcess {
  const env = { ...process.env };
  delete env.NODEPOOL_CONFIG;
  const argv = [...nodeScript(`bin/${name}.ts`), ...args];
  const proc = startProcess(name, process.execPath, argv, { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.child.stdout?.setEncoding('utf8').on('data', (d: string) => { stdout += d; });
  proc.child.stderr?.setEncoding('utf8').on('data', (d: string) => { stderr += d; });
  const killer = setTimeout(() => void proc.kill(), timeoutMs);
  const result = proc.exited.then(async ({ code }) => {
    clearTimeout(killer);
    // Let the pipes drain after exit.
    await Promise.all([proc.child.stdout, proc.child.stderr].map((s) => new Promise<void>((resolve) => {
      if (!s || s.readableEnded) resolve();
      else s.once('end', () => resolve()).once('close', () => resolve());
    })));
    return { stdout, stderr, code };
  });
  return {
    proc,
    stdout: () => stdout,
    stderr: () => stderr,
    waitForOutput: (re, what, ms = 20_000) => waitFor(() => re.test(stdout + stderr), { timeoutMs: ms, what: `${name} to print ${what}`, intervalMs: 25 })
      .then(() => undefined, (err: Error) => { throw new Error(`${err.message}\nstdout: ${stdout}\nstderr: ${stderr}`); }),
    result,
  };
}

/** Creates the temp dir, nodepool.yaml and store of one test. */
export async function createCliEnv(yaml: (stateDir: string) => string = CLI_TEST_CONFIG): Promise<CliEnv> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-cli-'));
  const configFile = path.join(dir, 'nodepool.yaml');
  await writeFile(configFile, yaml(path.join(dir, 'state')));
  const config = loadConfig(configFile);
  const store = await openStore(config);
  const started: CliProcess[] = [];
  return {
    dir, configFile, config, store,
    start(args, timeoutMs) {
      const p = startCli(configFile, args, timeoutMs);
      started.push(p);
      return p;
    },
    async run(...args) {
      const p = startCli(configFile, args);
      started.push(p);
      return p.result;
    },
    heartbeat: (interval = 10, loops = []) => store.putStatus(SERVER_HEARTBEAT_KEY, { pid: process.pid, hostname: 'np-test', started: Date.now(), interval, loops }),
    lifecycleStatus: (diskimages, targets = []) => store.putStatus(LIFECYCLE_STATUS_KEY, { diskimages, targets }),
    async close() {
      await Promise.all(started.map((p) => p.proc.stop(2000)));
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A DiskimageStatus with nothing to report, overridden by `over`. */
export function diskimageStatus(diskimage: string, over: Partial<DiskimageStatus> = {}): DiskimageStatus {
  return { diskimage, paused: null, waiting: null, failures: 0, lastFailure: null, retryAt: null, rebuildAt: null, requested: false, ...over };
}

/** An UploadTargetStatus with nothing to report, overridden by `over`. */
export function targetStatus(diskimage: string, provider: string, over: Partial<UploadTargetStatus> = {}): UploadTargetStatus {
  return { diskimage, provider, paused: null, waiting: null, failures: 0, lastFailure: null, retryAt: null, ...over };
}

/**
 * The nodepool.yaml of the node and request tests: labels small (min-ready 2), large and gpu
 * (no pool serves it), an openstack provider with one pool, a static provider, and a short
 * session TTL so lapsed sessions show quickly.
 */
export const NODES_TEST_CONFIG = (stateDir: string): string => `
state-dir: ${stateDir}
labels: [{name: small, min-ready: 2}, {name: large}, {name: gpu}]
launcher: {session-ttl: 5}
providers:
  - name: cloud-a
    cloud: cloud-a
    cloud-images: [{name: ubuntu, image-name: ubuntu-22.04}]
    pools:
      - name: main
        labels: [{name: small, cloud-image: ubuntu, min-ram: 1024}, {name: large, cloud-image: ubuntu, min-ram: 8192}]
  - name: static-1
    driver: static
    pools:
      - name: hosts
        nodes: [{name: host1.example.org, labels: [small]}]
`;

/**
 * For a describe block whose tests each want a fresh CLI env with a live server heartbeat:
 * returns the maker, and after each test closes what it made and checks no process is left.
 */
export function heartbeatEnvPerTest(): () => Promise<CliEnv> {
  const releasers = new Releasers();
  afterEach(async () => {
    await releasers.releaseAll();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });
  return async () => {
    const env = await createCliEnv();
    releasers.add('cli env', () => env.close());
    await env.heartbeat();
    return env;
  };
}
