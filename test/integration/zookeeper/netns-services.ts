/**
 * Test support for the many-hosts test: the system's daemons started inside network
 * namespaces (test/support/netns.ts) on the namespace's own address. In its own namespace
 * every port is free, so each service takes its usual port (ZooKeeper 2181, gearmand 4730).
 * test/support/zookeeper.ts and gearmand.ts bind 127.0.0.1 of the caller's namespace, so
 * these start the same programs the same way, bound to the host's address instead.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { waitFor } from '../../../lib/lifecycle.js';
import type { NetnsHost } from '../../support/netns.js';
import type { TrackedProcess } from '../../support/processes.js';
import { nodeScript } from '../../support/node-command.js';

export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const ZK_PORT = 2181;
export const GEARMAN_PORT = 4730;
const ZK_JARS = ['zookeeper.jar', 'slf4j-api.jar', 'slf4j-simple.jar', 'netty-codec.jar'].map((j) => `/usr/share/java/${j}`);

/** A four-letter ZooKeeper command over TCP (from the caller's namespace). */
export function fourLetter(host: string, port: number, cmd: string, timeoutMs = 2000): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ host, port });
    let out = '';
    s.setTimeout(timeoutMs, () => s.destroy(new Error(`${cmd}: no answer in ${timeoutMs} ms`)));
    s.on('connect', () => s.write(cmd));
    s.on('data', (d: Buffer) => { out += d.toString(); });
    s.on('error', reject);
    s.on('close', () => resolve(out));
  });
}

function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host, port });
    s.setTimeout(1000, () => { s.destroy(); resolve(false); });
    s.once('connect', () => { s.destroy(); resolve(true); });
    s.once('error', () => resolve(false));
  });
}

async function readLogSafe(file: string): Promise<string> {
  return readFile(file, 'utf8').catch(() => '(no log)');
}

/**
 * Debian's ZooKeeper 3.8 in `host` on `<address>:2181` (tick 200 ms, so sessions as short as
 * 400 ms; no fsync; admin server off), data in `dir`. Ready once `srvr` says standalone.
 */
export async function startZooKeeperIn(host: NetnsHost, dir: string): Promise<TrackedProcess> {
  const dataDir = path.join(dir, 'data');
  await mkdir(dataDir, { recursive: true });
  const cfg = path.join(dir, 'zoo.cfg');
  await writeFile(cfg, [
    'tickTime=200', `dataDir=${dataDir}`, `clientPort=${ZK_PORT}`, `clientPortAddress=${host.address}`, 'maxClientCnxns=0',
    'minSessionTimeout=400', 'maxSessionTimeout=60000', 'admin.enableServer=false',
    '4lw.commands.whitelist=ruok,srvr,stat,mntr,conf,cons', 'forceSync=no', '',
  ].join('\n'));
  const logFile = path.join(dir, 'zookeeper.log');
  const p = host.start('zookeeper', '/usr/bin/java', [
    '-Xmx64m', '-XX:+UseSerialGC', '-XX:-UsePerfData', '-cp', ['/etc/zookeeper/conf', ...ZK_JARS].join(':'),
    'org.apache.zookeeper.server.quorum.QuorumPeerMain', cfg,
  ], { logFile });
  await waitFor(async () => {
    if (!p.alive()) throw new Error(`ZooKeeper exited early: ${(await readLogSafe(logFile)).slice(-2000)}`);
    return (await fourLetter(host.address, ZK_PORT, 'srvr').catch(() => '')).includes('Mode: standalone');
  }, { timeoutMs: 30_000, what: `ZooKeeper serving on ${host.address}:${ZK_PORT} in ${host.netns}`, intervalMs: 100 });
  return p;
}

/** Debian's gearmand in `host` on `<address>:4730`, log in `dir`. Ready once the port accepts. */
export async function startGearmandIn(host: NetnsHost, dir: string): Promise<TrackedProcess> {
  await mkdir(dir, { recursive: true });
  const logFile = path.join(dir, 'gearmand.log');
  const p = host.start('gearmand', '/usr/sbin/gearmand', [
    `--listen=${host.address}`, `--port=${GEARMAN_PORT}`, `--log-file=${logFile}`, `--pid-file=${path.join(dir, 'gearmand.pid')}`,
    '--threads=1', '--verbose=INFO',
  ], { logFile: path.join(dir, 'stdio.log') });
  await waitFor(async () => {
    if (!p.alive()) throw new Error(`gearmand exited early: ${await readLogSafe(logFile)}`);
    return accepts(host.address, GEARMAN_PORT);
  }, { timeoutMs: 15_000, what: `gearmand on ${host.address}:${GEARMAN_PORT} in ${host.netns}`, intervalMs: 50 });
  return p;
}

/** `bin/<name>.ts` with tsx inside `host`; stdout and stderr to `logFile`. */
export function startBinIn(host: NetnsHost, procName: string, bin: string, args: string[], logFile: string): TrackedProcess {
  return host.start(procName, process.execPath, [...nodeScript(`bin/${bin}.ts`), ...args], {
    cwd: ROOT, logFile, env: { ...process.env, NODEPOOL_CONFIG: '' },
  });
}

/** Runs the CLI inside `host` to completion; its exit code and output. */
export async function cliIn(host: NetnsHost, configPath: string, args: string[], timeoutMs = 60_000): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await host.exec(process.execPath, [...nodeScript('bin/nodepool.ts'), '-c', configPath, ...args], {
      timeoutMs, cwd: ROOT, env: { ...process.env, NODEPOOL_CONFIG: '' },
    });
    return { code: 0, ...r };
  } catch (err) {
    const e = err as Error & { stdout?: string; stderr?: string; exitCode?: number | string };
    if (typeof e.exitCode !== 'number') throw err;
    return { code: e.exitCode, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}
