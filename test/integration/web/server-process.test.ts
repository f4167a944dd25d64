/**
 * bin/nodepool-server.ts as a process: the web status on `webapp:` (and not with
 * `--no-webapp`), statsd from `STATSD_HOST`/`STATSD_PORT`, and `/health/ready` going 503
 * while the state-dir's file system (a small tmpfs) is full, so the min-ready loop's store
 * writes fail for real, and 200 once space returns.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { waitFor } from '../../../lib/lifecycle.js';
import { SERVER_HEARTBEAT_KEY } from '../../../lib/status/lifecycle-status.js';
import type { ServerHeartbeat } from '../../../lib/status/server.js';
import { LauncherSystem } from '../../support/launcher-system.js';
import { freePort, portOpen, runningProcesses, startProcess, type TrackedProcess } from '../../support/processes.js';
import { get, StatsdListener } from './web-helpers.js';
import { nodeScript } from '../../support/node-command.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const exec = promisify(execFile);

function serverProcess(sys: LauncherSystem, name: string, args: string[], env: Record<string, string> = {}): TrackedProcess {
  return startProcess(name, process.execPath, [
    ...nodeScript('bin/nodepool-server.ts'), '-c', sys.configPath, '--hostname', name, '--log-level', 'debug', ...args,
  ], { cwd: ROOT, logFile: path.join(sys.dir, `${name}.log`), env: { ...process.env, NODEPOOL_CONFIG: '', ...env } });
}

describe('nodepool-server process: web status, health and statsd', () => {
  let sys: LauncherSystem;
  let statsd: StatsdListener;
  let port: number;
  let server: TrackedProcess;
  let stateDir: string | undefined;
  let mounted = false;

  before(async () => {
    port = await freePort();
    statsd = await StatsdListener.start();
    stateDir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-web-state-'));
    await exec('mount', ['-t', 'tmpfs', '-o', 'size=16m', 'nodepool-web-state', stateDir]);
    mounted = true;
    sys = await LauncherSystem.create({
      // min-ready makes the min-ready loop write (its store lock) at every pass.
      labels: [{ name: 'small', 'min-ready': 1 }],
      providers: [],
      extra: { webapp: { port, 'listen-address': '127.0.0.1' }, 'state-dir': stateDir },
    });
    server = serverProcess(sys, 'web-server', [], { STATSD_HOST: '127.0.0.1', STATSD_PORT: String(statsd.port) });
    await waitFor(async () => {
      if (!server.alive()) throw new Error(`nodepool-server exited; see ${sys.dir}/web-server.log`);
      return (await get(port, '/ready').catch(() => undefined))?.status === 200;
    }, { timeoutMs: 30_000, what: 'nodepool-server /ready 200', intervalMs: 100 });
  });

  after(async () => {
    await server?.stop();
    await sys?.stop();
    if (mounted && stateDir) await exec('umount', [stateDir]);
    if (stateDir) await rm(stateDir, { recursive: true, force: true });
    await statsd?.close();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  it('sends statsd gauges to STATSD_HOST:STATSD_PORT', async () => {
    await waitFor(() => statsd.lines.includes('nodepool.nodes.ready:0|g'), { timeoutMs: 15_000, what: 'a node gauge over UDP', intervalMs: 50 });
    assert.ok(statsd.lines.includes('nodepool.label.small.nodes.building:0|g'));
  });

  it('answers /health/ready 503 naming the failing loop while the state disk is full, and 200 after', async () => {
    assert.equal((await get(port, '/health/ready')).status, 200);
    const filler = path.join(stateDir as string, 'filler');
    await exec('dd', ['if=/dev/zero', `of=${filler}`, 'bs=64k', 'status=none']).catch(() => undefined); // ends with ENOSPC
    try {
      const failing = await waitFor(async () => {
        const r = await get(port, '/health/ready').catch(() => undefined);
        return r?.status === 503 && /^min-ready: /m.test(r.body) ? r : undefined;
      }, { timeoutMs: 30_000, what: '/health/ready 503 for the min-ready loop', intervalMs: 100 });
      assert.match(failing.body, /^min-ready: \d+ failed pass(es)? in a row \(last: .*(full|not live).*\)$/m);
      const json = JSON.parse((await get(port, '/health/ready', 'application/json')).body) as { ready: boolean; failing: Array<{ loop: string; lastError: string }> };
      assert.equal(json.ready, false);
      assert.ok(json.failing.some((f) => f.loop === 'min-ready'), JSON.stringify(json.failing));
      assert.equal((await get(port, '/health/live')).status, 200, 'the process still answers');
      assert.match((await get(port, '/metrics')).body, /^nodepool_loop_failures\{loop="min-ready"\} [1-9]\d*$/m);
    } finally {
      await rm(filler, { force: true });
    }
    const healthy = await waitFor(async () => {
      const r = await get(port, '/health/ready').catch(() => undefined);
      return r?.status === 200 ? r : undefined;
    }, { timeoutMs: 60_000, what: '/health/ready 200 once space returns', intervalMs: 200 });
    assert.equal(healthy.body, 'ok\n');
  });

  it('serves no web status with --no-webapp, and refuses a STATSD_PORT that is not a port', async () => {
    await server.stop();
    const quiet = serverProcess(sys, 'quiet', ['--no-webapp']);
    try {
      await waitFor(async () => (await sys.store.getStatus<ServerHeartbeat>(SERVER_HEARTBEAT_KEY))?.value.hostname === 'quiet',
        { timeoutMs: 30_000, what: 'the --no-webapp server to write its heartbeat', intervalMs: 100 });
      assert.equal(await portOpen(port), false);
    } finally {
      await quiet.stop();
    }
    const bad = serverProcess(sys, 'bad-statsd', [], { STATSD_HOST: '127.0.0.1', STATSD_PORT: 'eighty' });
    const exit = await bad.exited;
    assert.equal(exit.code, 2);
  });
});
