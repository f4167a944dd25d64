/**
 * Build logs are served by default and, with webapp.auth, only to a token of role `read`
 * (issue 31 §9), without the reader's token ever leaving the server, on real parts:
 * `nodepool-builder` as a process without `--metrics-port` (as `make run` starts it) on a real
 * gearmand, its nodepool.yaml naming a webapp.auth key file that does not exist (the builder
 * needs no webapp.auth: it starts and builds), and nodepool-server in this process on SQLite
 * with its web status and one local HS256 authenticator. The server's image lifecycle builds the
 * diskimage; `/api/build/<id>/log` refuses a reader without a token (401) and answers one with a
 * read token, reading the log from the builder with the build's own log token. The builder's
 * port refuses a request without a token, with a wrong one and with the operator's own JWT
 * (401). A log URL pointing at another HTTP server (as a builder that lies in its WORK_DATA
 * could report) receives the build's log token, never the reader's.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import yaml from 'js-yaml';
import { loadConfig } from '../../../lib/config/load.js';
import type { Config } from '../../../lib/config/schema.js';
import { waitFor } from '../../../lib/lifecycle.js';
import type { BuildRecord } from '../../../lib/store/models.js';
import { signToken } from '../../../lib/web-auth/sign-token.js';
import { NodepoolServer } from '../../../server/main.js';
import { fakeDiskimage, testLogger } from '../../support/builder-env.js';
import { startGearmand, type GearmandHandle } from '../../support/gearmand.js';
import { testImageServices } from '../../support/image-services.js';
import { runningProcesses, startProcess, type TrackedProcess } from '../../support/processes.js';
import { nodeScript } from '../../support/node-command.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

interface Read {
  status: number;
  body: string;
  authenticate: string | null;
}

async function get(url: string, token?: string): Promise<Read> {
  const res = await fetch(url, { signal: AbortSignal.timeout(20_000), ...(token ? { headers: { Authorization: `Bearer ${token}` } } : {}) });
  return { status: res.status, body: await res.text(), authenticate: res.headers.get('www-authenticate') };
}

describe('web: build logs served by default, read with a token when webapp.auth is set, each build\'s log with its own log token', () => {
  let gearmand: GearmandHandle;
  let dir: string;
  let config: Config;
  let builder: TrackedProcess | undefined;
  let server: NodepoolServer | undefined;
  let build: BuildRecord;
  let readToken: string;
  let operatorToken: string;

  before(async () => {
    gearmand = await startGearmand();
    dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-log-auth-'));
    await mkdir(path.join(dir, 'state'), { recursive: true });
    const configPath = path.join(dir, 'nodepool.yaml');
    await writeFile(configPath, yaml.dump({
      'gearman-servers': [{ host: '127.0.0.1', port: gearmand.port }],
      'images-dir': path.join(dir, 'images'),
      'build-log-dir': path.join(dir, 'logs'),
      'state-dir': path.join(dir, 'state'),
      'image-lifecycle': { interval: 1 },
      webapp: { port: 0, auth: [{ name: 'local', driver: 'HS256', secret: randomBytes(32).toString('hex'), issuer: 'nodepool', audience: 'nodepool' }] },
      diskimages: [fakeDiskimage('deb', { formats: ['qcow2'] }, { FAKE_DIB_SIZE_MIB: '2' })],
      providers: [],
    }));
    config = loadConfig(configPath);
    const local = config.webapp.auth[0] as Config['webapp']['auth'][number];
    readToken = await signToken(local, { user: 'reader', role: 'read', expiresInS: 600 });
    operatorToken = await signToken(local, { user: 'operator', role: 'operator', expiresInS: 600 });
    // The builder's nodepool.yaml also names an authenticator whose key file this host lacks
    // (as a builder host without the server's JWKS): the builder reads no webapp.auth.
    const builderConfig = path.join(dir, 'builder.yaml');
    const raw = yaml.load(await readFile(configPath, 'utf8')) as { webapp: { auth: unknown[] } };
    raw.webapp.auth.push({ name: 'sso', driver: 'RS256', 'public-key': path.join(dir, 'missing-sso-key.pem'), issuer: 'https://sso.example', audience: 'nodepool' });
    await writeFile(builderConfig, yaml.dump(raw));
    // As `make run` starts it: no --metrics-port, no --advertise-host.
    builder = startProcess('nodepool-builder', process.execPath, [
      ...nodeScript('bin/nodepool-builder.ts'), '-c', builderConfig, '--hostname', 'builder-unresolvable', '--log-level', 'debug',
    ], { cwd: ROOT, logFile: path.join(dir, 'builder.log'), env: { ...process.env, NODEPOOL_CONFIG: '' } });
    const log = testLogger();
    server = await NodepoolServer.create({ config, log, hostname: 'test-server', webapp: true, imageServices: testImageServices(() => config.cloudsFile, log) });
    build = await waitFor(async () => (await server?.store.listBuilds())?.find((b) => b.state === 'ready'),
      { timeoutMs: 90_000, intervalMs: 200, what: `a ready build (builder log: ${dir}/builder.log)` });
  });

  after(async () => {
    await server?.stop();
    await builder?.stop();
    await gearmand?.stop();
    await rm(dir, { recursive: true, force: true });
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  const api = (p: string): string => `http://127.0.0.1:${server?.web?.port}${p}`;

  it('records a log URL on the listen address and a port of the builder\'s own, though it was started without --metrics-port', () => {
    assert.match(build.logUrl ?? '', new RegExp(`^http://127\\.0\\.0\\.1:\\d+/build-logs/${build.id}$`), `the build's log URL: ${build.logUrl}`);
  });

  it('answers the log through the server to a read token, and 401 without a token or with a bad one', async () => {
    const file = await readFile(path.join(config.buildLogDir, `${build.id}.log`), 'utf8');
    const none = await get(api(`/api/build/${build.id}/log`));
    assert.equal(none.status, 401, none.body);
    assert.ok(!none.body.includes('build complete'), 'no log bytes without a token');
    const forged = await get(api(`/api/build/${build.id}/log`), `${readToken.slice(0, -4)}AAAA`);
    assert.equal(forged.status, 401, forged.body);
    const read = await get(api(`/api/build/${build.id}/log`), readToken);
    assert.equal(read.status, 200, read.body);
    assert.equal(read.body, file);
    assert.match(read.body, /build complete in \d+ s\n$/);
    const json = await get(api(`/api/build/${build.id}/log?format=json`), readToken);
    assert.equal(json.status, 200, json.body);
    assert.deepEqual(JSON.parse(json.body), { offset: 0, next: Buffer.byteLength(file), size: Buffer.byteLength(file), complete: true, text: file });
  });

  it('refuses the builder\'s port to a request without a token, with a wrong one and with the operator\'s own JWT (401), answers the build\'s log token, and keeps /metrics open', async () => {
    const url = build.logUrl as string;
    const logToken = await server?.store.buildLogToken(build.id);
    assert.match(logToken ?? '', /^[A-Za-z0-9_-]{43}$/, 'the server made a log token with the build');
    for (const [what, token] of [['no token', undefined], ['a wrong token', `${(logToken as string).slice(0, -2)}xx`], ['the reader\'s JWT', readToken], ['the operator\'s JWT', operatorToken]] as const) {
      const direct = await get(url, token);
      assert.equal(direct.status, 401, `${what}: ${direct.body}`);
      assert.equal(direct.authenticate, 'Bearer');
      assert.ok(!direct.body.includes('build complete'), `no log bytes to ${what}`);
    }
    const ok = await get(url, logToken);
    assert.equal(ok.status, 200, ok.body);
    assert.equal(ok.body, await readFile(path.join(config.buildLogDir, `${build.id}.log`), 'utf8'));
    const metrics = await get(new URL('/metrics', url).href);
    assert.equal(metrics.status, 200);
    assert.match(metrics.body, /nodepool_builder_builds_total/);
  });

  it('sends a log URL another server names the build\'s log token, never the reader\'s token', async () => {
    const store = server?.store;
    assert.ok(store);
    const seen: Array<string | undefined> = [];
    const fake = http.createServer((req, res) => {
      seen.push(req.headers.authorization);
      res.writeHead(200, { 'Content-Type': 'text/plain', 'X-Log-Size': '6', 'X-Log-Complete': 'true' });
      res.end('forged');
    });
    await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
    const genuine = build.logUrl as string;
    try {
      // What a process that took image-build:deb and lied in its WORK_DATA would have recorded.
      await store.updateBuild(build.id, { logUrl: `http://127.0.0.1:${(fake.address() as { port: number }).port}/build-logs/${build.id}` });
      const read = await get(api(`/api/build/${build.id}/log`), readToken);
      assert.equal(read.status, 200, read.body);
      assert.equal(seen.length, 1);
      assert.notEqual(seen[0], `Bearer ${readToken}`);
      assert.ok(!(seen[0] ?? '').includes(readToken), 'the reader\'s token never leaves the server');
      assert.equal(seen[0], `Bearer ${await store.buildLogToken(build.id)}`, 'only the build\'s own log token');
    } finally {
      await store.updateBuild(build.id, { logUrl: genuine });
      await new Promise<void>((resolve) => fake.close(() => resolve()));
    }
  });

  it('started and built though its nodepool.yaml names a webapp.auth key file it cannot read', async () => {
    assert.equal(build.state, 'ready');
    assert.equal(builder?.alive(), true, 'the builder still runs');
  });
});
