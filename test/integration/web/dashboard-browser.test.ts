/**
 * The former dashboard (`/dashboard`; the console serves `/`) in a real headless Chromium against a running nodepool-server (in-process)
 * with a builder, a Glance provider and a static host (real sshd): the page loads while the
 * first build runs, then shows — without being reloaded — the build ready, its upload, and the
 * static node taken in use by a consumer, with its address. A screenshot goes to the test
 * output directory (`NODEPOOL_TEST_OUTPUT`, default `.run/test-output`).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { loadConfig } from '../../../lib/config/load.js';
import { waitFor } from '../../../lib/lifecycle.js';
import { NodepoolServer } from '../../../server/main.js';
import type { DibBuilder } from '../../../workers/builder/dib-builder.js';
import { createBuilderEnv, fakeDiskimage, inProcessBuilder, loopbackProvider, type BuilderEnv } from '../../support/builder-env.js';
import { startGearmand, type GearmandHandle } from '../../support/gearmand.js';
import { testImageServices } from '../../support/image-services.js';
import { LauncherSystem } from '../../support/launcher-system.js';
import { useLoopbackCloud, type LoopbackCloud } from '../../support/openstack.js';
import { freePort } from '../../support/processes.js';
import { startSshd, type SshdHandle } from '../../support/sshd.js';
import { testLogger } from '../../support/test-log.js';
import { HeadlessChromium } from './chromium.js';
import { get } from './web-helpers.js';

const OUTPUT = process.env.NODEPOOL_TEST_OUTPUT ?? path.resolve('.run/test-output');

describe('the dashboard in headless Chromium', () => {
  const provider = `dash-${process.pid}`;
  let gearmand: GearmandHandle;
  let cloud: LoopbackCloud;
  let sshd: SshdHandle;
  let env: BuilderEnv;
  let builder: DibBuilder;
  let sys: LauncherSystem;
  let server: NodepoolServer;
  let browser: HeadlessChromium;
  let port: number;

  before(async () => {
    [gearmand, cloud, sshd] = await Promise.all([startGearmand(), useLoopbackCloud(), startSshd()]);
    const diskimages = [fakeDiskimage('deb', { formats: ['qcow2'] }, { FAKE_DIB_DELAY: '1' })];
    const glance = loopbackProvider(provider, ['deb']);
    env = await createBuilderEnv({ name: 'dashboard', gearmanPort: gearmand.port, cloud, diskimages, providers: [glance] });
    builder = inProcessBuilder(env, { hostname: 'builder-dash' });
    await builder.start();
    sys = await LauncherSystem.create({
      labels: [{ name: 'small' }],
      providers: [glance, {
        name: 'hosts', driver: 'static',
        pools: [{ name: 'main', nodes: [{ name: sshd.host, 'connection-port': sshd.port, labels: ['small'], 'host-key': sshd.hostKey('ed25519'), timeout: 2 }] }],
      }],
      extra: {
        'gearman-servers': [{ host: '127.0.0.1', port: gearmand.port }], 'clouds-file': cloud.cloudsYamlPath, diskimages,
        // The cloud may be shared with other test files: no leak check of its images from here.
        'image-lifecycle': { interval: 1, 'leak-check-interval': 0 },
      },
    });
    port = await freePort();
    const config = loadConfig(sys.configPath);
    const log = testLogger();
    server = await NodepoolServer.create({
      config: { ...config, webapp: { ...config.webapp, port, listenAddress: '127.0.0.1' } }, log, hostname: 'dash-server',
      imageServices: testImageServices(() => config.cloudsFile, log), webapp: true,
    });
    browser = await HeadlessChromium.start();
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
    await sys?.stop();
    await builder?.stop({ abortAfterMs: 1000 });
    await env?.remove();
    await sshd?.stop();
    await gearmand?.stop();
    await cloud?.stop();
  });

  it('shows the build, its upload and a node with its address as they appear, refreshing by itself', async () => {
    const html = await get(port, '/dashboard');
    assert.equal(html.headers.get('content-type'), 'text/html; charset=utf-8');
    const tab = await browser.open(`http://127.0.0.1:${port}/dashboard`);
    const text = (): Promise<string> => browser.evaluate<string>(tab, 'document.body.innerText');
    const first = await waitFor(async () => {
      const t = await text();
      return /deb-0000000001/.test(t) ? t : undefined;
    }, { timeoutMs: 20_000, what: 'the build id on the dashboard', intervalMs: 200 });
    assert.match(first, /Images: builds/);

    const client = await sys.client('dashboard-consumer');
    const [node] = await client.requestNodes(['small'], { timeoutMs: 30_000 });
    assert.ok(node);
    const later = await waitFor(async () => {
      const t = await text();
      const buildReady = /deb-0000000001\tdeb\tready/.test(t);
      const uploaded = new RegExp(`deb-0000000001\\t${provider}\\tready`).test(t);
      // Server ID is empty for a static host; its address is the host's.
      const inUse = new RegExp(`${node.id}\\thosts\\tsmall\\t\\t${sshd.host.replaceAll('.', '\\.')}\\tin-use`).test(t);
      return buildReady && uploaded && inUse ? t : undefined;
    }, { timeoutMs: 60_000, what: 'the ready build, its upload and the in-use node with its address on the dashboard', intervalMs: 250 });
    assert.match(later, /all loops pass/);
    assert.match(later, /hosts\tsmall\tin-use 1/);

    await mkdir(OUTPUT, { recursive: true });
    const png = await browser.screenshot(tab);
    assert.deepEqual([...png.subarray(1, 4)], [...Buffer.from('PNG')]);
    await writeFile(path.join(OUTPUT, 'dashboard.png'), png);
  });
});
