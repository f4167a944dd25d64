/**
 * The launcher fleet on a real ZooKeeper with every kind of pool (issue 35): three
 * nodepool-server processes without `--provider` share two static pools (one sshd host each),
 * two openstack providers on the run's loopback Nova (fake virt driver; through a
 * NovaFaultProxy, which holds a create's answer to keep a launch in progress) and one qemu
 * provider (real QEMU; its guests resumed from the run's saved guest, a start held open by a
 * file). Five times, for a cloud pool in turn: a request for its label is made, and once its
 * node is mid-launch (the node `building`; Nova's server created and its answer held, or the
 * VM's QEMU running) the pool's owner is killed with -9. The pool must run elsewhere within
 * `launcher.takeover-timeout` (10 s; twice that is the test's bound on a loaded machine), the
 * request be served (not failed) by one node, the dead launch's node deleted with its server or
 * VM; the killed server restarts and ownership settles on the rendezvous owners. A watcher
 * reads the store every 200 ms: it must never see a pool registered twice, nor two live
 * launchers building nodes for one request. At the end no Nova server of the providers and no
 * QEMU of the qemu provider is without a node record.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { NodepoolClient } from '../../../lib/client/nodepool-client.js';
import { loadCloud } from '../../../lib/drivers/openstack/clouds-yaml.js';
import { KeystoneSession } from '../../../lib/drivers/openstack/keystone.js';
import { NovaClient } from '../../../lib/drivers/openstack/nova.js';
import { QemuImageService } from '../../../lib/drivers/qemu/image-store.js';
import { waitFor } from '../../../lib/lifecycle.js';
import type { NodeRecord } from '../../../lib/store/models.js';
import { recordFault } from '../../support/fault-report.js';
import { FleetWatch } from '../../support/fleet-watch.js';
import { LauncherSystem } from '../../support/launcher-system.js';
import { NovaFaultProxy } from '../../support/nova-fault-proxy.js';
import { useNovaCloud, type NovaCloud } from '../../support/openstack-full.js';
import { freePort, stopAllProcesses, type TrackedProcess } from '../../support/processes.js';
import { bootableImage, QEMU_TEST_USER } from '../../support/qemu-image.js';
import { qemuResumeWrapper, SAVED_GUEST_CPUS, SAVED_GUEST_MEMORY, savedGuest } from '../../support/qemu-saved-guest.js';
import { startSshd, type SshdHandle } from '../../support/sshd.js';
import { testLogger } from '../../support/test-log.js';
import { startZooKeeper, type ZooKeeperHandle } from '../../support/zookeeper.js';

const TAKEOVER_S = 10;
const SERVERS = ['fleet-1', 'fleet-2', 'fleet-3'];
const tag = randomBytes(3).toString('hex');
type Kind = 'static' | 'nova' | 'qemu';
const POOLS: ReadonlyArray<{ provider: string; pool: string; key: string; label: string; kind: Kind }> = [
  ...['st1', 'st2'].map((p) => ({ provider: `${p}-${tag}`, kind: 'static' as const })),
  ...['nv1', 'nv2'].map((p) => ({ provider: `${p}-${tag}`, kind: 'nova' as const })),
  { provider: `qm-${tag}`, kind: 'qemu' as const },
].map((p) => ({ ...p, pool: 'main', key: `${p.provider}/main`, label: `l-${p.provider}` }));
const CLOUD_POOLS = POOLS.filter((p) => p.kind !== 'static');

describe('launcher fleet on ZooKeeper with static, Nova and qemu pools: kill -9 mid-launch', { timeout: 1_800_000 }, () => {
  let zk: ZooKeeperHandle;
  let sshd: SshdHandle;
  let nova: NovaCloud;
  let proxy: NovaFaultProxy;
  let sys: LauncherSystem;
  let watch: FleetWatch;
  let client: NodepoolClient;
  let direct: NovaClient;
  let session: KeystoneSession;
  let dir: string;
  let holdBoot: string;
  const procs = new Map<string, TrackedProcess>();

  /** Two live launchers building nodes for one request at once: `<request>: <launchers>`. */
  async function doubleLaunches(): Promise<string[]> {
    const live = new Set((await sys.store.listLaunchers()).map((l) => l.id));
    const byRequest = new Map<string, Set<string>>();
    for (const n of await sys.store.listNodes()) {
      if (n.state !== 'building' || !n.allocatedTo || !n.launcher || !live.has(n.launcher)) continue;
      byRequest.set(n.allocatedTo, (byRequest.get(n.allocatedTo) ?? new Set()).add(n.launcher));
    }
    return [...byRequest].filter(([, l]) => l.size > 1).map(([r, l]) => `${r}: ${[...l].join(', ')}`);
  }


  /** Servers of the Nova providers in Nova, straight (not through the proxy). */
  const novaServers = async () => (await direct.listServers())
    .filter((s) => POOLS.some((p) => p.kind === 'nova' && p.provider === s.metadata.nodepool_provider_name));

  /** pids of the qemu provider's QEMU processes. */
  async function qemuPids(): Promise<number[]> {
    const out: number[] = [];
    for (const name of await readdir('/proc')) {
      if (!/^\d+$/.test(name)) continue;
      const cmd = await readFile(`/proc/${name}/cmdline`, 'utf8').catch(() => '');
      if (cmd.startsWith('qemu-system') && cmd.includes(path.join(dir, 'vm-state'))) out.push(Number(name));
    }
    return out;
  }

  const start = (name: string): void => {
    procs.set(name, sys.startServerProcess(name));
  };

  before(async () => {
    [zk, nova] = await Promise.all([startZooKeeper(), useNovaCloud()]);
    const image = (await bootableImage()).path;
    const saved = await savedGuest();
    const statics = POOLS.filter((p) => p.kind === 'static');
    const ports = await Promise.all(statics.map(() => freePort()));
    sshd = await startSshd({ addresses: ports.map((p) => `127.0.0.1:${p}`), keyTypes: ['ed25519'] });
    dir = await mkdtemp(path.join(tmpdir(), 'nodepool-fleet-clouds-'));
    proxy = await NovaFaultProxy.start(nova, dir);
    holdBoot = path.join(dir, 'hold-boot');
    const qemuBinary = await qemuResumeWrapper(saved, dir, { holdWhile: holdBoot });
    const key = path.join(dir, 'id_ed25519');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'fleet-clouds', '-f', key]);
    const imageDir = path.join(dir, 'vm-images');
    await mkdir(imageDir, { recursive: true });
    const providers = POOLS.map((p, i) => {
      switch (p.kind) {
        case 'static':
          return {
            name: p.provider, driver: 'static',
            pools: [{ name: p.pool, nodes: [{ name: '127.0.0.1', 'connection-port': ports[i], labels: [p.label], 'host-key': sshd.hostKey('ed25519'), timeout: 2 }] }],
          };
        case 'nova':
          return {
            name: p.provider, driver: 'openstack', cloud: nova.cloud, 'region-name': nova.region, 'launch-timeout': 120, 'launch-retries': 3,
            'cloud-images': [{ name: nova.image.name, username: 'cirros' }],
            pools: [{ name: p.pool, networks: [nova.network.name], 'host-key-checking': false, 'max-servers': 4, labels: [{ name: p.label, 'cloud-image': nova.image.name, 'flavor-name': 'm1.tiny' }] }],
          };
        case 'qemu':
          return {
            name: p.provider, driver: 'qemu', 'qemu-binary': qemuBinary, 'image-dir': imageDir, 'state-dir': path.join(dir, 'vm-state'), accel: 'auto',
            'boot-timeout': 300, username: QEMU_TEST_USER, 'authorized-keys': `${key}.pub`, diskimages: [{ name: 'deb' }],
            pools: [{ name: p.pool, 'max-servers': 2, labels: [{ name: p.label, diskimage: 'deb', memory: SAVED_GUEST_MEMORY, cpus: SAVED_GUEST_CPUS }] }],
          };
      }
    });
    sys = await LauncherSystem.create({
      labels: POOLS.map((p) => ({ name: p.label })),
      providers,
      extra: {
        'zookeeper-servers': [{ host: zk.host, port: zk.port, chroot: `/fleet-clouds-${randomUUID().slice(0, 8)}` }], 'zookeeper-timeout': 4,
        'clouds-file': proxy.cloudsYamlPath, diskimages: [{ name: 'deb', pause: true }],
      },
      launcher: { 'session-ttl': 30, 'takeover-timeout': TAKEOVER_S },
    });
    watch = new FleetWatch(sys.store, POOLS.map((p) => p.key), SERVERS.length);
    // The qemu provider's image: the bootable image uploaded through its image service, a ready build and upload of `deb`.
    const qemuProvider = POOLS.find((p) => p.kind === 'qemu')?.provider as string;
    const build = await sys.store.createBuild({ diskimage: 'deb', formats: ['qcow2'] });
    await sys.store.updateBuild(build.id, { state: 'ready' });
    const upload = await sys.store.createUpload({ buildId: build.id, provider: qemuProvider, imageName: 'deb', externalName: `deb-${tag}` });
    const done = await new QemuImageService({ imageDir, log: testLogger() }).upload({
      name: `deb-${tag}`, format: 'qcow2', filePath: image,
      properties: { nodepool_build_id: build.id, nodepool_upload_id: upload.id, nodepool_provider_name: qemuProvider, nodepool_image_name: 'deb' },
    });
    await sys.store.updateUpload(upload.id, { state: 'ready', externalId: done.externalId, format: 'qcow2' });
    session = await KeystoneSession.authenticate(await loadCloud(nova.cloud, { path: nova.cloudsFile }));
    direct = new NovaClient(session);
    for (const name of SERVERS) start(name);
    client = await sys.client();
    watch.watch(async () => (await doubleLaunches()).map((d) => `request ${d}`));
  });

  after(async () => {
    await watch?.stop();
    await writeFile(holdBoot, '').then(() => rm(holdBoot, { force: true })).catch(() => undefined);
    await sys?.stop();
    await stopAllProcesses();
    try {
      for (const s of direct ? await novaServers() : []) await direct.deleteServer(s.id).catch(() => false);
      if (direct) await waitFor(async () => (await novaServers()).length === 0, { timeoutMs: 60_000, what: 'no server of the fleet\'s Nova providers left', intervalMs: 500 });
    } finally {
      for (const pid of dir ? await qemuPids() : []) process.kill(pid, 'SIGKILL');
      session?.close();
      await proxy?.stop();
      await sshd?.stop();
      await zk?.stop();
      if (dir) await rm(dir, { recursive: true, force: true });
    }
  });

  it('kill -9 of a pool\'s owner mid-launch, five times: the pool moves within the bound, the request is served once, nothing leaked', async () => {
    const takeovers: number[] = [];
    for (let round = 1; round <= 5; round++) {
      const owners = await waitFor(() => watch.settled(), { timeoutMs: 120_000, intervalMs: 250, what: `ownership settled before round ${round}` });
      const target = CLOUD_POOLS[(round - 1) % CLOUD_POOLS.length] as (typeof POOLS)[number];
      const victim = owners.get(target.key) as string;
      const lost = POOLS.filter((p) => owners.get(p.key) === victim);
      // Keep the launch in progress: Nova's answer to the create held, or the VM's start held open.
      if (target.kind === 'nova') proxy.arm({ call: 'create', kind: 'hold', times: 1 });
      else await writeFile(holdBoot, '');
      const request = await client.request([target.label], { ephemeral: false });
      const building = await waitFor(async () => {
        const n = (await sys.store.listNodes({ provider: target.provider })).find((x) => x.allocatedTo === request.id && x.state === 'building');
        if (!n) return undefined;
        if (target.kind === 'nova') return proxy.holding() > 0 ? n : undefined;
        return (await qemuPids()).length > 0 ? n : undefined;
      }, { timeoutMs: 180_000, intervalMs: 100, what: `round ${round}: ${target.key}'s launch in progress` });
      const killed = Date.now();
      await procs.get(victim)?.kill();
      proxy.release();
      await rm(holdBoot, { force: true });
      const tookMs = await watch.movedFrom(victim, lost.map((p) => p.key), killed, `round ${round}: ${victim}'s pools run elsewhere`);
      takeovers.push(tookMs);
      console.log(`# round ${round}: killed ${victim} mid-launch on ${target.key} (its pools ${lost.map((p) => p.key).join(', ')}); they ran elsewhere after ${(tookMs / 1000).toFixed(1)} s`);
      const done = await sys.waitForRequest(request.id, ['fulfilled', 'failed'], 240_000);
      assert.equal(done.state, 'fulfilled', `round ${round}: the request was served after the takeover (${done.reason ?? ''})`);
      assert.equal(done.nodes.length, 1, `round ${round}: by one node`);
      assert.notEqual(done.nodes[0], building.id, `round ${round}: a new launch, not the dead one's`);
      await waitFor(async () => (await sys.store.getNode(building.id)) === undefined, { timeoutMs: 120_000, intervalMs: 250, what: `round ${round}: the dead launch's node ${building.id} deleted` });
      for (const node of await client.accept(done)) await client.release(node.id);
      start(victim);
    }
    await waitFor(() => watch.settled(), { timeoutMs: 120_000, intervalMs: 250, what: 'ownership settled after the last restart' });
    // Nothing leaked: once the released nodes are gone, no server or VM of the providers is left.
    let leaks: string[] = [];
    await waitFor(async () => {
      const nodes: NodeRecord[] = (await sys.store.listNodes()).filter((n) => CLOUD_POOLS.some((p) => p.provider === n.provider));
      leaks = [...(await novaServers()).map((s) => `server ${s.id} (${s.name})`), ...(await qemuPids()).map((pid) => `qemu ${pid}`)];
      return nodes.length === 0 && leaks.length === 0;
    }, { timeoutMs: 180_000, intervalMs: 500, what: 'every cloud node deleted, no server or VM left' }).catch(() => undefined);
    assert.deepEqual([...watch.seen], [], 'no pool registered twice, no request built by two live launchers');
    const sorted = [...takeovers].sort((a, b) => a - b);
    const p50 = sorted[Math.floor(sorted.length / 2)] as number;
    const max = sorted[sorted.length - 1] as number;
    recordFault({
      scenario: 'launcher fleet: kill -9 mid-launch (static, Nova and qemu pools, ZooKeeper)', runs: takeovers.length, recovered: takeovers.length, lost: 0, leaked: leaks.length, recoverMs: max,
      notes: `takeover p50 ${(p50 / 1000).toFixed(1)} s, max ${(max / 1000).toFixed(1)} s; takeover-timeout ${TAKEOVER_S} s; each request served by one new node, the dead launch's node deleted`,
    });
    assert.deepEqual(leaks, [], 'no server or VM leaked');
    assert.ok(max <= TAKEOVER_S * 2000, `every takeover within twice takeover-timeout (${takeovers.map((t) => (t / 1000).toFixed(1)).join(', ')} s)`);
  });
});
