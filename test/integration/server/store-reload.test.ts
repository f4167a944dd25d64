/**
 * nodepool-server as a process on ZooKeeper: a reload that changes the state store's settings
 * (here the chroot, so another tree on the same ensemble) restarts the services against the
 * new store; the old store loses the server's session. A reload to a store that cannot be
 * opened goes back to the running one and says so.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../../lib/config/load.js';
import { waitFor } from '../../../lib/lifecycle.js';
import { openStore } from '../../../lib/store/open-store.js';
import type { Store } from '../../../lib/store/store.js';
import { SERVER_HEARTBEAT_KEY } from '../../../lib/status/lifecycle-status.js';
import { LauncherSystem, type LauncherConfigParts } from '../../support/launcher-system.js';
import { freePort, runningProcesses, startProcess, type TrackedProcess } from '../../support/processes.js';
import { FreezeProxy, startZooKeeper, type ZooKeeperHandle } from '../../support/zookeeper.js';
import { nodeScript } from '../../support/node-command.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

describe('nodepool-server on ZooKeeper: a store change on reload', () => {
  let zk: ZooKeeperHandle;
  let sys: LauncherSystem;
  let server: TrackedProcess;
  let siteB: Store | undefined;
  const zkAt = (chroot: string, port = zk.port): Record<string, unknown> => ({
    'zookeeper-servers': [{ host: '127.0.0.1', port, chroot }], 'zookeeper-timeout': 2,
  });
  const logText = (): Promise<string> => readFile(path.join(sys.dir, 'store-server.log'), 'utf8');

  before(async () => {
    zk = await startZooKeeper();
    sys = await LauncherSystem.create({ labels: [], providers: [], extra: zkAt('/site-a') });
    server = startProcess('store-server', process.execPath, [
      ...nodeScript('bin/nodepool-server.ts'), '-c', sys.configPath, '--hostname', 'store-server', '--no-webapp', '--log-level', 'debug',
    ], { cwd: ROOT, logFile: path.join(sys.dir, 'store-server.log'), env: { ...process.env, NODEPOOL_CONFIG: '' } });
    await waitFor(async () => {
      if (!server.alive()) throw new Error(`nodepool-server exited; see ${sys.dir}/store-server.log`);
      return (await sys.store.getStatus(SERVER_HEARTBEAT_KEY)) !== undefined;
    }, { timeoutMs: 30_000, what: 'the server heartbeat in /site-a' });
  });

  after(async () => {
    await server?.stop();
    await siteB?.close();
    await sys?.stop();
    await zk?.stop();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  it('names its store in the start line, and a changed webapp address by what it serves and what is configured', async () => {
    // The heartbeat can be in the store before the test's copy of the server's output reaches
    // its log file (seen under load: the file still empty), so the start line is waited for.
    const started = await waitFor(async () => (await logText()).split('\n').find((l) => l.includes('nodepool-server started')), {
      timeoutMs: 10_000, what: 'the start line in the server\'s log',
    });
    assert.match(started, new RegExp(`nodepool-server started.*store=zookeeper 127\\.0\\.0\\.1:${zk.port}/site-a`));
    const port = await freePort();
    await sys.rewrite((parts) => ({ ...parts, extra: { ...zkAt('/site-a'), webapp: { port } } }));
    const line = await waitFor(async () => (await logText()).split('\n').find((l) => l.includes('webapp address changed')), {
      timeoutMs: 10_000, what: 'the webapp address warning',
    });
    // This server runs with --no-webapp: it serves nothing, and says so rather than naming a port.
    assert.match(line, /serving=nothing \(the web status is not served\)/);
    assert.match(line, new RegExp(`configured=127\\.0\\.0\\.1:${port}`));
    await sys.rewrite((parts) => ({ ...parts, extra: zkAt('/site-a') }));
  });

  it('restarts its services against the new chroot, and the old one loses its session', async () => {
    const liveIn = async (store: Store): Promise<number> => {
      let n = 0;
      for (const s of await store.listSessions()) if (s.owner.startsWith('nodepool-server') && await store.isSessionLive(s.id)) n++;
      return n;
    };
    assert.equal(await liveIn(sys.store), 1, 'the server holds one session in /site-a');
    await sys.rewrite((parts) => ({ ...parts, extra: zkAt('/site-b') }));
    siteB = await openStore(loadConfig(sys.configPath));
    const store = siteB;
    await waitFor(async () => (await store.getStatus(SERVER_HEARTBEAT_KEY)) !== undefined, { timeoutMs: 30_000, what: 'the server heartbeat in /site-b' });
    assert.equal(await liveIn(store), 1, 'the server holds one session in /site-b');
    await waitFor(async () => (await liveIn(sys.store)) === 0, { timeoutMs: 10_000, what: 'no live server session left in /site-a' });
    assert.ok(server.alive());
    assert.match(await logText(), /state store settings changed: restarting the services against the new store/);
  });

  it('starts the new store\'s services with a reload that came during the restart, not the config that started it', async () => {
    // The new store is reached through a proxy that refuses connections until thawed, so the restart waits in the open.
    const proxy = await FreezeProxy.start(zk.port);
    const count = async (text: string): Promise<number> => (await logText()).split(text).length - 1;
    const restarts = await count('restarting the services against the new store');
    const reloads = await count('config reloaded');
    const withInterval = (interval: number) => (parts: LauncherConfigParts): LauncherConfigParts => ({
      ...parts, extra: { ...zkAt('/site-d', proxy.port), 'image-lifecycle': { interval } },
    });
    const running = loadConfig(sys.configPath);
    const siteD = await openStore({ ...running, zookeeperServers: running.zookeeperServers.map((s) => ({ ...s, chroot: '/site-d' })) });
    try {
      proxy.freeze();
      await sys.rewrite(withInterval(7));
      await waitFor(async () => (await count('restarting the services against the new store')) > restarts, { timeoutMs: 20_000, what: 'the restart against /site-d begun' });
      // While the new store is being opened: another reload, at once (SIGHUP, not the file watch's debounce).
      await sys.rewrite(withInterval(9));
      process.kill(server.pid, 'SIGHUP');
      // Taken three times while the restart waits: the first file change, the SIGHUP, and the second file change (debounced).
      await waitFor(async () => (await count('config reloaded')) >= reloads + 3, { timeoutMs: 10_000, what: 'both reloads taken' });
      proxy.thaw();
      await waitFor(async () => (await siteD.getStatus(SERVER_HEARTBEAT_KEY)) !== undefined, { timeoutMs: 30_000, what: 'the server heartbeat in /site-d' });
      // The heartbeat carries the lifecycle interval of the config the services run with.
      await waitFor(async () => ((await siteD.getStatus(SERVER_HEARTBEAT_KEY))?.value as { interval?: number } | undefined)?.interval === 9, {
        timeoutMs: 20_000, what: 'the services in /site-d running with the newest config (interval 9)',
      });
      assert.ok(server.alive());
      // The next test expects the server on /site-b.
      await sys.rewrite((parts) => ({ ...parts, extra: zkAt('/site-b') }));
      const b = siteB as Store;
      const since = Date.now();
      await waitFor(async () => ((await b.getStatus(SERVER_HEARTBEAT_KEY))?.updated ?? 0) > since, { timeoutMs: 30_000, what: 'heartbeats in /site-b again' });
    } finally {
      await siteD.close();
      await proxy.close();
    }
  });

  it('goes back to the running store when the new one cannot be opened', async () => {
    const store = siteB as Store;
    const nobody = await freePort();
    await sys.rewrite((parts) => ({ ...parts, extra: zkAt('/site-c', nobody) }));
    await waitFor(async () => /going back to the running one/.test(await logText()), { timeoutMs: 40_000, what: 'the refusal logged' });
    const before = (await store.getStatus(SERVER_HEARTBEAT_KEY))?.updated ?? 0;
    await waitFor(async () => ((await store.getStatus(SERVER_HEARTBEAT_KEY))?.updated ?? 0) > before, { timeoutMs: 20_000, what: 'heartbeats in /site-b again' });
    assert.ok(server.alive());
  });
});
