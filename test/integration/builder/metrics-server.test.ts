/**
 * bin/nodepool-builder.ts with `--metrics-port`: Prometheus /metrics (workers, running jobs,
 * images held, free space in images-dir, process metrics) and /health/live on
 * webapp.listen-address (`/metrics/` as `/metrics`, as on the server), closed on SIGTERM; a bad
 * or busy port is a usage error (exit 2).
 * (What the counters do during a build is covered with an in-process builder in test/integration/web/web-status.test.ts.)
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { waitFor } from '../../../lib/lifecycle.js';
import { createBuilderEnv, fakeDiskimage, type BuilderEnv } from '../../support/builder-env.js';
import { startGearmand, type GearmandHandle } from '../../support/gearmand.js';
import { freePort, portOpen, runningProcesses, startProcess, type TrackedProcess } from '../../support/processes.js';
import { call, get, sample } from '../web/web-helpers.js';
import { nodeScript } from '../../support/node-command.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

function builder(env: BuilderEnv, args: string[], name = 'nodepool-builder'): TrackedProcess {
  return startProcess(name, process.execPath, [
    ...nodeScript('bin/nodepool-builder.ts'), '-c', env.configPath, '--hostname', 'builder-m', '--log-level', 'debug', ...args,
  ], { cwd: ROOT, logFile: path.join(env.dir, `${name}.log`), env: { ...process.env, NODEPOOL_CONFIG: '' } });
}

describe('nodepool-builder --metrics-port', () => {
  let gearmand: GearmandHandle;
  let env: BuilderEnv;

  before(async () => {
    gearmand = await startGearmand();
    env = await createBuilderEnv({ name: 'metrics', gearmanPort: gearmand.port, diskimages: [fakeDiskimage('deb')] });
  });

  after(async () => {
    await env?.remove();
    await gearmand?.stop();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  it('serves /metrics and /health/live until it stops', async () => {
    const port = await freePort();
    const p = builder(env, ['--metrics-port', String(port), '--build-workers', '2', '--upload-workers', '3']);
    try {
      await waitFor(async () => {
        if (!p.alive()) throw new Error(`nodepool-builder exited; see ${env.dir}/nodepool-builder.log`);
        return (await get(port, '/health/live').catch(() => undefined))?.status === 200;
      }, { timeoutMs: 30_000, what: 'the builder metrics port', intervalMs: 100 });
      const m = await get(port, '/metrics');
      assert.equal(m.status, 200);
      assert.match(m.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
      assert.equal(sample(m.body, 'nodepool_builder_workers', { kind: 'build' }), 2);
      assert.equal(sample(m.body, 'nodepool_builder_workers', { kind: 'upload' }), 3);
      assert.equal(sample(m.body, 'nodepool_builder_builds'), 0);
      assert.equal(sample(m.body, 'nodepool_builder_uploads'), 0);
      assert.equal(sample(m.body, 'nodepool_builder_images'), 0);
      assert.ok((sample(m.body, 'nodepool_builder_images_dir_free_bytes') ?? 0) > 0);
      assert.ok(sample(m.body, 'nodejs_eventloop_lag_seconds') !== undefined);
      assert.equal((await get(port, '/')).status, 404);
      // Paths read as on the server's web status: a trailing slash or a doubled one changes nothing.
      for (const variant of ['/metrics/', '//metrics']) {
        const v = await get(port, variant);
        assert.equal(v.status, 200, variant);
        assert.equal(sample(v.body, 'nodepool_builder_workers', { kind: 'build' }), 2, variant);
      }
      assert.equal((await get(port, '/health/live/')).status, 200);
      assert.equal((await call(port, '/metrics', { method: 'DELETE' })).status, 405);
    } finally {
      await p.stop();
    }
    assert.equal((await p.exited).code, 0);
    assert.equal(await portOpen(port), false);
  });

  it('exits 2 when --metrics-port is not a port or is taken', async () => {
    const bad = builder(env, ['--metrics-port', 'http'], 'bad-port');
    assert.equal((await bad.exited).code, 2);
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    try {
      const busy = builder(env, ['--metrics-port', String((taken.address() as net.AddressInfo).port)], 'busy-port');
      assert.equal((await busy.exited).code, 2);
    } finally {
      await new Promise<void>((resolve) => taken.close(() => resolve()));
    }
  });
});
