/**
 * The server's build log route (issue 25 §2) against real parts: a nodepool-server (image
 * lifecycle on SQLite, real gearmand) has an in-process builder with the fake disk-image-create
 * build; the build record gets the builder's log URL as the build starts; the web server with
 * `buildLogModule` answers the running build's log from the builder's port (bytes as in the
 * file, followed as JSON until complete). A builder whose port is closed answers 502 in well
 * under 5 s, one that accepts and never answers 504 within the timeout, as does one whose host
 * never completes the connection (a listener whose accept queue is full), each naming the builder.
 * The server asks the builder with the build's log token (issue 31 §9); a build recorded
 * without one is answered 404 saying so, its builder never asked.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import yaml from 'js-yaml';
import { loadConfig } from '../../../lib/config/load.js';
import type { Config } from '../../../lib/config/schema.js';
import { newLogToken } from '../../../lib/http/build-log-protocol.js';
import { waitFor } from '../../../lib/lifecycle.js';
import type { BuildRecord } from '../../../lib/store/models.js';
import { openStore } from '../../../lib/store/open-store.js';
import type { Store } from '../../../lib/store/store.js';
import type { RequestAuthenticator } from '../../../lib/web-auth/auth-types.js';
import { NodepoolServer } from '../../../server/main.js';
import { buildLogModule } from '../../../server/web/build-logs/build-log-module.js';
import type { WebContext } from '../../../server/web/web-context.js';
import { WebServer } from '../../../server/web/web-server.js';
import type { DibBuilder } from '../../../workers/builder/dib-builder.js';
import { writeLogToken } from '../../../workers/builder/log-token.js';
import { BuilderMetricsServer } from '../../../workers/builder/metrics-server.js';
import { createBuilderEnv, fakeDiskimage, inProcessBuilder, testLogger, type BuilderEnv } from '../../support/builder-env.js';
import { startGearmand, type GearmandHandle } from '../../support/gearmand.js';
import { testImageServices } from '../../support/image-services.js';
import { freePort, runningProcesses, startProcess } from '../../support/processes.js';

/** Reads are public: the authenticator is never asked. */
const NO_AUTH: RequestAuthenticator = {
  enabled: false,
  authenticate: () => Promise.resolve({ ok: false, status: 403, message: 'the write API is not configured' }),
};

interface Read {
  status: number;
  size: string | null;
  complete: string | null;
  contentType: string | null;
  nosniff: boolean;
  body: Buffer;
  ms: number;
}

describe('web: build logs read through the server from the builder', () => {
  let gearmand: GearmandHandle;
  let env: BuilderEnv;
  let builder: DibBuilder;
  let metrics: BuilderMetricsServer | undefined;
  let server: NodepoolServer | undefined;
  let store: Store;
  let web: WebServer;
  let config: Config;
  let pauseFile: string;
  let stalled: net.Server;
  const stalledSockets = new Set<net.Socket>();

  const get = async (p: string): Promise<Read> => {
    const t0 = Date.now();
    const res = await fetch(`http://127.0.0.1:${web.port}${p}`, { signal: AbortSignal.timeout(20_000) });
    const body = Buffer.from(await res.arrayBuffer());
    return {
      status: res.status, size: res.headers.get('x-log-size'), complete: res.headers.get('x-log-complete'), contentType: res.headers.get('content-type'),
      nosniff: res.headers.get('x-content-type-options') === 'nosniff', body, ms: Date.now() - t0,
    };
  };

  before(async () => {
    gearmand = await startGearmand();
    env = await createBuilderEnv({ gearmanPort: gearmand.port, name: 'proxy' });
    pauseFile = path.join(env.dir, 'pause');
    const diskimages = [fakeDiskimage('deb', { formats: ['qcow2'] }, { FAKE_DIB_PAUSE_FILE: pauseFile, FAKE_DIB_DELAY: '0.3', FAKE_DIB_SIZE_MIB: '2' })];
    await env.rewrite({ diskimages });
    builder = inProcessBuilder(env);
    metrics = await BuilderMetricsServer.start({
      builder, imagesDir: () => env.config.imagesDir, host: '127.0.0.1', port: 0, log: testLogger(),
      buildLogs: { dir: () => env.config.buildLogDir, advertiseHost: '127.0.0.1' },
    });
    await builder.start();
    const serverDir = path.join(env.dir, 'server');
    await mkdir(path.join(serverDir, 'state'), { recursive: true });
    const configPath = path.join(serverDir, 'nodepool.yaml');
    await writeFile(configPath, yaml.dump({
      'gearman-servers': [{ host: '127.0.0.1', port: gearmand.port }],
      'state-dir': path.join(serverDir, 'state'),
      'image-lifecycle': { interval: 1 },
      diskimages,
      providers: [],
    }));
    config = loadConfig(configPath);
    store = await openStore(config);
    const log = testLogger();
    const ctx: WebContext = {
      store, config: () => config, auth: NO_AUTH, status: { store, config: () => config, clock: () => Date.now() },
      loops: () => [], started: () => true, clock: () => Date.now(), log,
    };
    web = await WebServer.start({
      host: '127.0.0.1', port: 0, log, cacheMs: 0, status: ctx.status, loops: ctx.loops, started: ctx.started,
      routes: buildLogModule(ctx).routes,
    });
    // A builder host that accepts connections and never answers.
    stalled = net.createServer((s) => {
      stalledSockets.add(s);
      s.resume(); // reads the request (and so sees the proxy's close), answers nothing
      s.on('close', () => stalledSockets.delete(s));
    });
    await new Promise<void>((resolve) => stalled.listen(0, '127.0.0.1', resolve));
    await writeFile(pauseFile, '');
    server = await NodepoolServer.create({ config, log, hostname: 'test-server', imageServices: testImageServices(() => config.cloudsFile, log) });
  });

  after(async () => {
    await rm(pauseFile, { force: true });
    await server?.stop();
    await web?.stop();
    for (const s of stalledSockets) s.destroy();
    await new Promise<void>((resolve) => (stalled ? stalled.close(() => resolve()) : resolve()));
    await builder?.stop({ abortAfterMs: 1000 });
    await metrics?.stop();
    await store?.close();
    await gearmand?.stop();
    await env?.remove();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  it('records the log URL as the build starts and answers the running build\'s log bytes from the builder, then follows it as JSON until complete', async () => {
    const running = await waitFor(async () => (await store.listBuilds()).find((b) => b.state === 'building' && b.logUrl), { timeoutMs: 60_000, intervalMs: 100, what: 'a building record with a log URL' });
    assert.equal(running.logUrl, `http://127.0.0.1:${metrics?.port}/build-logs/${running.id}`);
    assert.equal(running.builderHostname, 'builder-a');
    await waitFor(() => existsSync(`${pauseFile}.started`), { timeoutMs: 30_000, what: 'fake DIB paused mid-build' });
    const logFile = path.join(env.config.buildLogDir, `${running.id}.log`);

    const raw = await get(`/api/build/${running.id}/log`);
    assert.equal(raw.status, 200, raw.body.toString('utf8'));
    assert.equal(raw.complete, 'false');
    assert.equal(raw.contentType, 'text/plain; charset=utf-8');
    assert.ok(raw.nosniff, 'a log is never sniffed as HTML');
    assert.equal(Number(raw.size), raw.body.length);
    assert.deepEqual(raw.body, (await readFile(logFile)).subarray(0, raw.body.length), 'the bytes are the log file\'s');

    await rm(pauseFile);
    let offset = 0;
    let text = '';
    await waitFor(async () => {
      const r = await get(`/api/build/${running.id}/log?offset=${offset}&format=json`);
      assert.equal(r.status, 200, r.body.toString('utf8'));
      const j = JSON.parse(r.body.toString('utf8')) as { offset: number; next: number; size: number; complete: boolean; text: string };
      assert.equal(j.offset, offset);
      text += j.text;
      offset = j.next;
      return j.complete ? true : undefined;
    }, { timeoutMs: 60_000, intervalMs: 100, what: `the log of ${running.id} complete` });
    assert.equal(text, await readFile(logFile, 'utf8'));
    assert.match(text, /build complete in \d+ s\n$/);
    const ready = await waitFor(async () => ((await store.getBuild(running.id))?.state === 'ready' ? store.getBuild(running.id) : undefined), { timeoutMs: 30_000, what: 'the build ready' });
    assert.equal(ready.logUrl, running.logUrl, 'the URL stays on the ready build');
  });

  it('cuts JSON chunks at character boundaries and follows a log longer than a chunk', async () => {
    // The lifecycle is stopped from here on: the records below are the test's own.
    await server?.stop();
    server = undefined;
    const token = newLogToken();
    const b = await store.createBuild({ diskimage: 'deb', formats: ['qcow2'], logToken: token });
    await writeLogToken(env.config.buildLogDir, b.id, token);
    // 'é' is two bytes: an odd prefix puts one across every 256 KiB boundary.
    const content = `x${'é'.repeat(200_000)}\n${'€'.repeat(50_000)} end\n`;
    await writeFile(path.join(env.config.buildLogDir, `${b.id}.log`), content);
    await store.updateBuild(b.id, { builderHostname: 'builder-a', logUrl: `http://127.0.0.1:${metrics?.port}/build-logs/${b.id}` });
    let offset = 0;
    const texts: string[] = [];
    for (let reads = 0; reads < 10; reads += 1) {
      const r = await get(`/api/build/${b.id}/log?offset=${offset}&format=json`);
      const j = JSON.parse(r.body.toString('utf8')) as { next: number; size: number; complete: boolean; text: string };
      assert.ok(!j.text.includes('\uFFFD'), `read ${reads} at ${offset} split a character`);
      texts.push(j.text);
      offset = j.next;
      if (j.complete) break;
    }
    assert.ok(texts.length >= 3, `${texts.length} reads`);
    assert.equal(texts.join(''), content);
  });

  it('answers 404 for an unknown build and for a build whose builder serves no logs, 400 for a bad id or offset', async () => {
    const unknown = await get('/api/build/deb-0000000999/log');
    assert.equal(unknown.status, 404);
    assert.match(unknown.body.toString('utf8'), /no build deb-0000000999/);
    const b = await store.createBuild({ diskimage: 'deb', formats: ['qcow2'] });
    await store.updateBuild(b.id, { builderHostname: 'builder-b', logUrl: null });
    const none = await get(`/api/build/${b.id}/log?format=json`);
    assert.equal(none.status, 404);
    assert.deepEqual(JSON.parse(none.body.toString('utf8')), { message: 'builder builder-b serves no build logs' });
    assert.equal((await get('/api/build/..%2Fetc/log')).status, 400);
    assert.equal((await get(`/api/build/${b.id}/log?offset=-3`)).status, 400);
  });

  it('answers 404 for a build recorded without a log token, saying so, without asking its builder', async () => {
    // A builder that would hold the request past the test's bound if it were asked.
    const b = await store.createBuild({ diskimage: 'deb', formats: ['qcow2'] });
    await store.updateBuild(b.id, { builderHostname: 'builder-old', logUrl: `http://127.0.0.1:${(stalled.address() as net.AddressInfo).port}/build-logs/${b.id}` });
    const r = await get(`/api/build/${b.id}/log?format=json`);
    assert.equal(r.status, 404, r.body.toString('utf8'));
    assert.match((JSON.parse(r.body.toString('utf8')) as { message: string }).message, new RegExp(`^build ${b.id} has no log token .*builder builder-old does not serve its log`));
    assert.ok(r.ms < 2000, `answered after ${r.ms} ms`);
    assert.equal(stalledSockets.size, 0, 'the builder was not asked');
  });

  it('answers 416 with the size for an offset past the end of the log', async () => {
    const [b] = (await store.listBuilds()).filter((x) => x.state === 'ready');
    const size = (await readFile(path.join(env.config.buildLogDir, `${(b as BuildRecord).id}.log`))).length;
    const r = await get(`/api/build/${(b as BuildRecord).id}/log?offset=${size + 10}`);
    assert.equal(r.status, 416);
    assert.equal(r.size, String(size));
    assert.match(r.body.toString('utf8'), /^builder builder-a: offset \d+ is past the end/);
  });

  it('answers 504 within the timeout, naming the builder, when the builder accepts and never answers', async () => {
    const b = await store.createBuild({ diskimage: 'deb', formats: ['qcow2'], logToken: newLogToken() });
    await store.updateBuild(b.id, { builderHostname: 'builder-stalled', logUrl: `http://127.0.0.1:${(stalled.address() as net.AddressInfo).port}/build-logs/${b.id}` });
    const r = await get(`/api/build/${b.id}/log`);
    assert.equal(r.status, 504, r.body.toString('utf8'));
    assert.match(r.body.toString('utf8'), /^builder builder-stalled \(127\.0\.0\.1:\d+\) accepted the connection but did not answer within 4 s/);
    assert.ok(r.ms >= 3500 && r.ms < 6000, `answered after ${r.ms} ms`);
    assert.ok(stalledSockets.size <= 1, 'the proxy does not leave connections behind');
    await waitFor(() => stalledSockets.size === 0, { timeoutMs: 5000, what: 'the stalled connection closed by the proxy' });
  });

  it('answers 504 within the connect timeout when the builder host never completes the connection', async () => {
    // A listener that never accepts, with an accept queue of one, taken by `filler`: the kernel
    // drops the proxy's SYN, as from a host that is overloaded or behind a dropping firewall.
    const port = await freePort();
    const ready = path.join(env.dir, 'backlog.ready');
    const py = startProcess('full-backlog', '/usr/bin/python3', ['-c', [
      'import socket, sys, time',
      's = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(0)',
      'open(sys.argv[2], "w").close()',
      'time.sleep(120)',
    ].join('\n'), String(port), ready]);
    const filler = new net.Socket();
    try {
      await waitFor(() => existsSync(ready), { timeoutMs: 10_000, what: 'the never-accepting listener' });
      await new Promise<void>((resolve, reject) => filler.connect(port, '127.0.0.1', resolve).once('error', reject));
      const b = await store.createBuild({ diskimage: 'deb', formats: ['qcow2'], logToken: newLogToken() });
      await store.updateBuild(b.id, { builderHostname: 'builder-overloaded', logUrl: `http://127.0.0.1:${port}/build-logs/${b.id}` });
      const r = await get(`/api/build/${b.id}/log?format=json`);
      assert.equal(r.status, 504, r.body.toString('utf8'));
      assert.deepEqual(JSON.parse(r.body.toString('utf8')), { message: `builder builder-overloaded (127.0.0.1:${port}) did not accept a connection within 3 s` });
      assert.ok(r.ms >= 2500 && r.ms < 5000, `answered after ${r.ms} ms`);
    } finally {
      filler.destroy();
      await py.stop();
    }
  });

  it('answers 502 in well under 5 s, naming the builder, when the builder\'s port is gone', async () => {
    const [ready] = (await store.listBuilds()).filter((x) => x.state === 'ready');
    await metrics?.stop();
    metrics = undefined;
    const r = await get(`/api/build/${(ready as BuildRecord).id}/log`);
    assert.equal(r.status, 502, r.body.toString('utf8'));
    assert.match(r.body.toString('utf8'), /^builder builder-a \(127\.0\.0\.1:\d+\) is unreachable: connection refused/);
    assert.ok(r.ms < 5000, `answered after ${r.ms} ms`);
  });
});
