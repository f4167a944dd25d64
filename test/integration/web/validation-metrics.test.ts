/**
 * Validation in the server's metrics, read from a real SQLite store: Prometheus counts uploads
 * per state with `validating` among them and counts validation outcomes from the records it
 * scrapes; statsd sends the same as upload gauges and counters. The records are written
 * directly, as the validator leaves them: this tests the metrics, not the validator.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import yaml from 'js-yaml';
import { loadConfig } from '../../../lib/config/load.js';
import type { Config } from '../../../lib/config/schema.js';
import { waitFor } from '../../../lib/lifecycle.js';
import { StatsdClient } from '../../../lib/metrics/statsd-client.js';
import { openStore } from '../../../lib/store/open-store.js';
import type { Store } from '../../../lib/store/store.js';
import { PrometheusMetrics } from '../../../server/metrics/prometheus-metrics.js';
import { StatsdReporter } from '../../../server/metrics/statsd-reporter.js';
import { testLogger } from '../../support/test-log.js';
import { sample, StatsdListener } from './web-helpers.js';

describe('metrics of validating uploads and validation outcomes', () => {
  let env: { dir: string; config: Config };
  let store: Store;
  let statsd: StatsdListener;
  let reporter: StatsdReporter | undefined;
  let buildId: string;

  before(async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-validation-metrics-'));
    const configPath = path.join(dir, 'nodepool.yaml');
    await writeFile(configPath, yaml.dump({
      'state-dir': path.join(dir, 'state'), labels: [{ name: 'small' }], diskimages: [{ name: 'deb' }],
      providers: [
        { name: 'cloud-a', driver: 'openstack', cloud: 'loopback', diskimages: [{ name: 'deb' }] },
        {
          name: 'vms', driver: 'qemu', 'image-dir': path.join(dir, 'vm-images'),
          diskimages: [{ name: 'deb', validate: {} }], pools: [{ name: 'main', labels: [{ name: 'small', diskimage: 'deb' }] }],
        },
      ],
    }));
    env = { dir, config: loadConfig(configPath) };
    store = await openStore(env.config);
    const build = await store.createBuild({ diskimage: 'deb', formats: ['qcow2'] });
    buildId = build.id;
    await store.updateBuild(build.id, { state: 'ready' });
    statsd = await StatsdListener.start();
  });

  after(async () => {
    await reporter?.stop();
    await statsd?.close();
    await store?.close();
    if (env) await rm(env.dir, { recursive: true, force: true });
  });

  async function uploadIn(provider: string, state: 'validating' | 'ready', reason?: string): Promise<string> {
    const u = await store.createUpload({ buildId, provider, imageName: 'deb', externalName: null });
    await store.updateUpload(u.id, { state, ...(reason ? { reason } : {}) });
    return u.id;
  }

  it('Prometheus: uploads per state include validating; outcomes are counted once each', async () => {
    const validating = await uploadIn('vms', 'validating');
    await uploadIn('cloud-a', 'ready');
    // Each render below must read the store anew: no reuse of the last exposition (the web's 1 s reuse is tested in web-paths and the scrape storm).
    const metrics = new PrometheusMetrics({ store, config: () => env.config, loops: () => [], reuseMs: 0 });
    reporter = new StatsdReporter({ client: new StatsdClient({ host: '127.0.0.1', port: statsd.port }), store, config: () => env.config, log: testLogger(), gaugeIntervalMs: 100 });
    reporter.start();
    const uploads = (text: string, provider: string, state: string): number | undefined => sample(text, 'nodepool_image_uploads', { provider, diskimage: 'deb', state });
    const validations = (text: string, result: string): number | undefined => sample(text, 'nodepool_upload_validations_total', { provider: 'vms', diskimage: 'deb', result });

    const first = await metrics.render();
    assert.equal(uploads(first, 'vms', 'validating'), 1);
    assert.equal(uploads(first, 'cloud-a', 'validating'), 0);
    assert.equal(uploads(first, 'cloud-a', 'ready'), 1);
    assert.deepEqual([validations(first, 'passed'), validations(first, 'failed')], [0, 0]);
    assert.equal(sample(first, 'nodepool_upload_validations_total', { provider: 'cloud-a', diskimage: 'deb', result: 'passed' }), undefined, 'no series for a target without validate:');
    await waitFor(() => statsd.of('nodepool.uploads.validating').includes('nodepool.uploads.validating:1|g'), { timeoutMs: 5000, what: 'statsd gauge of validating uploads' });
    assert.ok(statsd.lines.includes('nodepool.provider.vms.uploads.validating:1|g'));

    await store.updateUpload(validating, { state: 'ready' });
    // Failed between two scrapes, never seen validating: its reason says what failed.
    const failed = (await store.createUpload({ buildId, provider: 'vms', imageName: 'deb', externalName: null })).id;
    await store.updateUpload(failed, { state: 'failed', reason: 'validation: node 0000000003 did not answer SSH within 600 s\nconsole tail' });

    const second = await metrics.render();
    assert.deepEqual([uploads(second, 'vms', 'validating'), uploads(second, 'vms', 'ready'), uploads(second, 'vms', 'failed')], [0, 1, 1]);
    assert.deepEqual([validations(second, 'passed'), validations(second, 'failed')], [1, 1]);
    const third = await metrics.render();
    assert.deepEqual([validations(third, 'passed'), validations(third, 'failed')], [1, 1], 'not counted again');

    await waitFor(() => statsd.of('nodepool.image_validation.deb.vms.passed').length > 0 && statsd.of('nodepool.image_validation.deb.vms.failed').length > 0,
      { timeoutMs: 5000, what: 'statsd validation counters' });
    const rounds = statsd.of('nodepool.uploads.ready').length;
    await waitFor(() => statsd.of('nodepool.uploads.ready').length >= rounds + 3, { timeoutMs: 5000, what: 'three more gauge rounds' });
    assert.deepEqual(statsd.of('nodepool.image_validation.deb.vms.passed'), ['nodepool.image_validation.deb.vms.passed:1|c']);
    assert.deepEqual(statsd.of('nodepool.image_validation.deb.vms.failed'), ['nodepool.image_validation.deb.vms.failed:1|c']);
  });
});
