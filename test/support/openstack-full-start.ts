/**
 * Starts the full loopback cloud: Keystone + Glance (test/support/openstack.ts, with the
 * compute, network and placement endpoints registered up front: Nova caches the catalog,
 * reference §4.13), one private MariaDB, a private RabbitMQ, Placement (uwsgi), Neutron
 * (ML2 with the agentless driver in test/support/loopback_mech), and nova-api, -conductor,
 * -scheduler and -compute with the fake virt driver. Every port is a free 127.0.0.1 port
 * and all state lives in one temporary directory. Independent steps run in parallel.
 */
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadCloud } from '../../lib/drivers/openstack/clouds-yaml.js';
import { KeystoneSession } from '../../lib/drivers/openstack/keystone.js';
import { waitFor } from '../../lib/lifecycle.js';
import { LOOPBACK_ADMIN_PASSWORD, LOOPBACK_REGION, startLoopbackCloud } from './openstack.js';
import { DaemonGroup, runOnce, tail, waitHttp } from './openstack-daemons.js';
import { FullCloudAdmin, type LoopbackFlavor } from './openstack-full-admin.js';
import { neutronConf, NOVA_API_WRAPPER, NOVA_COMPUTE_WRAPPER, novaApiDbConf, novaConf, placementConf, type FullCloudLayout } from './openstack-full-conf.js';
import { startMariaDb } from './openstack-mariadb.js';
import { startRabbitMq } from './openstack-rabbitmq.js';
import { freePort, type TrackedProcess } from './processes.js';

/** Everything a second process needs to use a running full cloud (the info file's content). */
export interface NovaCloudInfo {
  authUrl: string;
  cloudsFile: string;
  cloud: 'loopback';
  adminCloud: 'loopback-admin';
  region: string;
  network: { name: string; id: string };
  flavors: LoopbackFlavor[];
  image: { id: string; name: string };
  /** State directory (configs, logs under `log/`). */
  dir: string;
  /** How long the start took (ms). */
  startupMs: number;
}

/** A started full cloud, owned by the caller. */
export interface StartedFullCloud {
  info: NovaCloudInfo;
  /** The daemons (for exit monitoring). */
  processes: TrackedProcess[];
  /** Stops every daemon and removes the state directory. Idempotent. */
  stop(): Promise<void>;
}

const MECH_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'loopback_mech');
const DATABASES = ['placement', 'nova_api', 'nova', 'nova_cell0', 'neutron'] as const;

/** Starts the full cloud; throws with the relevant log tail when a step fails (nothing is left running then). */
export async function startFullCloud(opts: { log?: (line: string) => void; signal?: AbortSignal } = {}): Promise<StartedFullCloud> {
  const t0 = Date.now();
  // Progress lines double as abort points: each phase between them is bounded.
  const say = (line: string): void => {
    opts.log?.(`[nova-cloud ${((Date.now() - t0) / 1000).toFixed(1)}s] ${line}`);
    opts.signal?.throwIfAborted();
  };
  const dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-nova-'));
  const logDir = path.join(dir, 'log');
  for (const d of ['log', 'placement', 'nova/state', 'nova/lock', 'neutron/state', 'neutron/lock']) await mkdir(path.join(dir, d), { recursive: true });
  const ports = { keystone: await freePort(), glance: await freePort(), placement: await freePort(), nova: await freePort(), neutron: await freePort() };
  const url = (port: number, suffix = ''): string => `http://127.0.0.1:${port}${suffix}`;
  const daemons = new DaemonGroup(path.join(dir, 'daemon-pgids'));
  const keystoneGlance = startLoopbackCloud({
    dir: path.join(dir, 'keystone-glance'), ports: { keystone: ports.keystone, glance: ports.glance }, log: opts.log,
    services: [
      { type: 'placement', name: 'placement', url: url(ports.placement) },
      { type: 'compute', name: 'nova', url: url(ports.nova, '/v2.1') },
      { type: 'network', name: 'neutron', url: url(ports.neutron) },
    ],
  });
  keystoneGlance.catch(() => {}); // awaited below; this only keeps an early failure from counting as unhandled
  const stop = async (): Promise<void> => {
    await Promise.allSettled([daemons.stop(), keystoneGlance.then((c) => c.stop())]);
  };
  try {
    const [db, rabbit] = await Promise.all([
      startMariaDb(path.join(dir, 'mariadb'), daemons, DATABASES).then((m) => (say('mariadb up'), m)),
      startRabbitMq(path.join(dir, 'rabbitmq'), daemons).then((r) => (say('rabbitmq up'), r)),
    ]);
    const layout: FullCloudLayout = {
      dir, keystoneUrl: url(ports.keystone), adminPassword: LOOPBACK_ADMIN_PASSWORD, region: LOOPBACK_REGION,
      transportUrl: rabbit.transportUrl, dbUrl: (name) => db.url(name),
      placementPort: ports.placement, novaPort: ports.nova, neutronPort: ports.neutron,
    };
    const files = {
      placement: path.join(dir, 'placement', 'placement.conf'), nova: path.join(dir, 'nova', 'nova.conf'),
      novaApiDb: path.join(dir, 'nova', 'nova-api-db.conf'), neutron: path.join(dir, 'neutron', 'neutron.conf'),
      api: path.join(dir, 'nova', 'nova-api'), compute: path.join(dir, 'nova', 'nova-compute'),
    };
    await writeFile(files.placement, placementConf(layout));
    await writeFile(files.nova, novaConf(layout));
    await writeFile(files.novaApiDb, novaApiDbConf(layout));
    await writeFile(files.neutron, neutronConf(layout));
    for (const [file, program] of [[files.api, NOVA_API_WRAPPER], [files.compute, NOVA_COMPUTE_WRAPPER]] as const) {
      await writeFile(file, program);
      await chmod(file, 0o755);
    }
    const mlog = (name: string): string => path.join(logDir, `${name}.log`);
    const nc = ['--config-file', files.nova, '--config-file', files.novaApiDb];

    const placementUp = (async () => {
      await runOnce('placement-manage db sync', 'placement-manage', ['--config-file', files.placement, 'db', 'sync'], mlog('placement-manage'));
      await keystoneGlance;
      const p = await daemons.start('placement', 'uwsgi', ['--plugin', 'python3', '--master', '--processes', '2', '--threads', '1',
        '--lazy-apps', '--die-on-term', '--buffer-size', '65535', '--add-header', 'Connection: close', '--disable-logging',
        '--http-socket', `127.0.0.1:${ports.placement}`, '--wsgi-file', '/usr/bin/placement-api', '--procname-prefix', 'placement-'],
      { logFile: mlog('placement-uwsgi'), env: { OS_PLACEMENT_CONFIG_DIR: path.join(dir, 'placement') } });
      await waitHttp(p, url(ports.placement, '/'), mlog('placement'));
      say('placement answers');
    })();
    const neutronUp = (async () => {
      await runOnce('neutron-db-manage', 'neutron-db-manage', ['--config-file', files.neutron, 'upgrade', 'heads'], mlog('neutron-db-manage'), { timeoutMs: 300_000 });
      say('neutron database migrated');
      await keystoneGlance;
      const p = await daemons.start('neutron-server', 'neutron-server', ['--config-file', files.neutron],
        { logFile: mlog('neutron-server.stdout'), env: { PYTHONPATH: MECH_DIR, PYTHONDONTWRITEBYTECODE: '1' } });
      await waitHttp(p, url(ports.neutron, '/'), mlog('neutron'), 120_000);
      say('neutron answers');
    })();
    const novaDb = (async () => {
      const manage = (args: string[]): Promise<void> =>
        runOnce(`nova-manage ${args.join(' ')}`, 'nova-manage', [...nc, ...args], mlog('nova-manage'), { timeoutMs: 300_000 });
      await manage(['api_db', 'sync']);
      await manage(['cell_v2', 'map_cell0', '--database_connection', db.url('nova_cell0')]);
      await manage(['cell_v2', 'create_cell', '--name', 'cell1']);
      await manage(['db', 'sync']);
      say('nova databases ready');
    })();
    const image = path.join(dir, 'loopback-tiny.qcow2');
    const imageMade = runOnce('qemu-img', 'qemu-img', ['create', '-q', '-f', 'qcow2', image, '64M'], mlog('qemu-img'));
    await settleAll([placementUp, neutronUp, novaDb, imageMade, keystoneGlance]);

    const api = await daemons.start('nova-api', files.api, nc, { logFile: mlog('nova-api.stdout') });
    const services = [
      await daemons.start('nova-conductor', 'nova-conductor', nc, { logFile: mlog('nova-conductor.stdout') }),
      await daemons.start('nova-scheduler', 'nova-scheduler', nc, { logFile: mlog('nova-scheduler.stdout') }),
      await daemons.start('nova-compute', files.compute, ['--config-file', files.nova], { logFile: mlog('nova-compute.stdout') }),
    ];
    await waitHttp(api, url(ports.nova, '/'), mlog('nova-api'), 120_000);
    say('nova-api answers');
    const cloudsFile = (await keystoneGlance).cloudsYamlPath;
    const admin = new FullCloudAdmin(await KeystoneSession.authenticate(await loadCloud('loopback-admin', { path: cloudsFile })));
    const resources = await admin.createResources(image);
    say('flavors, networks, image and quotas in place');
    // The compute host must be mapped to cell1 (discover_hosts once its node row exists) and
    // every RPC queue consumed: a boot cast before nova-compute listens is lost (reference §4.15).
    const count = async (sql: string, database: string): Promise<number> => Number((await db.query(sql, database))[0]?.[0] ?? 0);
    await waitFor(async () => {
      for (const s of services) {
        if (!s.alive()) throw new Error(`${s.name} exited; ${mlog(s.name)}:\n${await tail(mlog(s.name))}`);
      }
      return (await count("SELECT COUNT(*) FROM compute_nodes WHERE host = 'loopback' AND deleted = 0", 'nova')) === 1;
    }, { timeoutMs: 120_000, what: 'nova-compute to register its compute node', intervalMs: 250 });
    await runOnce('nova-manage cell_v2 discover_hosts', 'nova-manage', [...nc, 'cell_v2', 'discover_hosts'], mlog('nova-manage'));
    if ((await count("SELECT COUNT(*) FROM host_mappings WHERE host = 'loopback'", 'nova_api')) !== 1) {
      throw new Error('nova-manage cell_v2 discover_hosts did not map host loopback to cell1');
    }
    say('compute host mapped to cell1');
    await waitFor(async () => {
      const q = await rabbit.queueConsumers();
      return ['conductor', 'scheduler', 'compute.loopback'].every((n) => (q.get(n) ?? 0) > 0);
    }, { timeoutMs: 60_000, what: 'nova services consuming their RPC queues', intervalMs: 500 });
    const startupMs = Date.now() - t0;
    say(`up in ${startupMs} ms: keystone :${ports.keystone}, glance :${ports.glance}, placement :${ports.placement}, nova :${ports.nova}, neutron :${ports.neutron}`);
    const info: NovaCloudInfo = {
      authUrl: url(ports.keystone, '/v3'), cloudsFile, cloud: 'loopback', adminCloud: 'loopback-admin', region: LOOPBACK_REGION,
      network: resources.network, flavors: resources.flavors, image: resources.image, dir, startupMs,
    };
    const kg = await keystoneGlance;
    let stopping: Promise<void> | undefined;
    return {
      info,
      processes: [...daemons.processes],
      stop: () => (stopping ??= (async () => {
        await Promise.allSettled([daemons.stop(), kg.stop()]);
        await rm(dir, { recursive: true, force: true });
      })()),
    };
  } catch (err) {
    await stop();
    if (opts.signal?.aborted) {
      await rm(dir, { recursive: true, force: true });
      throw err;
    }
    throw new Error(`full loopback cloud failed to start (state kept in ${dir}): ${(err as Error).message}`, { cause: err });
  }
}

/** Awaits every promise; rethrows the first failure only once all have settled (nothing left half-started). */
async function settleAll(ps: Array<Promise<unknown>>): Promise<void> {
  const failed = (await Promise.allSettled(ps)).find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
}
