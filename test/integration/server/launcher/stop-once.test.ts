/**
 * Launcher.stop() is memoized: a second or concurrent call returns the same promise (bullmq's
 * `closing`), so a releaser and a signal handler stopping it together stop it once; on a real
 * SQLite store with a static provider.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os, { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseConfig } from '../../../../lib/config/load.js';
import { driverHosts } from '../../../../lib/drivers/core/driver-hosts.js';
import { silentLogger } from '../../../../lib/log.js';
import { SqliteStore } from '../../../../lib/store/sqlite/sqlite-store.js';
import { Launcher } from '../../../../server/launcher/launcher.js';

void describe('Launcher.stop', () => {
  let dir: string;
  let store: SqliteStore;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'stop-once-'));
    store = await SqliteStore.open(path.join(dir, 'nodepool.db'));
  });
  after(async () => {
    await store?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('returns the same promise to a second and a concurrent stop, and after it finished', async () => {
    const session = await store.openSession({ owner: 'stop-once-test', hostname: 'localhost', pid: process.pid, ttlMs: 600_000 });
    const config = parseConfig(['labels: [{name: small}]', 'providers:', '  - {name: lab, driver: static, pools: [{name: main}]}'].join('\n'), path.join(dir, 'nodepool.yaml'));
    const log = silentLogger();
    const hosts = driverHosts({ settings: () => config, env: {}, homeDir: os.homedir(), cwd: dir, log });
    const launcher = new Launcher({
      store, log, config: () => config, imageServices: hosts, sessionId: () => session.id, hostname: 'localhost', pid: process.pid,
    });
    await launcher.start();
    assert.deepEqual(launcher.providerNames, ['lab']);
    const first = launcher.stop();
    const second = launcher.stop();
    assert.equal(second, first, 'a concurrent stop gets the stop in progress');
    await first;
    assert.equal(launcher.stop(), first, 'a later stop gets the finished one');
    assert.deepEqual(launcher.providerNames, [], 'its provider was stopped');
    await hosts.close();
  });

  it('does nothing before start', async () => {
    const config = parseConfig(['labels: [{name: small}]', 'providers: []'].join('\n'), path.join(dir, 'nodepool.yaml'));
    const log = silentLogger();
    const launcher = new Launcher({
      store, log, config: () => config, imageServices: driverHosts({ settings: () => config, env: {}, homeDir: os.homedir(), cwd: dir, log }),
      sessionId: () => 'none', hostname: 'localhost', pid: process.pid,
    });
    await launcher.stop();
    assert.deepEqual(launcher.providerNames, []);
  });
});
