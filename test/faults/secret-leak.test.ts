import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { mkdir, mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { loadConfig } from '../../lib/config/load.js';
import { SecretRegistry } from '../../lib/redact.js';
import { waitFor } from '../../lib/lifecycle.js';
import { openStore } from '../../lib/store/open-store.js';
import type { Store } from '../../lib/store/store.js';
import { recordFault } from '../support/fault-report.js';
import { startGearmand, type GearmandHandle } from '../support/gearmand.js';
import { freePort, runningProcesses, startProcess, type TrackedProcess } from '../support/processes.js';
import { ScriptedCloud, SCRIPTED_REGION, type SeenRequest } from '../support/scripted-cloud.js';
import { nodeScript } from '../support/node-command.js';

const ROOT = path.resolve('.');
/** test/fixtures/bin/fake-dib (not imported from builder-env.ts, which would start the shared loopback cloud this test does not use). */
const FAKE_DIB = path.resolve('test/fixtures/bin/fake-dib');
const run = promisify(execFile);

/**
 * Secrets of the run, each distinctive so a find is never a coincidence: an all-digit password
 * left unquoted in clouds.yaml (a config error), the password of a cloud whose Keystone echoes
 * the request in its 401, and the token of a cloud whose Glance echoes the request headers.
 */
const DIGITS_PW = String(randomInt(1_000_000_000, 9_999_999_999));
const ECHO_PW = `Echo-Pw-${randomBytes(6).toString('hex')}`;
const TOKEN = `Tok-${randomBytes(12).toString('hex')}`;
const SECRETS = { 'unquoted all-digit password': DIGITS_PW, 'password echoed by Keystone': ECHO_PW, 'token echoed by Glance': TOKEN };

/** Every file under `dir` (logs, build logs, the SQLite store with its WAL), as text. */
async function filesUnder(dir: string): Promise<Array<[string, string]>> {
  const out: Array<[string, string]> = [];
  for (const entry of await readdir(dir, { recursive: true })) {
    const file = path.join(dir, entry);
    const s = await stat(file).catch(() => undefined);
    if (!s?.isFile() || s.size > 64 * 1024 * 1024 || entry.startsWith('images/')) continue;
    out.push([entry, await readFile(file, 'latin1')]);
  }
  return out;
}

/** A reason shortened for the report, keeping where a secret was redacted. */
function excerpt(reason: string): string {
  const r = reason.replace(/\s+/g, ' ');
  const at = r.indexOf('<redacted>');
  return at > 90 ? `${r.slice(0, 60)} … ${r.slice(at - 40, at + 12)}` : r.slice(0, 110);
}

describe('faults: secrets in failures', () => {
  after(() => assert.deepEqual(runningProcesses().map((p) => p.name), []));

  it('no configured secret appears in any log line, store record, CLI or web output after config and cloud-echo failures', { timeout: 240_000 }, async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-secrets-'));
    let gearmand: GearmandHandle | undefined;
    let cloud: ScriptedCloud | undefined;
    let store: Store | undefined;
    const procs: TrackedProcess[] = [];
    try {
      [gearmand, cloud] = await Promise.all([startGearmand(), ScriptedCloud.start()]);
      const c = cloud;
      // Keystone that echoes the request (password and all) in its 401, as JSON and as text.
      c.answer('POST', /^\/echo-json\/v3\/auth\/tokens$/, (req: SeenRequest) => ({ status: 401, body: { error: { code: 401, message: `The request you have made requires authentication: ${req.body}`, title: 'Unauthorized' } } }));
      c.answer('POST', /^\/echo-text\/v3\/auth\/tokens$/, (req: SeenRequest) => ({ status: 400, body: `400 Bad Request\n\nmalformed request ${req.body}` }));
      // Keystone that authenticates with a distinctive token, and a Glance that echoes the request's headers.
      c.answer('POST', /^\/v3\/auth\/tokens$/, () => ({ ...c.tokenAnswer(), headers: { 'X-Subject-Token': TOKEN } }));
      c.answer('POST', /^\/v2\/images$/, (req: SeenRequest) => ({ status: 400, body: `Bad image request; headers were: ${JSON.stringify(req.headers)} X-Auth-Token=${String(req.headers['x-auth-token'])}` }));
      const auth = (url: string, password: string): string =>
        `    auth: {auth_url: "${url}", username: demo, password: ${password}, project_name: demo, user_domain_name: Default, project_domain_name: Default}\n    region_name: ${SCRIPTED_REGION}\n`;
      const cloudsFile = path.join(dir, 'clouds.yaml');
      await writeFile(cloudsFile, `clouds:\n  digits:\n${auth(`${c.url}/v3`, DIGITS_PW)}  echo-json:\n${auth(`${c.url}/echo-json/v3`, `"${ECHO_PW}"`)}`
        + `  echo-text:\n${auth(`${c.url}/echo-text/v3`, `"${ECHO_PW}"`)}  token-echo:\n${auth(`${c.url}/v3`, 'plain-password')}`);

      const webPort = await freePort();
      const providers = ['digits', 'echo-json', 'echo-text', 'token-echo'].map((cl) => ({
        name: `p-${cl}`, driver: 'openstack', cloud: cl, 'image-format': 'raw', diskimages: [{ name: 'sec' }],
      }));
      const configPath = path.join(dir, 'nodepool.yaml');
      await mkdir(path.join(dir, 'state'));
      await writeFile(configPath, JSON.stringify({
        'gearman-servers': [{ host: '127.0.0.1', port: gearmand.port }],
        'state-dir': path.join(dir, 'state'), 'images-dir': path.join(dir, 'images'), 'build-log-dir': path.join(dir, 'build-logs'),
        'clouds-file': cloudsFile,
        'image-lifecycle': { interval: 1, 'retry-delay': 1, 'max-retry-delay': 2, 'leak-check-interval': 1 },
        launcher: { 'session-ttl': 3 },
        webapp: { port: webPort, 'listen-address': '127.0.0.1' },
        diskimages: [{ name: 'sec', elements: ['fake-element'], release: 'bookworm', 'dib-cmd': FAKE_DIB, formats: ['raw'] }],
        providers,
      }));
      await mkdir(path.join(dir, 'images'));
      store = await openStore(loadConfig(configPath));
      const env = { ...process.env, NODEPOOL_CONFIG: '' };
      procs.push(startProcess('nodepool-builder', process.execPath, [
        ...nodeScript('bin/nodepool-builder.ts'), '-c', configPath, '--hostname', 'builder-secrets', '--shutdown-timeout', '2', '--log-level', 'debug',
      ], { cwd: ROOT, logFile: path.join(dir, 'builder.log'), env }));
      procs.push(startProcess('nodepool-server', process.execPath, [
        ...nodeScript('bin/nodepool-server.ts'), '-c', configPath, '--hostname', 'server-secrets', '--log-level', 'debug',
      ], { cwd: ROOT, logFile: path.join(dir, 'server.log'), env }));

      // Each provider's upload fails at least twice (the retry goes through the same path).
      const t0 = Date.now();
      const st = store;
      const uploads = await waitFor(async () => {
        for (const p of procs) if (!p.alive()) throw new Error(`${p.name} exited; see ${dir}/${p.name === 'nodepool-server' ? 'server' : 'builder'}.log`);
        const all = await st.listUploads();
        const failed = providers.map((p) => all.filter((u) => u.provider === p.name && u.state === 'failed').length);
        return failed.every((n) => n >= 2) ? all : undefined;
      }, { timeoutMs: 150_000, what: 'two failed uploads for each provider', intervalMs: 250 });
      const failMs = Date.now() - t0;
      // Both Keystones saw the password and Glance the token: the echoes really carried them.
      assert.ok(c.seen('POST', /^\/echo-json\//).some((r) => r.body.includes(ECHO_PW)), 'the echoing Keystone got the password');
      assert.ok(c.seen('POST', /^\/v2\/images$/).some((r) => r.headers['x-auth-token'] === TOKEN), 'the echoing Glance got the token');

      // Everything a person or a program can read.
      const places: Array<[string, string]> = [];
      const cli = async (args: string[]): Promise<void> => {
        const r = await run(process.execPath, [...nodeScript('bin/nodepool.ts'), '-c', configPath, ...args], { cwd: ROOT, env })
          .catch((e: { stdout?: string; stderr?: string; code?: number }) => ({ stdout: e.stdout ?? '', stderr: `${e.stderr ?? ''} (exit ${e.code})` }));
        places.push([`nodepool ${args.join(' ')}`, `${r.stdout}\n${r.stderr}`]);
      };
      for (const args of [['image-list'], ['image-list', '--json'], ['dib-image-list'], ['dib-image-list', '--json'], ['list'], ['config-validate']]) await cli(args);
      for (const route of ['/image-list', '/dib-image-list', '/api/image-list', '/api/dib-image-list', '/api/image-list.json', '/dashboard.json', '/metrics', '/']) {
        const res = await fetch(`http://127.0.0.1:${webPort}${route}`, { headers: { Accept: route === '/' ? 'text/html' : '*/*' } });
        places.push([`GET ${route} (${res.status})`, await res.text()]);
      }
      places.push(['store: builds and uploads', JSON.stringify({ builds: await st.listBuilds(), uploads })]);
      for (const p of procs) await p.stop();
      for (const [file, text] of await filesUnder(dir)) if (file !== 'clouds.yaml') places.push([file, text]);

      const found: string[] = [];
      for (const [place, text] of places) {
        for (const [what, secret] of Object.entries(SECRETS)) if (text.includes(secret)) found.push(`${what} in ${place}`);
      }
      const reasons = uploads.filter((u) => u.state === 'failed').map((u) => `${u.provider}: ${(u.reason ?? '').replaceAll(dir, '<dir>').replaceAll(c.url, '<cloud>')}`);
      const byProvider = providers.map((p) => reasons.find((r) => r.startsWith(`${p.name}:`)) ?? `${p.name}: (none)`);
      recordFault({
        scenario: 'secrets in failures (config, cloud echo)', runs: uploads.filter((u) => u.state === 'failed').length,
        recovered: uploads.filter((u) => u.state === 'failed' && u.reason).length, lost: 0, leaked: found.length, recoverMs: null,
        notes: `${places.length} places searched (server and builder logs, build logs, the SQLite store files, 6 CLI outputs, 5 web pages) for 3 secrets; every provider failed twice within ${(failMs / 1000).toFixed(1)} s; `
          + `failed uploads said: ${byProvider.map(excerpt).join(' | ')}`,
      });
      assert.deepEqual(found, [], `secrets found (dir ${dir})`);
      // The failures still say what went wrong.
      assert.match(byProvider[0] ?? '', /password: expected string, got a number \(quote it in YAML\)/);
      assert.match(byProvider[0] ?? '', /\(quote it in YAML\)/);
      // Redaction takes the secrets only: user and project names still read.
      assert.match(byProvider[1] ?? '', /Keystone authentication failed for user 'demo' in project 'demo' at .*401.*<redacted>/);
      assert.match(byProvider[2] ?? '', /Keystone authentication failed for user 'demo' .*400.*<redacted>/);
      assert.match(byProvider[3] ?? '', /Glance POST \/v2\/images failed with 400; cloud said: .*<redacted>/);
    } finally {
      for (const p of procs) await p.stop();
      await store?.close();
      await cloud?.stop();
      await gearmand?.stop();
      if (!process.env.NODEPOOL_FAULTS_KEEP) await rm(dir, { recursive: true, force: true });
    }
  });

  it("keeps the clouds.yaml password out of a just-started builder's first failed build: its log, WORK_FAIL, reason, /api/build/<id>/log and dib-image-list", { timeout: 240_000 }, async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-early-secret-'));
    // No space: fake-dib's FAKE_DIB_REQUIRE_ENV splits on spaces.
    const PW = `Early-Pw-${randomBytes(8).toString('hex')}`;
    let gearmand: GearmandHandle | undefined;
    let cloud: ScriptedCloud | undefined;
    let store: Store | undefined;
    const procs: TrackedProcess[] = [];
    try {
      [gearmand, cloud] = await Promise.all([startGearmand(), ScriptedCloud.start()]);
      const cloudsFile = path.join(dir, 'clouds.yaml');
      await writeFile(cloudsFile, `clouds:\n  early:\n    auth: {auth_url: "${cloud.url}/v3", username: demo, password: "${PW}", project_name: demo}\n    region_name: ${SCRIPTED_REGION}\n`);
      const webPort = await freePort();
      const configPath = path.join(dir, 'nodepool.yaml');
      await mkdir(path.join(dir, 'state'));
      await mkdir(path.join(dir, 'images'));
      await writeFile(configPath, JSON.stringify({
        'gearman-servers': [{ host: '127.0.0.1', port: gearmand.port }],
        'state-dir': path.join(dir, 'state'), 'images-dir': path.join(dir, 'images'), 'build-log-dir': path.join(dir, 'build-logs'),
        'clouds-file': cloudsFile,
        'image-lifecycle': { interval: 1, 'retry-delay': 1, 'max-retry-delay': 2 },
        webapp: { port: webPort, 'listen-address': '127.0.0.1' },
        // The build prints the password (as a DIB element echoing a credential would) and fails.
        diskimages: [{
          name: 'early', elements: ['fake-element'], release: 'bookworm', 'dib-cmd': FAKE_DIB, formats: ['raw'],
          'env-vars': { FAKE_DIB_REQUIRE_ENV: `DIB_CLOUD_PW=${PW}` },
        }],
        providers: [{ name: 'p-early', driver: 'openstack', cloud: 'early', 'image-format': 'raw', diskimages: [{ name: 'early' }] }],
      }));
      store = await openStore(loadConfig(configPath, { secrets: new SecretRegistry() }));
      const env = { ...process.env, NODEPOOL_CONFIG: '' };
      const t0 = Date.now();
      procs.push(startProcess('nodepool-builder', process.execPath, [
        ...nodeScript('bin/nodepool-builder.ts'), '-c', configPath, '--hostname', 'builder-early', '--shutdown-timeout', '2', '--log-level', 'debug',
      ], { cwd: ROOT, logFile: path.join(dir, 'builder.log'), env }));
      procs.push(startProcess('nodepool-server', process.execPath, [
        ...nodeScript('bin/nodepool-server.ts'), '-c', configPath, '--hostname', 'server-early', '--log-level', 'debug',
      ], { cwd: ROOT, logFile: path.join(dir, 'server.log'), env }));
      const st = store;
      const failed = await waitFor(async () => {
        for (const p of procs) if (!p.alive()) throw new Error(`${p.name} exited; see ${dir}`);
        const builds = (await st.listBuilds()).filter((b) => b.state === 'failed');
        return builds.length >= 1 ? builds : undefined;
      }, { timeoutMs: 150_000, what: 'the first build of early failed', intervalMs: 250 });
      const firstFailMs = Date.now() - t0;
      const build = failed[0];
      assert.ok(build);

      const places: Array<[string, string]> = [];
      const cli = async (args: string[]): Promise<void> => {
        const r = await run(process.execPath, [...nodeScript('bin/nodepool.ts'), '-c', configPath, ...args], { cwd: ROOT, env })
          .catch((e: { stdout?: string; stderr?: string; code?: number }) => ({ stdout: e.stdout ?? '', stderr: `${e.stderr ?? ''} (exit ${e.code})` }));
        places.push([`nodepool ${args.join(' ')}`, `${r.stdout}\n${r.stderr}`]);
      };
      for (const args of [['dib-image-list'], ['dib-image-list', '--json']]) await cli(args);
      // A failed build is deleted within a few passes and built anew: read the log of whichever failed one is there.
      let last = '';
      const [logRoute, got] = await waitFor(async () => {
        for (const b of (await st.listBuilds()).filter((x) => x.state === 'failed')) {
          failed.push(...(failed.some((f) => f.id === b.id) ? [] : [b]));
          const route = `/api/build/${b.id}/log`;
          const res = await fetch(`http://127.0.0.1:${webPort}${route}`);
          const text = await res.text();
          last = `${route} ${res.status}: ${text.slice(0, 300)}`;
          if (res.status === 200 && text.includes('DIB_CLOUD_PW=')) return [route, text] as const;
        }
        return undefined;
      }, { timeoutMs: 60_000, what: "/api/build/<id>/log serves a failed build's log" }).catch((err: Error) => assert.fail(`${err.message}; last answer ${last}`));
      places.push([`GET ${logRoute}`, got]);
      for (const route of ['/api/dib-image-list', '/api/dib-image-list.json', '/dashboard.json']) {
        const res = await fetch(`http://127.0.0.1:${webPort}${route}`);
        places.push([`GET ${route} (${res.status})`, await res.text()]);
      }
      places.push(['store: reasons of the failed builds (the WORK_FAIL text)', failed.map((b) => b.reason ?? '').join('\n')]);
      for (const p of procs) await p.stop();
      for (const [file, text] of await filesUnder(dir)) if (file !== 'clouds.yaml' && file !== 'nodepool.yaml') places.push([file, text]);

      const found = places.filter(([, text]) => text.includes(PW)).map(([place]) => place);
      const buildLog = places.filter(([place]) => place.startsWith('build-logs/')).map(([, text]) => text).join('\n');
      recordFault({
        scenario: "secrets in a just-started builder's first failed build", runs: failed.length,
        recovered: failed.filter((b) => (b.reason ?? '').includes('<redacted>') || !(b.reason ?? '').includes('DIB_CLOUD_PW')).length, lost: 0, leaked: found.length, recoverMs: null,
        notes: `the builder's first build failed ${(firstFailMs / 1000).toFixed(1)} s after start, before any cloud call, printing the clouds.yaml password; ${places.length} places searched `
          + '(builder and server logs, the build log, the SQLite store, the stored reasons, /api/build/<id>/log, 2 dib-image-list outputs, 3 web pages); '
          + `reason: ${excerpt((build.reason ?? '').replaceAll(dir, '<dir>'))}`,
      });
      assert.deepEqual(found, [], `the password was found (dir ${dir})`);
      // fake-dib really printed it: the line is there, the password replaced.
      assert.match(buildLog, /expected DIB_CLOUD_PW=<redacted>/);
    } finally {
      for (const p of procs) await p.stop();
      await store?.close();
      await cloud?.stop();
      await gearmand?.stop();
      if (!process.env.NODEPOOL_FAULTS_KEEP) await rm(dir, { recursive: true, force: true });
    }
  });
});
