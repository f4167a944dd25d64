/**
 * The web server's module routes (server/web/routes.ts) on a real node:http server over a
 * SQLite store: a route answers its method (HEAD as GET) before the built-in paths, another
 * method is 405 with `Allow`, a body past the bound is 413 unread, only the built-in reads
 * carry `Access-Control-Allow-Origin: *`; and with `tls` the same server answers HTTPS with a
 * certificate made by openssl for the test.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../../lib/config/load.js';
import type { Route } from '../../../server/web/routes.js';
import { WebServer, type WebServerOptions } from '../../../server/web/web-server.js';
import { LauncherSystem } from '../../support/launcher-system.js';
import { testLogger } from '../../support/test-log.js';
import { call, get } from './web-helpers.js';

const routes: Route[] = [
  { method: 'GET', pattern: '/hello/:name', handle: async (_req, p) => ({ status: 200, contentType: 'text/plain', body: `hello ${p.name ?? ''}\n` }) },
  {
    method: 'POST', pattern: '/echo',
    handle: async (req) => ({ status: 200, contentType: 'application/octet-stream', body: await req.body(1024) }),
  },
  // A route may take a built-in path: the routes are asked first.
  { method: 'GET', pattern: '/', handle: async () => ({ status: 200, contentType: 'text/plain', body: 'routed root\n' }) },
];

void describe('web server routes', () => {
  let sys: LauncherSystem;
  let web: WebServer;
  let tlsWeb: WebServer;
  let dir: string;
  let cert: Buffer;

  before(async () => {
    sys = await LauncherSystem.create({ labels: [{ name: 'small' }], providers: [] });
    const config = loadConfig(sys.configPath);
    const base: WebServerOptions = {
      host: '127.0.0.1', port: 0, log: testLogger(), started: () => true, loops: () => [],
      status: { store: sys.store, config: () => config, clock: Date.now }, routes,
    };
    web = await WebServer.start(base);
    dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-web-tls-'));
    const tls = { cert: path.join(dir, 'cert.pem'), key: path.join(dir, 'key.pem') };
    execFileSync('openssl', [
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
      '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', tls.key, '-out', tls.cert,
    ], { stdio: 'ignore' });
    cert = await readFile(tls.cert);
    tlsWeb = await WebServer.start({ ...base, tls });
  });

  after(async () => {
    await web?.stop();
    await tlsWeb?.stop();
    await sys?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  void it('answers a route with its params, before the built-in paths, and HEAD as GET', async () => {
    const hello = await get(web.port, '/hello/w%C3%B6rld');
    assert.equal(hello.status, 200);
    assert.equal(hello.body, 'hello wörld\n');
    assert.equal((await get(web.port, '/')).body, 'routed root\n');
    const head = await call(web.port, '/hello/x', { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.body, '');
    assert.equal((await get(web.port, '/image-list')).status, 200, 'the built-in paths still answer');
  });

  void it('answers another method on a route path with 405 and Allow', async () => {
    const got = await call(web.port, '/hello/x', { method: 'POST' });
    assert.equal(got.status, 405);
    assert.equal(got.headers.get('allow'), 'GET, HEAD');
    assert.match(got.body, /not allowed on \/hello\/x/);
  });

  void it('reads a bounded body and answers 413 past the bound', async () => {
    const ok = await call(web.port, '/echo', { method: 'POST', body: 'x'.repeat(1000) });
    assert.equal(ok.status, 200);
    assert.equal(ok.body.length, 1000);
    const big = await call(web.port, '/echo', { method: 'POST', body: 'x'.repeat(5000) });
    assert.equal(big.status, 413);
    assert.match(big.body, /over 1024 bytes/);
  });

  void it('keeps CORS * to the built-in reads', async () => {
    assert.equal((await get(web.port, '/image-list')).headers.get('access-control-allow-origin'), '*');
    assert.equal((await get(web.port, '/hello/x')).headers.get('access-control-allow-origin'), null);
    assert.equal((await call(web.port, '/echo', { method: 'POST', body: '{}' })).headers.get('access-control-allow-origin'), null);
  });

  void it('serves HTTPS with webapp.tls', async () => {
    const body = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = https.get({ host: '127.0.0.1', port: tlsWeb.port, path: '/hello/tls', ca: cert }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => { text += c; });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      });
      req.on('error', reject);
    });
    assert.deepEqual(body, { status: 200, body: 'hello tls\n' });
    await assert.rejects(get(tlsWeb.port, '/hello/plain'), 'plain HTTP is not answered on the TLS port');
  });
});
