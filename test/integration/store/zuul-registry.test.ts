/**
 * What Zuul sees of a running nodepool-server through ZooKeeper alone: Debian's python3-kazoo
 * running test/fixtures/zuul_consumer.py --list-launchers lists the launchers and their labels
 * from `/nodepool/components/pool` as Zuul's getRegisteredLaunchers does, the launcher
 * component, and every node field Zuul reads. Real ZooKeeper, real sshd static hosts, the
 * server as a process (its component registry wired in server/main.ts).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { waitFor } from '../../../lib/lifecycle.js';
import type { ZooKeeperStore } from '../../../lib/store/zookeeper/zookeeper-store.js';
import { LauncherSystem } from '../../support/launcher-system.js';
import { runningProcesses, startProcess, stopAllProcesses } from '../../support/processes.js';
import { startSshd, type SshdHandle } from '../../support/sshd.js';
import { startZooKeeper, type ZooKeeperHandle } from '../../support/zookeeper.js';

const SYSTEM_PYTHON = '/usr/bin/python3';
const ZUUL_CONSUMER = path.resolve('test/fixtures/zuul_consumer.py');

interface Event { event: string; [key: string]: unknown }

/** Runs the consumer's read-only mode to its end (bounded) and returns its events. */
async function listFromZuul(hosts: string): Promise<Event[]> {
  const proc = startProcess('zuul-list', SYSTEM_PYTHON, [ZUUL_CONSUMER, '--hosts', hosts, '--list-launchers', '--timeout', '20'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const events: Event[] = [];
  let err = '';
  proc.child.stderr?.on('data', (d: Buffer) => { err += d.toString(); });
  if (proc.child.stdout) createInterface({ input: proc.child.stdout }).on('line', (line) => events.push(JSON.parse(line) as Event));
  const timer = setTimeout(() => void proc.stop(), 30_000);
  const { code } = await proc.exited;
  clearTimeout(timer);
  assert.equal(code, 0, `zuul_consumer.py --list-launchers exited ${String(code)}: ${err.slice(-2000)}`);
  return events;
}

void describe('Zuul lists nodepool-server\'s launchers, labels and node fields from ZooKeeper', () => {
  let zk: ZooKeeperHandle;
  let small: SshdHandle;
  let big: SshdHandle;
  let sys: LauncherSystem;
  const chroot = `/zuul-registry-${randomUUID().slice(0, 8)}`;

  before(async () => {
    [zk, small, big] = await Promise.all([startZooKeeper(), startSshd(), startSshd()]);
    sys = await LauncherSystem.create({
      labels: [{ name: 'small' }, { name: 'big' }],
      providers: [{
        name: 'static-hosts', driver: 'static',
        pools: [
          {
            name: 'main', 'node-attributes': { 'executor-zone': 'lab' },
            nodes: [{
              name: small.host, 'connection-port': small.port, labels: ['small'], 'host-key': small.hostKey('ed25519'), timeout: 2,
              'python-path': '/usr/bin/python3', 'shell-type': 'sh', username: 'ci',
            }],
          },
          { name: 'second', nodes: [{ name: big.host, 'connection-port': big.port, labels: ['big'], 'host-key': big.hostKey('ed25519'), timeout: 2 }] },
        ],
      }],
      extra: { 'zookeeper-servers': [{ host: zk.host, port: zk.port, chroot }], 'zookeeper-timeout': 5 },
    });
    // Its --hostname: components carry the short form (Python's socket.gethostname()).
    sys.startServerProcess('nl01.example.org');
    await sys.waitForNodes('both static hosts ready', (ns) => ns.filter((n) => n.state === 'ready').length === 2, 60_000);
    const store = sys.store as ZooKeeperStore;
    await waitFor(async () => (await store.listComponents('pool')).length === 2 && (await store.listComponents('launcher')).length === 1,
      { timeoutMs: 30_000, what: 'two pool components and one launcher component', intervalMs: 100 });
  });

  after(async () => {
    await sys?.stop();
    for (const s of [small, big]) await s?.stop();
    await zk?.stop();
    await stopAllProcesses();
    assert.deepEqual(runningProcesses().map((p) => p.name), [], 'no process left running');
  });

  it('lists one launcher per pool with its labels, the label union, and model_api 0 everywhere', async () => {
    const events = await listFromZuul(`${zk.connectString}${chroot}`);
    // The pool ids are the pool workers' launcher ids (the ones a request's declined_by names).
    const registered = new Map((await sys.store.listLaunchers()).map((l) => [l.pool, l.id]));
    const launchers = events.find((e) => e.event === 'launchers')?.launchers as Array<{ id: string; supported_labels: string[] }>;
    assert.deepEqual(
      [...launchers].sort((a, b) => a.supported_labels.join().localeCompare(b.supported_labels.join())),
      [{ id: registered.get('second'), supported_labels: ['big'] }, { id: registered.get('main'), supported_labels: ['small'] }],
    );
    assert.match(registered.get('main') ?? '', /-PoolWorker\.static-hosts-main$/);
    assert.deepEqual(events.find((e) => e.event === 'labels')?.labels, [{ name: 'big' }, { name: 'small' }]);
    const kinds = new Map(events.filter((e) => e.event === 'components').map((e) => [e.kind as string, e]));
    for (const kind of ['launcher', 'pool', 'builder']) assert.equal(kinds.get(kind)?.max_model_api, 0, kind);
    const [launcher, ...moreLaunchers] = kinds.get('launcher')?.entries as Array<{ name: string; ephemeral: boolean; data: Record<string, unknown> }>;
    assert.equal(moreLaunchers.length, 0);
    const host = 'nl01';
    assert.match(launcher?.name ?? '', new RegExp(`^${host}\\d{10}$`));
    assert.equal(launcher?.ephemeral, true);
    assert.deepEqual(Object.keys(launcher?.data ?? {}), ['hostname', 'kind', 'model_api', 'state', 'version']);
    assert.deepEqual([launcher?.data.hostname, launcher?.data.kind, launcher?.data.state], [host, 'launcher', 'running']);
    const pools = kinds.get('pool')?.entries as Array<{ data: Record<string, unknown> }>;
    for (const p of pools) {
      assert.equal(p.data.hostname, host);
      assert.deepEqual(Object.keys(p.data), ['hostname', 'id', 'kind', 'model_api', 'name', 'paused', 'priority', 'provider_name', 'state', 'supported_labels', 'version']);
      assert.equal(p.data.provider_name, 'static-hosts');
      assert.equal(p.data.paused, false);
      assert.equal(p.data.priority, 100);
    }
    assert.deepEqual(pools.map((p) => p.data.name).sort(), ['main', 'second']);
    assert.deepEqual(kinds.get('builder')?.entries, [], 'no image lifecycle here, so no builders');
  });

  it('reads every node field Zuul uses, with no field missing from the node JSON', async () => {
    const events = await listFromZuul(`${zk.connectString}${chroot}`);
    const nodes = events.filter((e) => e.event === 'node');
    assert.equal(nodes.length, 2);
    for (const n of nodes) assert.deepEqual(n.missing, [], `node ${String(n.id)} JSON has every field`);
    const fieldsOf = (label: string): Record<string, unknown> => {
      const n = nodes.find((e) => (e.fields as { type: string[] }).type.includes(label));
      assert.ok(n, `a node of ${label}`);
      return n.fields as Record<string, unknown>;
    };
    const s = fieldsOf('small');
    assert.equal(s.python_path, '/usr/bin/python3');
    assert.equal(s.shell_type, 'sh');
    assert.equal(s.username, 'ci');
    assert.equal(s.connection_type, 'ssh');
    assert.equal(s.connection_port, small.port);
    assert.equal(s.interface_ip, small.host);
    assert.equal(s.slot, 0);
    assert.deepEqual(s.attributes, { 'executor-zone': 'lab' });
    assert.ok(Array.isArray(s.host_keys) && s.host_keys.length > 0, 'host keys');
    assert.equal(s.provider, 'static-hosts');
    const b = fieldsOf('big');
    assert.equal(b.python_path, 'auto', "a host without python-path: Nodepool's default");
    assert.equal(b.shell_type, null);
    assert.equal(b.username, 'zuul');
    assert.equal(b.connection_port, big.port);
    for (const f of [s, b]) {
      for (const k of ['tenant_name', 'requestor', 'driver_data', 'user_data', 'hold_job', 'hold_expiration', 'comment', 'host_id', 'external_id']) {
        assert.equal(f[k], null, `${k} of a ready static node`);
      }
    }
  });
});
