/**
 * A builder serves its build logs on its metrics port (issue 25 §2): an in-process DibBuilder
 * with the fake disk-image-create on a real gearmand reports its log URL with the build's
 * WORK_DATA; the log of a running build is followed with offsets while it grows, until
 * complete; chunks are bounded; bad ids, unknown ids and offsets past the end are refused.
 * Each log is answered only to its build's log token (issue 31 §9), which the build job carries.
 * `nodepool-builder --metrics-port --advertise-host` reports and serves the same URL.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { fn } from '../../../lib/gearman/functions.js';
import type { GearmanClient } from '../../../lib/gearman/client.js';
import type { JobResult } from '../../../lib/gearman/types.js';
import { newLogToken } from '../../../lib/http/build-log-protocol.js';
import { waitFor } from '../../../lib/lifecycle.js';
import { BUILD_LOG_CHUNK_BYTES } from '../../../workers/builder/build-log-http.js';
import type { DibBuilder } from '../../../workers/builder/dib-builder.js';
import { writeLogToken } from '../../../workers/builder/log-token.js';
import { BuilderMetricsServer } from '../../../workers/builder/metrics-server.js';
import { startGearmand, type GearmandHandle } from '../../support/gearmand.js';
import { freePort, runningProcesses, startProcess } from '../../support/processes.js';
import { createBuilderEnv, fakeDiskimage, inProcessBuilder, testClient, testLogger, type BuilderEnv } from '../../support/builder-env.js';
import { nodeScript } from '../../support/node-command.js';

/** One read of a builder's log URL. */
interface LogRead {
  status: number;
  size: number | undefined;
  complete: string | null;
  body: Buffer;
}

/** The log token each build of these tests is asked with. */
const tokens = new Map<string, string>();
const tokenOf = (id: string): string => {
  if (!tokens.has(id)) tokens.set(id, newLogToken());
  return tokens.get(id) as string;
};

/** Reads `url` with the log token of its build (`token` null: none; a string: that one). */
async function readLog(url: string, offset?: number, method = 'GET', token?: string | null): Promise<LogRead> {
  const id = url.slice(url.lastIndexOf('/') + 1);
  const bearer = token === undefined ? (/^[\w-]+$/.test(id) ? tokenOf(id) : null) : token;
  const res = await fetch(offset === undefined ? url : `${url}?offset=${offset}`, {
    method, signal: AbortSignal.timeout(10_000), ...(bearer === null ? {} : { headers: { Authorization: `Bearer ${bearer}` } }),
  });
  const size = res.headers.get('x-log-size');
  return { status: res.status, size: size === null ? undefined : Number(size), complete: res.headers.get('x-log-complete'), body: Buffer.from(await res.arrayBuffer()) };
}

/** Submits `image-build:deb` for `id` with its log token; the WORK_DATA payloads and the end land in the returned object. */
function build(client: GearmanClient, id: string): { data: Array<Record<string, unknown>>; end?: JobResult; done: Promise<void> } {
  const job: { data: Array<Record<string, unknown>>; end?: JobResult; done: Promise<void> } = { data: [], done: Promise.resolve() };
  const submitted = client.submit(fn.imageBuild('deb'), JSON.stringify({ 'image-id': id, 'log-token': tokenOf(id) }), {
    unique: id, createdTimeoutMs: 10_000, onData: (d) => job.data.push(JSON.parse(d.toString('utf8')) as Record<string, unknown>),
  });
  job.done = submitted.result.then((r) => { job.end = r; });
  return job;
}

describe('builder: build logs over its port', () => {
  let gearmand: GearmandHandle;
  let env: BuilderEnv;
  let builder: DibBuilder;
  let client: GearmanClient;
  let metrics: BuilderMetricsServer;
  let pauseFile: string;
  let base: string;

  before(async () => {
    gearmand = await startGearmand();
    env = await createBuilderEnv({ gearmanPort: gearmand.port, name: 'logs' });
    pauseFile = path.join(env.dir, 'pause');
    await env.rewrite({ diskimages: [fakeDiskimage('deb', { formats: ['qcow2'] }, { FAKE_DIB_PAUSE_FILE: pauseFile, FAKE_DIB_DELAY: '0.3', FAKE_DIB_SIZE_MIB: '2' })] });
    builder = inProcessBuilder(env);
    metrics = await BuilderMetricsServer.start({
      builder, imagesDir: () => env.config.imagesDir, host: '127.0.0.1', port: 0, log: testLogger(),
      buildLogs: { dir: () => env.config.buildLogDir, advertiseHost: '127.0.0.1' },
    });
    base = `http://127.0.0.1:${metrics.port}/build-logs/`;
    await builder.start();
    client = await testClient(gearmand.port);
  });

  after(async () => {
    await rm(pauseFile, { force: true });
    await client?.stop();
    await builder?.stop({ abortAfterMs: 1000 });
    await metrics?.stop();
    await gearmand?.stop();
    await env?.remove();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  it('reports its log URL when a build starts and serves the running build\'s log, followed with offsets while it grows, until complete', async () => {
    const id = 'deb-0000000001';
    await writeFile(pauseFile, '');
    const job = build(client, id);
    const started = await waitFor(() => job.data.find((d) => 'log-url' in d), { timeoutMs: 30_000, what: 'the build\'s WORK_DATA with its log-url' });
    assert.equal(started['log-url'], `${base}${id}`);
    assert.equal(started.builder, 'builder-a');
    await waitFor(() => existsSync(`${pauseFile}.started`), { timeoutMs: 30_000, what: 'fake DIB paused mid-build' });

    const url = `${base}${id}`;
    const first = await readLog(url);
    assert.equal(first.status, 200);
    assert.equal(first.complete, 'false', 'the build is running');
    assert.ok(first.size !== undefined && first.size > 0 && first.body.length === first.size, `first read: ${first.body.length} of ${first.size} bytes`);
    assert.match(first.body.toString('utf8'), /build deb-0000000001 of deb on builder-a/);

    // Follow from where the first read ended, as a browser does, while the build goes on.
    await rm(pauseFile);
    const chunks = [first.body];
    let offset = first.body.length;
    let grewWhileRunning = false;
    await waitFor(async () => {
      const r = await readLog(url, offset);
      assert.equal(r.status, 200, `read at ${offset}: ${r.body.toString('utf8')}`);
      chunks.push(r.body);
      offset += r.body.length;
      if (r.complete === 'false' && r.body.length > 0) grewWhileRunning = true;
      return r.complete === 'true' && offset === r.size ? true : undefined;
    }, { timeoutMs: 60_000, intervalMs: 100, what: 'the followed log complete' });
    await job.done;
    assert.equal(job.end?.type, 'complete');
    assert.ok(grewWhileRunning, 'new lines were read while the build still ran');
    const followed = Buffer.concat(chunks);
    assert.deepEqual(followed, await readFile(path.join(env.config.buildLogDir, `${id}.log`)), 'the followed bytes are the log file');
    assert.match(followed.toString('utf8'), /build complete in \d+ s\n$/);
    const again = await readLog(url);
    assert.equal(again.complete, 'true');
    assert.equal(again.size, followed.length);
  });

  it('answers at most one chunk per read, reads from any offset, an empty read at the end and 416 past it', async () => {
    const id = 'deb-0000000099';
    const bytes = Buffer.alloc(600_000, 'abcdefghij\n');
    await writeFile(path.join(env.config.buildLogDir, `${id}.log`), bytes);
    await writeLogToken(env.config.buildLogDir, id, tokenOf(id));
    const url = `${base}${id}`;
    const r0 = await readLog(url, 0);
    assert.deepEqual([r0.status, r0.size, r0.complete, r0.body.length], [200, 600_000, 'true', BUILD_LOG_CHUNK_BYTES]);
    assert.deepEqual(r0.body, bytes.subarray(0, BUILD_LOG_CHUNK_BYTES));
    const r2 = await readLog(url, 2 * BUILD_LOG_CHUNK_BYTES);
    assert.deepEqual(r2.body, bytes.subarray(2 * BUILD_LOG_CHUNK_BYTES));
    const head = await readLog(url, 0, 'HEAD');
    assert.deepEqual([head.status, head.size, head.body.length], [200, 600_000, 0]);
    const end = await readLog(url, 600_000);
    assert.deepEqual([end.status, end.body.length, end.complete], [200, 0, 'true']);
    const past = await readLog(url, 600_001);
    assert.equal(past.status, 416);
    assert.equal(past.size, 600_000);
    assert.match(past.body.toString('utf8'), /offset 600001 is past the end of the log of deb-0000000099 \(600000 bytes\)/);
  });

  it('refuses ids that are not build ids with 400 before any path is touched, and answers 404 for a build without a log here', async () => {
    // A file the traversal would reach if the id were used as a path.
    await writeFile(path.join(env.dir, 'secret.log'), 'not a build log\n');
    for (const bad of ['..%2Fsecret', '..%2F..%2Fetc%2Fpasswd', 'not-an-id', 'deb-00000001', 'deb-0000000001%00', '%E0%A4%A']) {
      const r = await readLog(`${base}${bad}`);
      assert.equal(r.status, 400, `${bad}: ${r.body.toString('utf8')}`);
      assert.match(r.body.toString('utf8'), /invalid build id/);
    }
    const unknown = await readLog(`${base}deb-0000000077`);
    assert.equal(unknown.status, 401, 'no token is held for a build never built here');
    await writeLogToken(env.config.buildLogDir, 'deb-0000000077', tokenOf('deb-0000000077'));
    const pruned = await readLog(`${base}deb-0000000077`);
    assert.equal(pruned.status, 404);
    assert.match(pruned.body.toString('utf8'), /no build log of deb-0000000077 here/);
    for (const offset of ['-1', 'abc', '1e3']) {
      const r = await readLog(`${base}deb-0000000099?offset=${offset}`);
      assert.equal(r.status, 400, `offset ${offset}`);
    }
    const post = await fetch(`${base}deb-0000000099`, { method: 'POST' });
    assert.equal(post.status, 405);
    await post.arrayBuffer();
  });

  it('answers a log only to its build\'s log token: 401 without one, with another build\'s, with a JWT-like string, and for a build asked without a token', async () => {
    const id = 'deb-0000000099';
    const url = `${base}${id}`;
    for (const [what, token] of [['no token', null], ['another build\'s token', tokenOf('deb-0000000001')], ['a JWT-like string', 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln']] as const) {
      const r = await readLog(url, 0, 'GET', token);
      assert.equal(r.status, 401, `${what}: ${r.body.toString('utf8')}`);
      assert.equal(r.body.includes('abcdefghij'), false, `no log bytes to ${what}`);
    }
    const head = await readLog(url, 0, 'HEAD', null);
    assert.equal(head.status, 401, 'HEAD too');
    // A build job without a log-token (a server before issue 31, Nodepool 0.3.x): built, its log served to no one.
    const old = 'deb-0000000003';
    const submitted = client.submit(fn.imageBuild('deb'), JSON.stringify({ 'image-id': old }), { unique: old, createdTimeoutMs: 10_000 });
    assert.equal((await submitted.result).type, 'complete');
    const r = await readLog(`${base}${old}`, 0, 'GET', newLogToken());
    assert.equal(r.status, 401);
    assert.match(r.body.toString('utf8'), /holds no log token/);
  });

  it('reports a null log URL once its port is closed', async () => {
    await metrics.stop();
    const job = build(client, 'deb-0000000002');
    await job.done;
    assert.equal(job.end?.type, 'complete');
    const started = job.data.find((d) => 'log-url' in d);
    assert.equal(started?.['log-url'], null);
  });
});

describe('nodepool-builder --metrics-port --advertise-host', () => {
  let gearmand: GearmandHandle;
  let env: BuilderEnv;
  let client: GearmanClient;

  before(async () => {
    gearmand = await startGearmand();
    env = await createBuilderEnv({ gearmanPort: gearmand.port, name: 'logs-bin', diskimages: [fakeDiskimage('deb', { formats: ['qcow2'] }, { FAKE_DIB_SIZE_MIB: '2' })] });
    client = await testClient(gearmand.port);
  });

  after(async () => {
    await client?.stop();
    await gearmand?.stop();
    await env?.remove();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  it('reports http://<advertise-host>:<metrics-port>/build-logs/<id> with the build and serves the log there', async () => {
    const port = await freePort();
    const root = fileURLToPath(new URL('../../../', import.meta.url));
    const p = startProcess('nodepool-builder', process.execPath, [
      ...nodeScript('bin/nodepool-builder.ts'), '-c', env.configPath, '--hostname', 'builder-bin',
      '--metrics-port', String(port), '--advertise-host', '127.0.0.1', '--log-level', 'debug',
    ], { cwd: root, logFile: path.join(env.dir, 'nodepool-builder.log'), env: { ...process.env, NODEPOOL_CONFIG: '' } });
    try {
      const job = build(client, 'deb-0000000001');
      await job.done;
      assert.equal(job.end?.type, 'complete', `see ${env.dir}/nodepool-builder.log`);
      const url = `http://127.0.0.1:${port}/build-logs/deb-0000000001`;
      assert.equal(job.data.find((d) => 'log-url' in d)?.['log-url'], url);
      const r = await readLog(url);
      assert.deepEqual([r.status, r.complete], [200, 'true']);
      assert.deepEqual(r.body, await readFile(path.join(env.config.buildLogDir, 'deb-0000000001.log')));
    } finally {
      await p.stop();
    }
    assert.equal((await p.exited).code, 0);
  });
});
