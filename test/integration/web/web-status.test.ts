/**
 * The web status of an in-process nodepool-server with a real image system (gearmand, a
 * fake-dib builder, loopback Glance): every list endpoint at /api as text (the CLI's table) and
 * JSON, and in Nodepool's shape at its path, `fields`, 404/405/HEAD and caching headers, the
 * health endpoints, and /metrics, the builder's metrics port and statsd following a build and
 * its uploads.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../../lib/config/load.js';
import { waitFor } from '../../../lib/lifecycle.js';
import { dibImageList } from '../../../cli/commands/dib-image-list.js';
import { imageList } from '../../../cli/commands/image-list.js';
import { imageStatus } from '../../../cli/commands/image-status.js';
import { labelList } from '../../../cli/commands/label-list.js';
import { list } from '../../../cli/commands/list.js';
import { requestList } from '../../../cli/commands/request-list.js';
import { NodepoolServer } from '../../../server/main.js';
import { BuilderMetricsServer } from '../../../workers/builder/metrics-server.js';
import { fakeDiskimage, loopbackProvider } from '../../support/builder-env.js';
import { testImageServices } from '../../support/image-services.js';
import { ImageSystem } from '../../support/image-system.js';
import { freePort, runningProcesses } from '../../support/processes.js';
import { testLogger } from '../../support/test-log.js';
import { call, get, sample, StatsdListener, withoutAges } from './web-helpers.js';

describe('web status and metrics of nodepool-server with an image system', () => {
  let sys: ImageSystem;
  let server: NodepoolServer;
  let builderMetrics: BuilderMetricsServer;
  let statsd: StatsdListener;
  let port: number;
  let firstScrape = '';
  let firstBuilderScrape = '';

  before(async () => {
    sys = await ImageSystem.start({
      diskimages: [fakeDiskimage('deb', { formats: ['qcow2'] }, { FAKE_DIB_DELAY: '1' })],
      providers: [loopbackProvider('cloud-a', ['deb']), loopbackProvider('cloud-b', ['deb'], 'raw')],
    });
    const b = await sys.addBuilder('a');
    builderMetrics = await BuilderMetricsServer.start({
      builder: b.inProcess!, imagesDir: () => b.env.imagesDir, host: '127.0.0.1', port: 0, log: testLogger(),
    });
    firstBuilderScrape = (await get(builderMetrics.port, '/metrics')).body;
    statsd = await StatsdListener.start();
    port = await freePort();
    const config = loadConfig(sys.serverConfigPath);
    const log = testLogger();
    server = await NodepoolServer.create({
      config: { ...config, webapp: { ...config.webapp, port, listenAddress: '127.0.0.1' } }, log, hostname: 'test-server',
      imageServices: testImageServices(() => config.cloudsFile, log),
      webapp: true, statsd: { host: '127.0.0.1', port: statsd.port, gaugeIntervalMs: 200 },
    });
    sys.server = server;
    // Before the build (fake-dib takes a few seconds) has ended.
    firstScrape = (await get(port, '/metrics')).body;
  });

  after(async () => {
    await builderMetrics?.stop();
    await sys?.stop();
    await statsd?.close();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  it('answers /health/live, /ready and /health/ready once the providers have started', async () => {
    assert.equal(server.web?.port, port);
    const live = await get(port, '/health/live');
    assert.deepEqual([live.status, live.body], [200, 'ok\n']);
    const ready = await get(port, '/ready');
    assert.deepEqual([ready.status, ready.body], [200, 'OK']);
    const health = await get(port, '/health/ready');
    assert.deepEqual([health.status, health.body], [200, 'ok\n']);
    const json = JSON.parse((await get(port, '/health/ready', 'application/json')).body) as { ready: boolean; loops: Array<{ name: string }> };
    assert.equal(json.ready, true);
    assert.deepEqual(json.loops.map((l) => l.name).sort(), ['cleanup', 'deleter', 'fleet-ownership', 'image-lifecycle', 'min-ready']);
  });

  it('exports metrics that follow a build and its uploads', async () => {
    assert.equal(sample(firstScrape, 'nodepool_image_builds', { diskimage: 'deb', state: 'ready' }), 0);
    assert.equal(sample(firstScrape, 'nodepool_build_duration_seconds_count', { diskimage: 'deb', result: 'ready' }), undefined);
    assert.equal(sample(firstScrape, 'nodepool_image_uploads', { provider: 'cloud-a', diskimage: 'deb', state: 'ready' }), 0);
    assert.equal(sample(firstScrape, 'nodepool_requests', { state: 'requested' }), 0);
    assert.equal(sample(firstScrape, 'nodepool_loop_failures', { loop: 'image-lifecycle' }), 0);
    assert.ok(sample(firstScrape, 'process_cpu_user_seconds_total') !== undefined, 'process metrics are there');
    assert.match(firstScrape, /^# TYPE nodepool_build_duration_seconds histogram$/m);

    const { builds } = await sys.waitForState('build ready and uploaded to both providers', (s) =>
      s.builds.some((b) => b.state === 'ready') && s.uploads.filter((u) => u.state === 'ready').length === 2);
    const size = builds[0]?.files.find((f) => f.format === 'qcow2')?.size;
    assert.ok(size && size > 0);
    const m = await waitFor(async () => {
      const body = (await get(port, '/metrics')).body;
      return sample(body, 'nodepool_upload_duration_seconds_count', { provider: 'cloud-b', diskimage: 'deb', result: 'ready' }) === 1 ? body : undefined;
    }, { timeoutMs: 10_000, what: 'the uploads in /metrics', intervalMs: 100 });
    assert.equal(sample(m, 'nodepool_image_builds', { diskimage: 'deb', state: 'ready' }), 1);
    assert.equal(sample(m, 'nodepool_image_builds', { diskimage: 'deb', state: 'building' }), 0);
    assert.equal(sample(m, 'nodepool_build_duration_seconds_count', { diskimage: 'deb', result: 'ready' }), 1);
    assert.ok((sample(m, 'nodepool_build_duration_seconds_sum', { diskimage: 'deb', result: 'ready' }) ?? 0) >= 1, 'fake-dib slept 1 s per phase');
    assert.equal(sample(m, 'nodepool_image_uploads', { provider: 'cloud-a', diskimage: 'deb', state: 'ready' }), 1);
    assert.equal(sample(m, 'nodepool_upload_duration_seconds_count', { provider: 'cloud-a', diskimage: 'deb', result: 'ready' }), 1);
    assert.equal(sample(m, 'nodepool_upload_bytes_total', { provider: 'cloud-a' }), size);
    // cloud-b takes raw, converted by the builder at upload time: its size is not recorded.
    assert.equal(sample(m, 'nodepool_upload_bytes_total', { provider: 'cloud-b' }), undefined);

    assert.equal(sample(firstBuilderScrape, 'nodepool_builder_images'), 0);
    const bm = await waitFor(async () => {
      const body = (await get(builderMetrics.port, '/metrics')).body;
      return sample(body, 'nodepool_builder_uploads_total', { provider: 'cloud-b' }) === 1 ? body : undefined;
    }, { timeoutMs: 10_000, what: 'the builder metrics to count both uploads', intervalMs: 100 });
    assert.equal(sample(bm, 'nodepool_builder_builds_total', { diskimage: 'deb', result: 'ready' }), 1);
    assert.equal(sample(bm, 'nodepool_builder_uploads_total', { provider: 'cloud-a' }), 1);
    assert.equal(sample(bm, 'nodepool_builder_images'), 1);
    assert.equal(sample(bm, 'nodepool_builder_builds'), 0);
    assert.equal(sample(bm, 'nodepool_builder_workers', { kind: 'build' }), 1);
    assert.equal(sample(bm, 'nodepool_builder_workers', { kind: 'upload' }), 4);
    assert.ok((sample(bm, 'nodepool_builder_images_dir_free_bytes') ?? 0) > 0);
    assert.ok(sample(bm, 'process_resident_memory_bytes') !== undefined);
    assert.deepEqual([(await get(builderMetrics.port, '/health/live')).status, (await get(builderMetrics.port, '/nope')).status], [200, 404]);
    assert.equal((await call(builderMetrics.port, '/metrics', { method: 'POST' })).status, 405);
  });

  it("sends Nodepool's statsd metrics for the build, the uploads and the nodes", async () => {
    await waitFor(() => statsd.of('nodepool.image_update.deb.cloud-b').length === 2, { timeoutMs: 10_000, what: 'statsd upload metrics', intervalMs: 50 });
    assert.match(statsd.of('nodepool.dib_image_build.deb.status.duration')[0] ?? '', /^nodepool\.dib_image_build\.deb\.status\.duration:\d+\|ms$/);
    assert.deepEqual(statsd.of('nodepool.dib_image_build.deb.status.rc'), ['nodepool.dib_image_build.deb.status.rc:0|g']);
    const size = (await sys.store.listBuilds())[0]?.files[0]?.size;
    assert.deepEqual(statsd.of('nodepool.dib_image_build.deb.qcow2.size'), [`nodepool.dib_image_build.deb.qcow2.size:${size}|g`]);
    assert.match(statsd.of('nodepool.dib_image_build.deb.status.last_build')[0] ?? '', /:\d{10}\|g$/);
    const update = statsd.of('nodepool.image_update.deb.cloud-a');
    assert.equal(update.filter((l) => l.endsWith('|ms')).length, 1);
    assert.deepEqual(update.filter((l) => l.endsWith('|c')), ['nodepool.image_update.deb.cloud-a:1|c']);
    assert.ok(statsd.of('nodepool.nodes.ready').includes('nodepool.nodes.ready:0|g'));
    assert.ok(statsd.of('nodepool.provider.cloud-a.nodes.building').length > 0);
  });

  it("serves the CLI tables as text and the same JSON as --json at /api, Nodepool's at its paths", async () => {
    const configFile = sys.serverConfigPath;
    const pairs: Array<[string, Promise<{ stdout: string }>]> = [
      ['/api/image-list', imageList({ configFile })],
      ['/api/dib-image-list', dibImageList({ configFile })],
      ['/api/image-status', imageStatus({ configFile })],
      ['/api/node-list', list({ configFile, detail: true })],
      ['/api/request-list', requestList({ configFile })],
      ['/api/label-list', labelList({ configFile })],
    ];
    for (const [path, cli] of pairs) {
      const web = await get(port, path);
      assert.equal(web.status, 200, path);
      assert.equal(web.headers.get('content-type'), 'text/plain; charset=utf-8');
      assert.equal(withoutAges(web.body), withoutAges((await cli).stdout), `${path} is the CLI's table`);
    }
    const dib = await get(port, '/dib-image-list');
    assert.match(dib.body, /^\| deb-0000000001 \| deb {3}\| builder-a \| qcow2 {3}\| ready \| \d\d:\d\d:\d\d:\d\d \|$/m);
    const rows = JSON.parse((await get(port, '/dib-image-list', 'application/json')).body) as Array<{ id: string; builder: string; formats: string[]; state: string }>;
    assert.deepEqual(rows.map((r) => [r.id, r.builder, r.formats, r.state]), [['deb-0000000001', 'builder-a', ['qcow2'], 'ready']]);

    const suffix = await get(port, '/api/dib-image-list.json');
    assert.equal(suffix.headers.get('content-type'), 'application/json; charset=utf-8');
    const parsed = JSON.parse(suffix.body) as { builds: Array<{ id: string; state: string; age: number }>; diskimages: Array<{ diskimage: string }> };
    assert.deepEqual(parsed.builds.map((b) => [b.id, b.state, typeof b.age]), [['deb-0000000001', 'ready', 'number']]);
    assert.deepEqual(parsed.diskimages.map((d) => d.diskimage), ['deb']);
    const accept = JSON.parse((await get(port, '/api/dib-image-list', 'application/json')).body) as typeof parsed;
    assert.deepEqual(accept.builds.map((b) => b.id), ['deb-0000000001']);
    const uploads = JSON.parse((await get(port, '/api/image-list.json')).body) as { uploads: Array<{ provider: string; state: string }> };
    assert.deepEqual(uploads.uploads.map((u) => [u.provider, u.state]), [['cloud-a', 'ready'], ['cloud-b', 'ready']]);
    assert.deepEqual(JSON.parse((await get(port, '/api/node-list.json')).body), []);
    assert.deepEqual(JSON.parse((await get(port, '/api/node-list.json?node_id=0000000042')).body), []);
    assert.deepEqual(JSON.parse((await get(port, '/api/request-list.json')).body), []);
    for (const path of ['/node-list', '/node-list?node_id=0000000042', '/request-list']) assert.equal((await get(port, path, 'application/json')).body, '[]', path);
  });

  it('serves the console at /, the dashboard page at /dashboard and the document it polls', async () => {
    const overview = await get(port, '/');
    assert.equal(overview.status, 200);
    assert.match(overview.body, /<title>Overview · Nodepool<\/title>/);
    const page = await get(port, '/dashboard');
    assert.equal(page.status, 200);
    assert.equal(page.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.match(page.body, /<table id="uploads"><\/table>/);
    assert.match(page.body, /fetch\('dashboard\.json'/);
    const data = JSON.parse((await get(port, '/dashboard.json')).body) as {
      ready: boolean; builds: Array<{ id: string; state: string }>; uploads: Array<{ provider: string; state: string; percent: number | null }>;
    };
    assert.equal(data.ready, true);
    assert.deepEqual(data.builds.map((b) => [b.id, b.state]), [['deb-0000000001', 'ready']]);
    assert.deepEqual(data.uploads.map((u) => [u.provider, u.state, u.percent]), [['cloud-a', 'ready', null], ['cloud-b', 'ready', null]]);
  });

  it('keeps the columns ?fields= names (at /api: in the order given, and an unknown one refused)', async () => {
    const picked = await get(port, '/dib-image-list?fields=id,image,state');
    assert.equal(picked.status, 200);
    assert.deepEqual(picked.body.split('\n').filter((l) => l.startsWith('|')), ['| ID             | Image | State |', '| deb-0000000001 | deb   | ready |']);
    const uploads = await get(port, '/api/image-list?fields=provider,upload_id,state');
    assert.match(uploads.body, /^\| cloud-a {2}\| \d{10} \| ready \|$/m);
    const bad = await get(port, '/api/image-list?fields=provider,colour');
    assert.equal(bad.status, 400);
    assert.match(bad.body, /^unknown field "colour"; the fields are: buildid, uploadid, provider, image, /);
  });

  it('shows pauses and build requests in /image-status and /api/image-status', async () => {
    await sys.store.setPause('deb', null, true, 'web test');
    await sys.store.requestBuild('deb');
    const row = await waitFor(async () => {
      const r = await get(port, '/api/image-status?fields=image,paused,build_request');
      return r.body.includes('yes (operator') ? r.body : undefined;
    }, { timeoutMs: 5000, what: 'the pause in /image-status (after its 1 s cache)', intervalMs: 200 });
    assert.match(row, /^\| deb\s+\| yes \(operator: web test\) \| yes\s+\|$/m);
    const json = JSON.parse((await get(port, '/api/image-status.json')).body) as Array<{ image: string; pausedBy: string; buildRequest: boolean; buildRequestAge: number }>;
    assert.deepEqual(json.map((s) => [s.image, s.pausedBy, s.buildRequest, typeof s.buildRequestAge]), [['deb', 'operator', true, 'number']]);
    const nodepool = JSON.parse((await get(port, '/image-status', 'application/json')).body) as Array<{ image: string; paused: boolean; build_request: string }>;
    assert.deepEqual(nodepool.map((s) => [s.image, s.paused, s.build_request]), [['deb', true, 'pending']]);
    await sys.store.setPause('deb', null, false);
  });

  it('answers 404 for unknown paths, 405 for methods that would write, and HEAD without a body', async () => {
    for (const path of ['/nope', '/node-list/extra', '/ready.json', '/metrics.json', '/index.html', '/api/ready', '/api']) assert.equal((await get(port, path)).status, 404, path);
    const post = await call(port, '/node-list', { method: 'POST', body: '{}' });
    assert.deepEqual([post.status, post.headers.get('allow')], [405, 'GET, HEAD']);
    assert.equal((await call(port, '/health/ready', { method: 'DELETE' })).status, 405);
    assert.equal((await call(port, '/nope', { method: 'PUT', body: 'x' })).status, 404);
    const head = await call(port, '/label-list', { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.body, '');
    assert.ok(Number(head.headers.get('content-length')) > 0);
  });

  it('caches a list for a second, with the headers and conditional requests Nodepool answers', async () => {
    const first = await get(port, '/request-list');
    assert.equal(first.headers.get('access-control-allow-origin'), '*');
    assert.equal(first.headers.get('cache-control'), 'public, max-age=1');
    const lastModified = first.headers.get('last-modified');
    assert.ok(lastModified && first.headers.get('expires'));
    const again = await call(port, '/request-list', { headers: { 'If-Modified-Since': lastModified } });
    assert.ok(again.status === 304 || again.status === 200, `got ${again.status}`);
    if (again.status === 304) assert.equal(again.body, '');
  });
});
