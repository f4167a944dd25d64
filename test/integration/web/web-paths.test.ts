/**
 * How the web status reads request paths, on a real node:http server over a SQLite store:
 * `//image-list` is the image list (not the dashboard), `/metrics/` is `/metrics` (as on the
 * builder's port), and the README's `?fields=id,state` keeps the id and state columns of
 * our `/api` lists whose id column has a longer name (`Upload ID`, `Request ID`), and of
 * Nodepool's lists by its keys (`id` is `Build ID` in its image list).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../../lib/config/load.js';
import { PrometheusMetrics } from '../../../server/metrics/prometheus-metrics.js';
import { WebServer } from '../../../server/web/web-server.js';
import { LauncherSystem } from '../../support/launcher-system.js';
import { testLogger } from '../../support/test-log.js';
import { get } from './web-helpers.js';

describe('web status paths', () => {
  let sys: LauncherSystem;
  let web: WebServer;
  let requestId: string;

  before(async () => {
    sys = await LauncherSystem.create({ labels: [{ name: 'small' }], providers: [] });
    requestId = (await sys.store.createRequest({ labels: ['small'], requestor: 'paths-test' })).id;
    const config = loadConfig(sys.configPath);
    const metrics = new PrometheusMetrics({ store: sys.store, config: () => config, loops: () => [] });
    web = await WebServer.start({
      host: '127.0.0.1', port: 0, log: testLogger(), started: () => true, loops: () => [],
      status: { store: sys.store, config: () => config, clock: Date.now },
      metrics: { contentType: metrics.contentType, render: () => metrics.render() },
    });
  });

  after(async () => {
    await web?.stop();
    await sys?.stop();
  });

  it('answers //image-list with the image list, not the dashboard', async () => {
    const doubled = await get(web.port, '//image-list');
    const plain = await get(web.port, '/image-list');
    assert.equal(doubled.status, 200);
    assert.match(doubled.headers.get('content-type') ?? '', /^text\/plain/);
    assert.equal(doubled.body, plain.body);
    assert.match(doubled.body, /Upload ID/);
    assert.equal((await get(web.port, '//request-list.json')).status, 200);
    assert.equal((await get(web.port, '//nothing')).status, 404);
  });

  it('answers /metrics/ as /metrics', async () => {
    const slash = await get(web.port, '/metrics/');
    assert.equal(slash.status, 200);
    assert.match(slash.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    assert.match(slash.body, /^nodepool_requests\{state="requested"\} 1$/m);
  });

  it("keeps the id and state columns with the README's ?fields=id,state", async () => {
    const requests = await get(web.port, '/api/request-list?fields=id,state');
    assert.equal(requests.status, 200, requests.body);
    const lines = requests.body.trim().split('\n');
    assert.match(lines.join('\n'), /Request ID\s*\|\s*State/);
    assert.ok(lines.some((l) => l.includes(requestId) && l.includes('requested')), requests.body);
    assert.ok(!requests.body.includes('paths-test'), 'the requestor column is left out');
    const uploads = await get(web.port, '/api/image-list?fields=id,state');
    assert.equal(uploads.status, 200, uploads.body);
    assert.match(uploads.body, /Upload ID\s*\|\s*State/);
    const builds = await get(web.port, '/api/dib-image-list?fields=id,state');
    assert.equal(builds.status, 200, builds.body);
    const bad = await get(web.port, '/api/image-list?fields=id,colour');
    assert.equal(bad.status, 400);
    assert.match(bad.body, /unknown field "colour"; the fields are: buildid, uploadid, .* \(id: uploadid\)/);
    // Nodepool's lists: its keys, an unknown one ignored.
    const nodepoolRequests = await get(web.port, '/request-list?fields=id,state,colour');
    assert.equal(nodepoolRequests.status, 200, nodepoolRequests.body);
    assert.ok(nodepoolRequests.body.split('\n').some((l) => l.includes(requestId) && l.includes('requested')), nodepoolRequests.body);
    assert.match(nodepoolRequests.body, /^\| Request ID +\| State +\|$/m);
    assert.match((await get(web.port, '/image-list?fields=id,state')).body, /^\| Build ID \| State \|$/m);
  });
});
