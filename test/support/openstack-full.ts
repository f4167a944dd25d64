/**
 * The full loopback cloud for tests that boot servers: Keystone, Glance, Placement, Nova
 * (fake virt driver), Neutron (agentless ML2 driver), MariaDB and RabbitMQ on free
 * 127.0.0.1 ports (see openstack-full-start.ts for how it starts).
 *
 * A test calls {@link useNovaCloud}: under test/run.ts it gets the run's shared cloud (env
 * NODEPOOL_TEST_NOVA_CLOUD names its info file); run directly, it gets a private one that
 * runs in a child process (`up` mode below) and stops when the test process exits.
 *
 * CLI: `node --import tsx test/support/openstack-full.ts up <info.json> [--parent <pid>]`
 * starts one, writes its {@link NovaCloudInfo} and runs until SIGTERM/SIGINT (or until
 * process `pid` is gone), then stops every daemon it started.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, openSync, closeSync, readFileSync, rmSync } from 'node:fs';
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadCloud } from '../../lib/drivers/openstack/clouds-yaml.js';
import { KeystoneSession } from '../../lib/drivers/openstack/keystone.js';
import { waitFor } from '../../lib/lifecycle.js';
import { FullCloudAdmin, type ComputeQuota, type LoopbackFlavor, type ServerSummary } from './openstack-full-admin.js';
import { startFullCloud, type NovaCloudInfo } from './openstack-full-start.js';

export type { NovaCloudInfo } from './openstack-full-start.js';

/** A running full cloud, as tests use it. */
export interface NovaCloud {
  /** Keystone's public URL, `http://127.0.0.1:<port>/v3`. */
  authUrl: string;
  /** A clouds.yaml with clouds 'loopback' (demo user, project demo, member role) and 'loopback-admin' (admin). */
  cloudsFile: string;
  cloud: string;
  adminCloud: string;
  region: string;
  /** The shared 'private' network, the one servers should use. */
  network: { name: string; id: string };
  /** m1.tiny (1 vcpu, 512), m1.small (1, 2048), m1.medium (2, 4096), np.huge (4096 vcpus: never schedulable, the server goes ERROR "No valid host"). */
  flavors: LoopbackFlavor[];
  /** A small public qcow2 image 'loopback-tiny', usable as a cloud-image. */
  image: { id: string; name: string };
  /** Sets the compute quota of a project ('demo' or 'admin'); -1 = unlimited. */
  setComputeQuota(project: string, q: ComputeQuota): Promise<void>;
  /** Servers visible to the admin in all projects: id, name, status, metadata. */
  listAllServers(): Promise<ServerSummary[]>;
  /** Deletes every server (any project) and waits until they are gone; for test isolation. */
  deleteAllServers(): Promise<void>;
}

const THIS_FILE = fileURLToPath(import.meta.url);
const REQUIRED: ReadonlyArray<keyof NovaCloudInfo> = ['authUrl', 'cloudsFile', 'region', 'network', 'flavors', 'image'];

/** Re-creates a {@link NovaCloud} around the content of an info file. */
export async function novaCloudFromInfo(info: NovaCloudInfo): Promise<NovaCloud> {
  let admin: Promise<FullCloudAdmin> | undefined;
  const connect = (): Promise<FullCloudAdmin> => (admin ??= (async () =>
    new FullCloudAdmin(await KeystoneSession.authenticate(await loadCloud(info.adminCloud, { path: info.cloudsFile }))))()
    .catch((err: unknown) => {
      admin = undefined;
      throw err;
    }));
  return {
    authUrl: info.authUrl, cloudsFile: info.cloudsFile, cloud: info.cloud, adminCloud: info.adminCloud, region: info.region,
    network: info.network, flavors: info.flavors, image: info.image,
    setComputeQuota: async (project, q) => (await connect()).setComputeQuota(project, q),
    listAllServers: async () => (await connect()).listAllServers(),
    deleteAllServers: async () => (await connect()).deleteAllServers(),
  };
}

/** Reads and checks an info file. */
export async function readNovaCloudInfo(file: string): Promise<NovaCloudInfo> {
  const raw = JSON.parse(await readFile(file, 'utf8')) as Partial<NovaCloudInfo>;
  for (const key of REQUIRED) {
    if (raw[key] === undefined) throw new Error(`${file}: nova cloud info lacks ${key}`);
  }
  return { cloud: 'loopback', adminCloud: 'loopback-admin', dir: '', startupMs: 0, ...raw } as NovaCloudInfo;
}

let privateCloud: Promise<NovaCloud> | undefined;

/**
 * Starts a private cloud in a child process (so its daemons are not this process's tracked
 * children) and stops it when this process exits: the child gets SIGTERM on 'exit' and
 * also watches this pid, in case this process is killed.
 */
async function startPrivate(): Promise<NovaCloud> {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'nodepool-nova-private-'));
  const infoFile = path.join(tmp, 'nova-cloud.json');
  const logFile = path.join(tmp, 'up.log');
  const fd = openSync(logFile, 'a');
  const child = spawn(process.execPath, ['--import', 'tsx', THIS_FILE, 'up', infoFile, '--parent', String(process.pid)],
    { detached: true, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  child.unref();
  let exited = false;
  child.once('exit', () => (exited = true));
  process.once('exit', () => {
    if (!exited && child.pid !== undefined) {
      try { process.kill(child.pid, 'SIGTERM'); } catch { /* gone */ }
    }
  });
  try {
    await waitFor(() => {
      if (exited) throw new Error('exited');
      return existsSync(infoFile);
    }, { timeoutMs: 600_000, what: 'the private nova cloud to start', intervalMs: 250 });
  } catch (err) {
    if (!exited) child.kill('SIGTERM');
    const log = readFileSync(logFile, 'utf8').trimEnd().split('\n').slice(-40).join('\n');
    throw new Error(`the private nova cloud did not start (log ${logFile}):\n${log}`, { cause: err });
  }
  return novaCloudFromInfo(await readNovaCloudInfo(infoFile));
}

/**
 * The shared full cloud of this test run (env NODEPOOL_TEST_NOVA_CLOUD names its info
 * file), or a private one started for this process and stopped at exit.
 */
export async function useNovaCloud(): Promise<NovaCloud> {
  const shared = process.env.NODEPOOL_TEST_NOVA_CLOUD;
  if (shared) return novaCloudFromInfo(await readNovaCloudInfo(shared));
  privateCloud ??= startPrivate().catch((err: unknown) => {
    privateCloud = undefined;
    throw err;
  });
  return privateCloud;
}

async function cli(argv: string[]): Promise<void> {
  const [cmd, out, flag, parentArg] = argv;
  const parent = flag === '--parent' ? Number(parentArg) : undefined;
  if (cmd !== 'up' || !out || (flag !== undefined && !(parent && parent > 0))) {
    process.stderr.write('usage: node --import tsx test/support/openstack-full.ts up <info.json> [--parent <pid>]\n');
    process.exit(2);
  }
  const log = (line: string): void => void process.stderr.write(`${line}\n`);
  // A signal during the start aborts it (startFullCloud then stops what it started).
  const starting = new AbortController();
  const abortStart = (): void => starting.abort(new Error('stopped by a signal while starting'));
  for (const sig of ['SIGTERM', 'SIGINT'] as const) process.once(sig, abortStart);
  let parentGone = (): void => abortStart();
  if (parent) {
    const timer = setInterval(() => {
      try {
        process.kill(parent, 0);
      } catch {
        clearInterval(timer);
        parentGone();
      }
    }, 1000);
  }
  const cloud = await startFullCloud({ log, signal: starting.signal });
  for (const sig of ['SIGTERM', 'SIGINT'] as const) process.off(sig, abortStart);
  let exiting = false;
  const shutdown = async (why: string, code: number): Promise<void> => {
    if (exiting) return;
    exiting = true;
    log(`[nova-cloud] stopping (${why})`);
    await rm(out, { force: true });
    await cloud.stop();
    if (parent) rmSync(path.dirname(out), { recursive: true, force: true });
    process.exit(code);
  };
  await writeFile(`${out}.tmp`, JSON.stringify(cloud.info, null, 2));
  await rename(`${out}.tmp`, out);
  log(`[nova-cloud] description written to ${out}`);
  for (const sig of ['SIGTERM', 'SIGINT'] as const) process.once(sig, () => void shutdown(sig, 0));
  for (const p of cloud.processes) void p.exited.then(({ code, signal }) => shutdown(`${p.name} exited (${code ?? signal})`, 1));
  parentGone = () => void shutdown(`parent ${parent} is gone`, 0);
}

if (process.argv[1] && path.resolve(process.argv[1]) === THIS_FILE) {
  cli(process.argv.slice(2)).catch((err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  });
}
