/**
 * A real Keystone v3 + Glance v2 (Debian packages) on free 127.0.0.1 ports, all state in a
 * temporary directory, for integration tests and benchmarks. Keystone runs under uwsgi
 * (one process, one thread, `Connection: close`, SQLite in WAL mode with a 20 s busy
 * timeout, fernet tokens); glance-api runs with `workers = 0` and the file store.
 * See /work/shared/reference/openstack-loopback.md for why each setting is there.
 *
 * CLI: `node --import tsx test/support/openstack.ts up <json-out-path>` starts one, writes
 * its description (a {@link LoopbackCloud} without `stop`) and runs until SIGTERM/SIGINT.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { loadCloud } from '../../lib/drivers/openstack/clouds-yaml.js';
import { KeystoneSession } from '../../lib/drivers/openstack/keystone.js';
import { childEnv, DaemonGroup, PY, runOnce, waitHttp } from './openstack-daemons.js';
import { freePort, type TrackedProcess } from './processes.js';

/** A running loopback cloud. */
export interface LoopbackCloud {
  /** Keystone's public URL, with `/v3`. */
  authUrl: string;
  keystonePort: number;
  glancePort: number;
  /** A clouds.yaml with {@link cloudName} and {@link adminCloudName}. */
  cloudsYamlPath: string;
  /** The unprivileged `demo` user in project `demo` (member + reader). */
  cloudName: 'loopback';
  /** `admin` in project `admin`. */
  adminCloudName: 'loopback-admin';
  /** Glance's file store: one file per image with data. */
  imagesDir: string;
  /** How long the start took (ms). */
  startupMs: number;
  /** Stops both daemons and removes the state directory (no-op for a shared cloud). */
  stop(): Promise<void>;
}

/** Options of {@link startLoopbackCloud}. */
export interface StartLoopbackOptions {
  /** State directory (kept afterwards); default: a fresh temporary directory, removed by stop(). */
  dir?: string;
  /** Progress lines. */
  log?: (line: string) => void;
  /** More services for the catalog (public + internal endpoints), registered before start returns. */
  services?: ReadonlyArray<{ type: string; name: string; url: string }>;
  /** Ports to use instead of free ones picked here (a caller that must know them before the start). */
  ports?: { keystone?: number; glance?: number };
}

const REGION = 'RegionOne';
const ADMIN_PW = 'loopback-admin';
/** The password of `admin` (project admin) in every loopback cloud. */
export const LOOPBACK_ADMIN_PASSWORD = ADMIN_PW;
/** The one region of every loopback cloud. */
export const LOOPBACK_REGION = REGION;
const DEMO_PW = 'loopback-demo';

/** WAL before the schema exists: readers never block the one writer (the mode is persistent). */
const WAL_PY = 'import sqlite3, sys\nsqlite3.connect(sys.argv[1]).execute("PRAGMA journal_mode=WAL").close()\n';

/** keystone-manage's steps (argv lists in argv[2]) in one interpreter, after WAL on argv[1]. */
const KEYSTONE_SETUP_PY = `${WAL_PY}import json
from keystone.cmd import cli
for argv in json.loads(sys.argv[2]):
    cli.CONF.clear()
    cli.main(argv=['keystone-manage'] + argv)
`;

function keystoneConf(dir: string): string {
  return `[DEFAULT]
log_dir = ${dir}/log
log_file = keystone.log
[database]
connection = sqlite:///${dir}/db/keystone.db?timeout=20
[identity]
# bcrypt's minimum: every token request verifies a password, and this is a test cloud.
password_hash_rounds = 4
[token]
provider = fernet
[cache]
# One uwsgi process (one thread) serves every request, so its in-process cache is coherent:
# token validations and the catalog, role and project lookups of each token request come
# from memory instead of SQLite (Keystone took 184-385 CPU-seconds of a whole test run).
enabled = true
backend = dogpile.cache.memory
[fernet_tokens]
key_repository = ${dir}/keystone/fernet-keys
[fernet_receipts]
key_repository = ${dir}/keystone/fernet-keys
[credential]
key_repository = ${dir}/keystone/credential-keys
[oslo_policy]
policy_dirs = /etc/keystone/policy.d
`;
}

function glanceConf(dir: string, glancePort: number, keystonePort: number): string {
  return `[DEFAULT]
bind_host = 127.0.0.1
bind_port = ${glancePort}
# 0 = serve from the parent process, no forked worker
workers = 0
log_dir = ${dir}/log
log_file = glance.log
enabled_backends = fs:file
[database]
connection = sqlite:///${dir}/db/glance.db?timeout=20
[glance_store]
default_backend = fs
[fs]
filesystem_store_datadir = ${dir}/glance/images
[os_glance_staging_store]
filesystem_store_datadir = ${dir}/glance/staging
[os_glance_tasks_store]
filesystem_store_datadir = ${dir}/glance/tasks
[keystone_authtoken]
# Glance validates tokens as admin: a separate service user would cost five more Keystone calls at start.
auth_url = http://127.0.0.1:${keystonePort}
www_authenticate_uri = http://127.0.0.1:${keystonePort}
auth_type = password
project_domain_name = Default
user_domain_name = Default
project_name = admin
username = admin
password = ${ADMIN_PW}
region_name = ${REGION}
[paste_deploy]
flavor = keystone
config_file = /etc/glance/glance-api-paste.ini
[oslo_concurrency]
lock_path = ${dir}/glance/lock
`;
}

function cloudsYaml(authUrl: string): string {
  const entry = (user: string, pw: string, project: string): string =>
    `    auth: {auth_url: "${authUrl}", username: ${user}, password: ${pw}, project_name: ${project}, user_domain_name: Default, project_domain_name: Default}
    region_name: ${REGION}
    identity_api_version: 3
`;
  return `clouds:\n  loopback:\n${entry('demo', DEMO_PW, 'demo')}  loopback-admin:\n${entry('admin', ADMIN_PW, 'admin')}`;
}

/** The demo project and user, admin's domain role, the image service (and `services`) and their endpoints — plain Keystone v3 calls as admin. */
async function register(cloudsYamlPath: string, glanceUrl: string, services: NonNullable<StartLoopbackOptions['services']>): Promise<void> {
  const ks = await KeystoneSession.authenticate(await loadCloud('loopback-admin', { path: cloudsYamlPath }));
  const base = ks.endpoint('identity');
  const post = async <T>(p: string, json: unknown, key: string): Promise<T> =>
    (JSON.parse((await ks.request(`${base}${p}`, { method: 'POST', json })).body) as Record<string, T>)[key] as T;
  const roles = JSON.parse((await ks.request(`${base}/roles`, { method: 'GET' })).body) as { roles: Array<{ id: string; name: string }> };
  const roleId = async (name: string): Promise<string> =>
    roles.roles.find((r) => r.name === name)?.id ?? (await post<{ id: string }>('/roles', { role: { name } }, 'role')).id;
  const project = async (name: string): Promise<string> =>
    (await post<{ id: string }>('/projects', { project: { name, domain_id: 'default' } }, 'project')).id;
  const user = async (name: string, password: string, projectId: string, roleNames: string[]): Promise<void> => {
    const u = await post<{ id: string }>('/users', { user: { name, password, domain_id: 'default', default_project_id: projectId } }, 'user');
    for (const r of roleNames) {
      await ks.request(`${base}/projects/${projectId}/users/${u.id}/roles/${await roleId(r)}`, { method: 'PUT' });
    }
  };
  await user('demo', DEMO_PW, await project('demo'), ['member', 'reader']);
  // admin on the Default domain too, so domain-scoped tokens can be tested.
  const admins = JSON.parse((await ks.request(`${base}/users?name=admin`, { method: 'GET' })).body) as { users: Array<{ id: string }> };
  await ks.request(`${base}/domains/default/users/${admins.users[0]?.id ?? ''}/roles/${await roleId('admin')}`, { method: 'PUT' });
  for (const s of [{ type: 'image', name: 'glance', url: glanceUrl }, ...services]) {
    const svc = await post<{ id: string }>('/services', { service: { type: s.type, name: s.name } }, 'service');
    for (const itf of ['public', 'internal']) {
      await post('/endpoints', { endpoint: { service_id: svc.id, interface: itf, url: s.url, region_id: REGION } }, 'endpoint');
    }
  }
}

interface Started {
  cloud: LoopbackCloud;
  processes: TrackedProcess[];
}

async function start(opts: StartLoopbackOptions): Promise<Started> {
  const t0 = Date.now();
  const say = (line: string): void => opts.log?.(`[loopback-cloud ${((Date.now() - t0) / 1000).toFixed(1)}s] ${line}`);
  const ownDir = opts.dir === undefined;
  const dir = opts.dir ?? (await mkdtemp(path.join(os.tmpdir(), 'nodepool-loopback-')));
  const logDir = path.join(dir, 'log');
  for (const d of ['log', 'db', 'keystone/fernet-keys', 'keystone/credential-keys', 'glance/images', 'glance/staging', 'glance/tasks', 'glance/lock']) {
    await mkdir(path.join(dir, d), { recursive: true });
  }
  const [keystonePort, glancePort] = [opts.ports?.keystone ?? await freePort(), opts.ports?.glance ?? await freePort()];
  const authUrl = `http://127.0.0.1:${keystonePort}/v3`;
  const glanceUrl = `http://127.0.0.1:${glancePort}`;
  const ksConf = path.join(dir, 'keystone', 'keystone.conf');
  const glConf = path.join(dir, 'glance', 'glance-api.conf');
  const cloudsYamlPath = path.join(dir, 'clouds.yaml');
  await writeFile(ksConf, keystoneConf(dir));
  await writeFile(glConf, glanceConf(dir, glancePort, keystonePort));
  await writeFile(cloudsYamlPath, cloudsYaml(authUrl), { mode: 0o600 });
  const daemons = new DaemonGroup(path.join(dir, 'daemon-pgids'));
  const stopAll = (): Promise<void> => daemons.stop();
  const mlog = path.join(logDir, 'manage.log');
  try {
    const user = os.userInfo().username;
    const group = (await promisify(execFile)('id', ['-gn'], { env: childEnv() })).stdout.trim();
    const ks = ['--config-file', ksConf];
    const keystoneReady = (async () => {
      // One interpreter for every keystone-manage step: importing keystone costs ~2.3 s of
      // CPU per process, and this machine has few cores.
      await runOnce('keystone-manage', PY, ['-c', KEYSTONE_SETUP_PY, path.join(dir, 'db', 'keystone.db'), JSON.stringify([
        [...ks, 'db_sync'],
        [...ks, 'fernet_setup', '--keystone-user', user, '--keystone-group', group],
        [...ks, 'credential_setup', '--keystone-user', user, '--keystone-group', group],
        [...ks, 'bootstrap', '--bootstrap-password', ADMIN_PW, '--bootstrap-username', 'admin', '--bootstrap-project-name', 'admin',
          '--bootstrap-role-name', 'admin', '--bootstrap-service-name', 'keystone', '--bootstrap-region-id', REGION,
          '--bootstrap-admin-url', `${authUrl}/`, '--bootstrap-internal-url', `${authUrl}/`, '--bootstrap-public-url', `${authUrl}/`],
      ])], mlog);
      say('keystone database, keys and admin bootstrapped');
      const klog = path.join(logDir, 'keystone-uwsgi.log');
      const p = await daemons.start('keystone', 'uwsgi', ['--plugin', 'python3', '--master', '--processes', '1', '--threads', '1',
        '--lazy-apps', '--die-on-term', '--buffer-size', '65535', '--add-header', 'Connection: close', '--disable-logging',
        '--http-socket', `127.0.0.1:${keystonePort}`, '--wsgi-file', '/usr/bin/keystone-wsgi-public', '--procname-prefix', 'keystone-'],
      { env: { OS_KEYSTONE_CONFIG_DIR: path.join(dir, 'keystone') }, logFile: klog });
      await waitHttp(p, `${authUrl}/`, klog);
      say('keystone answers');
      await register(cloudsYamlPath, glanceUrl, opts.services ?? []);
      say('projects, users and the image endpoint registered');
    })();
    const glanceReady = (async () => {
      await runOnce('sqlite-wal', PY, ['-c', WAL_PY, path.join(dir, 'db', 'glance.db')], mlog);
      await runOnce('glance-manage db_sync', 'glance-manage', ['--config-file', glConf, 'db_sync'], mlog);
      say('glance database ready');
      const glog = path.join(logDir, 'glance-api.stdout');
      const p = await daemons.start('glance-api', 'glance-api', ['--config-file', glConf], { logFile: glog });
      await waitHttp(p, `${glanceUrl}/`, path.join(logDir, 'glance.log'));
      say('glance answers');
    })();
    const results = await Promise.allSettled([keystoneReady, glanceReady]);
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  } catch (err) {
    await stopAll();
    throw new Error(`loopback cloud failed to start (state kept in ${dir}): ${(err as Error).message}`, { cause: err });
  }
  const startupMs = Date.now() - t0;
  say(`up in ${startupMs} ms: keystone :${keystonePort}, glance :${glancePort}`);
  let stopping: Promise<void> | undefined;
  const cloud: LoopbackCloud = {
    authUrl, keystonePort, glancePort, cloudsYamlPath, cloudName: 'loopback', adminCloudName: 'loopback-admin',
    imagesDir: path.join(dir, 'glance', 'images'), startupMs,
    stop: () => (stopping ??= (async () => {
      await stopAll();
      if (ownDir) await rm(dir, { recursive: true, force: true });
    })()),
  };
  return { cloud, processes: daemons.processes };
}

/**
 * Starts Keystone and Glance on free loopback ports (typically 10–20 s).
 * The caller must `stop()` it. Throws with the relevant log tail when a step fails.
 */
export async function startLoopbackCloud(opts: StartLoopbackOptions = {}): Promise<LoopbackCloud> {
  return (await start(opts)).cloud;
}

/**
 * The cloud described by the JSON file named in `NODEPOOL_TEST_CLOUD` (shared by a test
 * runner; its `stop` is a no-op), else a private one that the caller stops.
 */
export async function useLoopbackCloud(opts: StartLoopbackOptions = {}): Promise<LoopbackCloud> {
  const shared = process.env.NODEPOOL_TEST_CLOUD;
  if (!shared) return startLoopbackCloud(opts);
  const raw = JSON.parse(await readFile(shared, 'utf8')) as Partial<LoopbackCloud>;
  for (const key of ['authUrl', 'keystonePort', 'glancePort', 'cloudsYamlPath', 'imagesDir'] as const) {
    if (raw[key] === undefined) throw new Error(`${shared}: NODEPOOL_TEST_CLOUD file lacks ${key}`);
  }
  return { ...(raw as LoopbackCloud), cloudName: 'loopback', adminCloudName: 'loopback-admin', startupMs: raw.startupMs ?? 0, stop: async () => {} };
}

async function cli(argv: string[]): Promise<void> {
  const [cmd, out] = argv;
  if (cmd !== 'up' || !out) {
    process.stderr.write('usage: node --import tsx test/support/openstack.ts up <json-out-path>\n');
    process.exit(2);
  }
  const log = (line: string): void => void process.stderr.write(`${line}\n`);
  const { cloud, processes } = await start({ log });
  let exiting = false;
  const shutdown = async (why: string, code: number): Promise<void> => {
    if (exiting) return;
    exiting = true;
    log(`[loopback-cloud] stopping (${why})`);
    await rm(out, { force: true });
    await cloud.stop();
    process.exit(code);
  };
  const { stop: _stop, ...description } = cloud;
  await writeFile(`${out}.tmp`, JSON.stringify(description, null, 2));
  await rename(`${out}.tmp`, out);
  log(`[loopback-cloud] description written to ${out}`);
  for (const sig of ['SIGTERM', 'SIGINT'] as const) process.once(sig, () => void shutdown(sig, 0));
  for (const p of processes) void p.exited.then(({ code, signal }) => shutdown(`${p.name} exited (${code ?? signal})`, 1));
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  cli(process.argv.slice(2)).catch((err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  });
}
