/**
 * A stuck loop does not look healthy: the web status (real node:http server, SQLite store)
 * of two real PeriodicLoops, one whose pass hangs past its bound while the other keeps
 * passing. `/health/ready` turns 503 naming the hung loop and how long its pass has run,
 * `/dashboard.json` lists it, and once the pass ends it is ready again.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../../lib/config/load.js';
import { waitFor } from '../../../lib/lifecycle.js';
import { PeriodicLoop } from '../../../lib/periodic-loop.js';
import { WebServer } from '../../../server/web/web-server.js';
import { LauncherSystem } from '../../support/launcher-system.js';
import { testLogger } from '../../support/test-log.js';
import { get } from './web-helpers.js';

describe('web status of a loop whose pass hangs', () => {
  let sys: LauncherSystem;
  let web: WebServer;
  let hung: PeriodicLoop;
  let fine: PeriodicLoop;
  let release: (() => void) | undefined;
  let finePasses = 0;

  before(async () => {
    sys = await LauncherSystem.create({ labels: [], providers: [] });
    const log = testLogger();
    let calls = 0;
    hung = new PeriodicLoop({
      name: 'deleter', log, intervalMs: () => 50, passDeadlineMs: () => 2000,
      pass: async () => {
        calls += 1;
        // The second pass hangs on a store read that never answers, as on a wedged connection.
        if (calls === 2) await new Promise<void>((r) => { release = r; });
        await sys.store.listNodes();
      },
    });
    fine = new PeriodicLoop({
      name: 'cleanup', log, intervalMs: () => 50,
      pass: async () => {
        finePasses += 1;
        await sys.store.listNodes();
      },
    });
    const config = loadConfig(sys.configPath);
    web = await WebServer.start({
      host: '127.0.0.1', port: 0, log, started: () => true, loops: () => [hung.health, fine.health],
      status: { store: sys.store, config: () => config, clock: Date.now },
    });
    hung.start();
    fine.start();
  });

  after(async () => {
    release?.();
    await hung?.stop();
    await fine?.stop();
    await web?.stop();
    await sys?.stop();
  });

  it('answers 503 naming the stuck loop while its pass runs past its bound, and 200 once it ends', async () => {
    await waitFor(() => release !== undefined, { timeoutMs: 5000, what: 'the deleter pass to hang', intervalMs: 10 });
    const within = await get(web.port, '/health/ready');
    // (Checked only when the answer came within the bound: a loaded machine may answer late.)
    if (Date.now() - (hung.health.runningSince ?? 0) < 1500) assert.deepEqual([within.status, within.body], [200, 'ok\n'], 'a pass within its bound is only busy');
    const stuck = await waitFor(async () => {
      const r = await get(web.port, '/health/ready');
      return r.status === 503 ? r : undefined;
    }, { timeoutMs: 10_000, what: '/health/ready 503 for the hung deleter', intervalMs: 50 });
    assert.match(stuck.body, /^deleter: pass running for 00:00:00:\d\d, past its bound of 00:00:00:02\n$/);
    const before = finePasses;
    await waitFor(() => finePasses >= before + 3, { timeoutMs: 5000, what: 'more cleanup passes', intervalMs: 20 });
    const json = JSON.parse((await get(web.port, '/health/ready', 'application/json')).body) as {
      ready: boolean; stuck: Array<{ loop: string; runningMs: number; deadlineMs: number }>; failing: unknown[];
    };
    assert.equal(json.ready, false);
    assert.deepEqual(json.stuck.map((s) => [s.loop, s.deadlineMs]), [['deleter', 2000]], "the cleanup loop's passes do not make the deleter look fresh");
    assert.ok((json.stuck[0]?.runningMs ?? 0) > 2000);
    assert.deepEqual(json.failing, []);
    const dash = JSON.parse((await get(web.port, '/dashboard.json')).body) as { ready: boolean; stuck: Array<{ loop: string }> };
    assert.deepEqual([dash.ready, dash.stuck.map((s) => s.loop)], [false, ['deleter']]);
    (release as () => void)();
    const healthy = await waitFor(async () => {
      const r = await get(web.port, '/health/ready');
      return r.status === 200 ? r : undefined;
    }, { timeoutMs: 5000, what: '/health/ready 200 once the pass ends', intervalMs: 50 });
    assert.equal(healthy.body, 'ok\n');
  });
});
