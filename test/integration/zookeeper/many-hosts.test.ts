/**
 * The system on many hosts, each a network namespace on one bridge (test/support/netns.ts):
 * ZooKeeper and gearmand on `core`; nodepool-builder (fake DIB) on `builder-1` and `builder-2`;
 * nodepool-server on `server-a` (`--provider pa`) and `server-b` (`--provider pb`), both
 * running the image lifecycle under the leader lock; the CLI on `cli`. The static hosts are
 * one real sshd in the root namespace on the bridge address (two ports: pa's host, pb's host).
 * The test process reads the store from the root namespace over the bridge.
 *
 * Images: builds only. The builders build both diskimages and the lifecycle leader tracks them;
 * no upload target, since the loopback cloud lives on 127.0.0.1 of the root namespace and its
 * catalog names 127.0.0.1 endpoints the namespaces cannot reach.
 *
 * Then the leader's host is killed (SIGKILL to every process in its namespace): its ZooKeeper
 * session expires (zookeeper-timeout 2 s), so its launcher registration and its locks lapse;
 * the request its launcher held pending (a CLI waiting in the background) is reset by the
 * survivor's cleanup and served by the survivor; the image lifecycle moves to the survivor.
 * A server started again on the dead host takes its provider back and cleans up after the
 * crash; nothing stuck, nothing left locked, nothing left running.
 * `NODEPOOL_KEEP_LOGS=1` prints every daemon's log at the end (they are removed with the temp dir).
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import yaml from 'js-yaml';
import { loadConfig } from '../../../lib/config/load.js';
import { waitFor } from '../../../lib/lifecycle.js';
import { requestLock } from '../../../lib/store/lock-names.js';
import type { NodeRecord } from '../../../lib/store/models.js';
import { openStore } from '../../../lib/store/open-store.js';
import type { Store } from '../../../lib/store/store.js';
import { NetnsNetwork, type NetnsHost } from '../../support/netns.js';
import { freePort, runningProcesses, stopAllProcesses, type TrackedProcess } from '../../support/processes.js';
import { startSshd, type SshdHandle } from '../../support/sshd.js';
import { cliIn, GEARMAN_PORT, startBinIn, startGearmandIn, startZooKeeperIn, ZK_PORT } from './netns-services.js';
import { nodeScript } from '../../support/node-command.js';

const FAKE_DIB = path.resolve('test/fixtures/bin/fake-dib');
const LEADER_LOCK = 'leader:image-lifecycle';
const SERVERS = { 'server-a': 'pa', 'server-b': 'pb' } as const;
type ServerName = keyof typeof SERVERS;

void describe('many hosts in network namespaces, on ZooKeeper', () => {
  let net: NetnsNetwork;
  let dir: string;
  let sshd: SshdHandle;
  let store: Store;
  let cli: NetnsHost;
  let cliConfig: string;
  const servers = new Map<ServerName, TrackedProcess>();
  const logs: string[] = [];

  const configFor = async (name: string, core: NetnsHost, ports: { pa: number; pb: number }): Promise<string> => {
    const base = path.join(dir, name);
    await mkdir(base, { recursive: true });
    const host = (port: number): Record<string, unknown> => ({
      name: net.rootAddress, 'connection-port': port, labels: ['common'], 'host-key': sshd.hostKey('ed25519'), 'max-parallel-jobs': 1, timeout: 2,
    });
    const file = path.join(base, 'nodepool.yaml');
    await writeFile(file, yaml.dump({
      'zookeeper-servers': [{ host: core.address, port: ZK_PORT, chroot: '/many-hosts' }],
      'zookeeper-timeout': 2,
      'gearman-servers': [{ host: core.address, port: GEARMAN_PORT }],
      'state-dir': path.join(base, 'state'),
      'images-dir': path.join(base, 'images'),
      'build-log-dir': path.join(base, 'logs'),
      'image-lifecycle': { interval: 1, 'retry-delay': 2, 'max-retry-delay': 8, 'build-timeout-grace': 5, 'leak-check-interval': 0 },
      launcher: { interval: 0.2, 'delete-interval': 0.5, 'cleanup-interval': 1, 'session-ttl': 2 },
      labels: [{ name: 'common' }],
      diskimages: ['d1', 'd2'].map((d) => ({
        name: d, elements: ['fake-element'], release: 'bookworm', formats: ['qcow2'], 'dib-cmd': FAKE_DIB, 'env-vars': { FAKE_DIB_DELAY: '0.3' },
      })),
      providers: [
        { name: 'pa', driver: 'static', pools: [{ name: 'main', nodes: [host(ports.pa)] }] },
        { name: 'pb', driver: 'static', pools: [{ name: 'main', nodes: [host(ports.pb)] }] },
      ],
    }));
    loadConfig(file); // the real loader checks it now, not inside a daemon's log
    return file;
  };

  const startServer = (name: ServerName): TrackedProcess => {
    const log = path.join(dir, `${name}-${servers.size}.log`);
    logs.push(log);
    const p = startBinIn(net.host(name), name, 'nodepool-server', [
      '-c', path.join(dir, name, 'nodepool.yaml'), '--hostname', name, '--provider', SERVERS[name], '--no-webapp', '--log-level', 'debug',
    ], log);
    servers.set(name, p);
    return p;
  };

  /** The session holding a lock, with the hostname its server gave it. */
  const lockHolder = async (resource: string): Promise<{ sessionId: string; hostname: string | undefined } | undefined> => {
    const lock = await store.getLock(resource);
    if (!lock?.live) return undefined;
    return { sessionId: lock.sessionId, hostname: (await store.getSession(lock.sessionId))?.hostname };
  };
  const holderOf = async (resource: string): Promise<string | undefined> => (await lockHolder(resource))?.hostname;

  const readyNodes = async (): Promise<NodeRecord[]> => (await store.listNodes({ states: ['ready'] })).filter((n) => n.allocatedTo === null);

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-many-hosts-'));
    net = await NetnsNetwork.create();
    const core = await net.addHost('core');
    const builderHosts = [await net.addHost('builder-1'), await net.addHost('builder-2')];
    for (const name of Object.keys(SERVERS)) await net.addHost(name);
    cli = await net.addHost('cli');

    const ports = { pa: await freePort(), pb: await freePort() };
    sshd = await startSshd({ addresses: [`${net.rootAddress}:${ports.pa}`, `${net.rootAddress}:${ports.pb}`], keyTypes: ['ed25519'] });
    await startZooKeeperIn(core, path.join(dir, 'zookeeper'));
    await startGearmandIn(core, path.join(dir, 'gearmand'));
    for (const name of [...Object.keys(SERVERS), 'cli']) await configFor(name, core, ports);
    cliConfig = path.join(dir, 'cli', 'nodepool.yaml');
    for (const h of builderHosts) {
      const file = await configFor(h.name, core, ports);
      const log = path.join(dir, `${h.name}.log`);
      logs.push(log);
      startBinIn(h, h.name, 'nodepool-builder', ['-c', file, '--hostname', h.name, '--shutdown-timeout', '5', '--log-level', 'debug'], log);
    }
    store = await openStore(loadConfig(cliConfig));
    startServer('server-a');
    startServer('server-b');
    await waitFor(async () => (await store.listLaunchers()).length === 2, { timeoutMs: 60_000, what: 'a launcher registered by each server host' });
    await waitFor(async () => (await readyNodes()).length === 2, { timeoutMs: 60_000, what: 'both static hosts ready' });
    await waitFor(async () => (await store.listBuilds({ states: ['ready'] })).length === 2, { timeoutMs: 90_000, what: 'd1 and d2 built on the builder hosts' });
  });

  after(async () => {
    await store?.close().catch(() => undefined);
    for (const p of servers.values()) await p.stop(5000);
    await stopAllProcesses();
    await sshd?.stop();
    const inside = net ? await net.pidsInside() : [];
    await net?.teardown();
    assert.deepEqual(inside, [], 'nothing left running in the namespaces');
    assert.deepEqual(runningProcesses().map((p) => p.name), [], 'no tracked process left running');
    if (process.env.NODEPOOL_KEEP_LOGS) for (const l of logs) process.stdout.write(`# ${l}:\n${await readFile(l, 'utf8').catch(() => '')}\n`);
    await rm(dir, { recursive: true, force: true });
  });

  it('builds on both builder hosts, each server registers only its provider, one leads the image lifecycle', async () => {
    const builds = await store.listBuilds({ states: ['ready'] });
    assert.deepEqual(builds.map((b) => b.diskimage).sort(), ['d1', 'd2']);
    // Both builds start in one pass and each builder builds one at a time, so each host takes one.
    assert.deepEqual(builds.map((b) => b.builderHostname).sort(), ['builder-1', 'builder-2'], 'one build on each builder host');
    const launchers = await store.listLaunchers();
    assert.deepEqual(launchers.map((l) => l.provider).sort(), ['pa', 'pb']);
    assert.ok(launchers.every((l) => l.id.startsWith(`${l.provider === 'pa' ? 'server-a' : 'server-b'}-`)), launchers.map((l) => l.id).join(', '));
    assert.ok(['server-a', 'server-b'].includes(await holderOf(LEADER_LOCK) ?? ''), 'one server holds the image-lifecycle leader lock');
  });

  it('serves the CLI on its own host from both server hosts', async () => {
    const taken: NodeRecord[] = [];
    for (const provider of ['pa', 'pb']) {
      const r = await cliIn(cli, cliConfig, ['request', 'common', '--wait', '--timeout', '60', '--provider', provider, '--json']);
      assert.equal(r.code, 0, r.stderr);
      const [node] = JSON.parse(r.stdout) as NodeRecord[];
      assert.equal(node?.provider, provider, `served by the server that runs ${provider}`);
      assert.equal(node.state, 'in-use');
      taken.push(node);
    }
    for (const n of taken) assert.equal((await cliIn(cli, cliConfig, ['release', n.id])).code, 0);
    const newest = Math.max(...taken.map((n) => n.created));
    const back = await waitFor(async () => {
      const ready = await readyNodes();
      return ready.length === 2 && ready.every((n) => n.created > newest) ? ready : undefined;
    }, { timeoutMs: 30_000, what: 'both hosts back as new ready nodes' });
    // Two servers create nodes through two store handles: the ids must still never repeat.
    assert.deepEqual(back.filter((n) => taken.some((t) => t.id === n.id)).map((n) => `${n.provider}:${n.id}`), [],
      'a new node took the id of a deleted one (node ids are never reused)');
  });

  it('kill -9 of the leader host: its session lapses, its pending request and the image lifecycle move to the survivor', async () => {
    const leading = await lockHolder(LEADER_LOCK);
    const leader = leading?.hostname as ServerName;
    assert.ok(leader in SERVERS, `leader is ${leader}`);
    const deadSession = (leading as { sessionId: string }).sessionId;
    const survivor: ServerName = leader === 'server-a' ? 'server-b' : 'server-a';
    const [lp, sp] = [SERVERS[leader], SERVERS[survivor]];

    // The leader's only slot goes in use; a second request preferring its provider waits on it.
    const busy = await cliIn(cli, cliConfig, ['request', 'common', '--wait', '--timeout', '60', '--provider', lp, '--json']);
    assert.equal(busy.code, 0, busy.stderr);
    const [held] = JSON.parse(busy.stdout) as NodeRecord[];
    assert.equal(held?.provider, lp);
    const waiting = cli.start('nodepool request --wait', process.execPath, [
      ...nodeScript('bin/nodepool.ts'), '-c', cliConfig, 'request', 'common', '--wait', '--timeout', '120', '--provider', lp, '--json',
    ], { cwd: process.cwd(), env: { ...process.env, NODEPOOL_CONFIG: '' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    waiting.child.stdout?.on('data', (d: Buffer) => { out += d.toString(); });
    waiting.child.stderr?.on('data', (d: Buffer) => { err += d.toString(); });
    const pending = await waitFor(async () => {
      const r = (await store.listRequests({ states: ['pending'] }))[0];
      return r && await holderOf(requestLock(r.id)) === leader ? r : undefined;
    }, { timeoutMs: 30_000, what: `the request pending under ${leader}'s lock` });
    assert.equal(pending.provider, lp);

    const killed = await net.host(leader).killAll();
    assert.ok(killed.includes((servers.get(leader) as TrackedProcess).pid), `the server process was among ${killed.join(', ')}`);
    const killedAt = Date.now();

    await waitFor(async () => !(await store.listLaunchers()).some((l) => l.provider === lp),
      { timeoutMs: 20_000, what: `${leader}'s launcher registration gone with its session` });
    const lapseMs = Date.now() - killedAt;
    await waitFor(async () => (await holderOf(LEADER_LOCK)) === survivor, { timeoutMs: 20_000, what: `the image lifecycle led by ${survivor}` });

    const { code } = await waiting.exited;
    assert.equal(code, 0, `the waiting CLI got its node: ${err}`);
    const [served] = JSON.parse(out) as NodeRecord[];
    assert.equal(served?.provider, sp, `the pending request was served by ${survivor}'s provider`);
    const servedMs = Date.now() - killedAt;
    process.stdout.write(`# ${leader} killed: registration gone after ${lapseMs} ms, its pending request served by ${survivor} after ${servedMs} ms\n`);
    assert.equal(await store.getLock(requestLock(pending.id)).then((l) => l?.live ?? false), false, 'no live lock on the served request');

    // The survivor's lifecycle serves a build request from the CLI host.
    const before = new Set((await store.listBuilds({ diskimage: 'd1' })).map((b) => b.id));
    assert.equal((await cliIn(cli, cliConfig, ['image-build', 'd1'])).code, 0);
    await waitFor(async () => (await store.listBuilds({ diskimage: 'd1', states: ['ready'] })).some((b) => !before.has(b.id)),
      { timeoutMs: 60_000, what: `a new d1 build, planned by ${survivor}` });

    // The dead host's server comes back: it takes its provider again and cleans up the crash.
    for (const n of [held, served]) assert.equal((await cliIn(cli, cliConfig, ['release', n.id])).code, 0);
    startServer(leader);
    await waitFor(async () => (await store.listLaunchers()).length === 2, { timeoutMs: 60_000, what: `${leader} registered again` });
    await waitFor(async () => {
      const nodes = await store.listNodes();
      return nodes.length === 2 && nodes.every((n) => n.state === 'ready' && n.allocatedTo === null);
    }, { timeoutMs: 60_000, what: 'both hosts ready again, nothing in use or used' });
    assert.deepEqual(await store.listRequests(), [], 'no request left');
    assert.equal(await store.getSession(deadSession), undefined, "the killed server's session is gone");
    assert.deepEqual((await store.listLocks()).filter((l) => l.sessionId === deadSession), [], "no lock of the killed server's session");
    assert.deepEqual(await store.listBuilds({ states: ['building'] }), [], 'no build stuck building');
    assert.equal(await holderOf(LEADER_LOCK), survivor, 'the lifecycle stays with the survivor');
  });
});
