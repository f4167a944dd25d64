/**
 * The Nodepool 11 corpus (test/fixtures/nodepool11/) run, not just validated: each file as a
 * site has it, with only what points outside this machine rewritten (ZooKeeper hosts dropped
 * for the SQLite store, clouds pointed at the loopback cloud, paths into a temp dir, the DIB
 * command at the fake DIB, static hosts at a local sshd; the cloud is the loopback Nova cloud). The builder file and its secure file
 * run a real nodepool-server and nodepool-builder over a real gearmand, with `-s` and
 * `%(NODEPOOL_…)` from the environment: every concrete diskimage builds with the elements and
 * env-vars it inherits from its abstract parents, uploads reach Glance (the paused one does not),
 * delete-after-upload frees the formats no keep-formats keeps, and the secure value never shows
 * in a log. The launcher file (no gearman-servers) runs its providers without the image
 * lifecycle and serves its static pool.
 */
import assert from 'node:assert/strict';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import yaml from 'js-yaml';
import { loadConfig } from '../../../lib/config/load.js';
import { waitFor } from '../../../lib/lifecycle.js';
import type { BuildRecord, UploadRecord } from '../../../lib/store/models.js';
import { openStore } from '../../../lib/store/open-store.js';
import type { Store } from '../../../lib/store/store.js';
import { FAKE_DIB } from '../../support/builder-env.js';
import { startGearmand, type GearmandHandle } from '../../support/gearmand.js';
import { useNovaCloud, type NovaCloud } from '../../support/openstack-full.js';
import { freePort, startProcess, stopAllProcesses, type TrackedProcess } from '../../support/processes.js';
import { startSshd, type SshdHandle } from '../../support/sshd.js';
import { nodeScript } from '../../support/node-command.js';

const ROOT = path.resolve('.');
const FIXTURES = path.join(ROOT, 'test/fixtures/nodepool11');
const SECRET_TOKEN = 'corpus-registry-token-5c1d';
const ENV = { NODEPOOL_MIRROR_HOST: 'mirror.example.org', NODEPOOL_REG_TOKEN: SECRET_TOKEN };

type Doc = Record<string, unknown>;
type Entry = Record<string, unknown>;

const readDoc = async (name: string): Promise<Doc> => yaml.load(await readFile(path.join(FIXTURES, name), 'utf8')) as Doc;
const entries = (doc: Doc, key: string): Entry[] => (doc[key] as Entry[] | undefined) ?? [];
/** ZooKeeper points at the site's ensemble: these runs use the embedded SQLite store. */
const dropZooKeeper = (doc: Doc): void => { delete doc['zookeeper-servers']; delete doc['zookeeper-tls']; };

function daemon(name: string, bin: string, args: string[], logFile: string, env: Record<string, string> = {}): TrackedProcess {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...ENV, ...env };
  delete childEnv.NODEPOOL_CONFIG;
  return startProcess(name, process.execPath, [...nodeScript(`bin/${bin}.ts`), ...args, '--log-level', 'debug'],
    { cwd: ROOT, logFile, env: childEnv });
}

describe('the Nodepool 11 corpus, run', () => {
  let dir: string;
  let gearmand: GearmandHandle;
  let cloud: NovaCloud;
  let sshd: SshdHandle;
  const daemons: TrackedProcess[] = [];

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool11-corpus-'));
    // One listener per static host of launcher.yaml (each host is `name:port`, unique per provider).
    const ports = [await freePort(), await freePort(), await freePort()];
    [gearmand, cloud, sshd] = await Promise.all([startGearmand(), useNovaCloud(), startSshd({ addresses: ports.map((p) => `127.0.0.1:${p}`) })]);
  });
  after(async () => {
    await stopAllProcesses();
    await Promise.all([gearmand?.stop(), sshd?.stop()]);
    if (dir && !process.env.KEEP_CORPUS_DIR) await rm(dir, { recursive: true, force: true });
  });

  it('builder.yaml with secure.yaml: inherited builds, uploads, delete-after-upload, no secret in any log', async () => {
    const base = path.join(dir, 'builder');
    const doc = await readDoc('builder.yaml');
    dropZooKeeper(doc);
    Object.assign(doc, {
      'elements-dir': path.join(base, 'elements'),
      'images-dir': path.join(base, 'images'),
      'build-log-dir': path.join(base, 'logs'),
      'state-dir': path.join(base, 'state'),
      'gearman-servers': [{ host: '127.0.0.1', port: gearmand.port }],
      'clouds-file': cloud.cloudsFile,
      'image-lifecycle': { interval: 1 },
      webapp: { port: await freePort(), listen_address: '127.0.0.1' },
    });
    for (const d of entries(doc, 'diskimages')) {
      if (d['dib-cmd'] !== undefined || d.name === 'base') d['dib-cmd'] = FAKE_DIB;
      const env = d['env-vars'] as Record<string, string> | undefined;
      if (env?.TMPDIR) env.TMPDIR = path.join(base, 'dib_tmp');
      if (env?.DIB_IMAGE_CACHE) env.DIB_IMAGE_CACHE = path.join(base, 'dib_cache');
    }
    const hookLog = path.join(base, 'hook.log');
    const hook = path.join(base, 'post-upload');
    for (const p of entries(doc, 'providers')) {
      Object.assign(p, { cloud: cloud.cloud, 'region-name': cloud.region });
      if (p['post-upload-hook'] !== undefined) p['post-upload-hook'] = hook;
    }
    const secure = await readDoc('secure.yaml');
    dropZooKeeper(secure);
    await Promise.all(['elements', 'images', 'logs', 'dib_tmp', 'dib_cache'].map((d) => mkdir(path.join(base, d), { recursive: true })));
    await writeFile(hook, `#!/bin/sh\necho "$@" >> ${hookLog}\n`);
    await chmod(hook, 0o755);
    const configFile = path.join(base, 'nodepool.yaml');
    const secureFile = path.join(base, 'secure.conf');
    await writeFile(configFile, yaml.dump(doc));
    await writeFile(secureFile, yaml.dump(secure));

    const config = loadConfig(configFile, { env: ENV, secureFile });
    assert.deepEqual(config.diskimages.map((d) => d.name).sort(), ['debian-bookworm', 'debian-bookworm-arm64', 'ubuntu-jammy', 'ubuntu-noble']);
    const store: Store = await openStore(config);
    try {
      // The fake DIB refuses to build unless what every image inherits from the abstract `base`
      // (and the substituted mirror host) reached its environment.
      const requireEnv = { FAKE_DIB_REQUIRE_ENV: 'DIB_MIRROR_HOST=mirror.example.org DIB_SHOW_IMAGE_USAGE=1 DIB_DISABLE_APT_CLEANUP=1' };
      daemons.push(daemon('corpus-builder', 'nodepool-builder', ['-c', configFile, '-s', secureFile, '--hostname', 'nb01'], path.join(base, 'builder.log'), requireEnv));
      daemons.push(daemon('corpus-server', 'nodepool-server', ['-c', configFile, '-s', secureFile, '--hostname', 'nl01'], path.join(base, 'server.log')));

      const ready = await waitFor(async () => {
        const builds = (await store.listBuilds()).filter((b) => b.state === 'ready');
        const uploads = (await store.listUploads()).filter((u) => u.state === 'ready');
        const names = new Set(builds.map((b) => b.diskimage));
        // rax-dfw: jammy + bookworm (noble is paused there); linaro: arm64.
        return names.size === 4 && uploads.length >= 3 ? { builds, uploads } : undefined;
      }, { timeoutMs: 240_000, intervalMs: 500, what: 'every diskimage built and the three unpaused uploads ready' });
      const byImage = (name: string): BuildRecord => ready.builds.find((b) => b.diskimage === name) as BuildRecord;
      const uploadsOf = (name: string): UploadRecord[] => ready.uploads.filter((u) => u.diskimage === name);
      assert.deepEqual(uploadsOf('ubuntu-jammy').map((u) => u.provider), ['rax-dfw']);
      assert.deepEqual(uploadsOf('debian-bookworm').map((u) => u.provider), ['rax-dfw']);
      assert.deepEqual(uploadsOf('debian-bookworm-arm64').map((u) => u.provider), ['linaro-regionone']);
      assert.deepEqual((await store.listUploads()).filter((u) => u.diskimage === 'ubuntu-noble'), [], 'ubuntu-noble is paused on rax-dfw');
      // Inherited formats qcow2, raw, vhd from `base` (DIB builds qcow2 and raw; vhd is made by
      // qemu-img at upload time, lib/images/formats.ts); arm64 replaces them with raw.
      assert.deepEqual([...byImage('ubuntu-noble').formats].sort(), ['qcow2', 'raw']);
      assert.deepEqual([...byImage('debian-bookworm-arm64').formats].sort(), ['raw']);

      // Inherited elements in DIB's argv order, root first (the build log holds the command).
      const logs = await readdir(path.join(base, 'logs'));
      const jammyLog = logs.find((f) => f.startsWith(`${byImage('ubuntu-jammy').id}`));
      assert.ok(jammyLog, `a build log for ${byImage('ubuntu-jammy').id} in ${logs.join(', ')}`);
      const jammyText = await readFile(path.join(base, 'logs', jammyLog), 'utf8');
      assert.match(jammyText, /nodepool-base vm simple-init growroot infra-package-needs zuul-worker ubuntu-minimal/);

      // The post-upload hook ran as Nodepool runs it: <hook> <provider> <external id> <local file>.
      const hookLines = await waitFor(async () => {
        const text = await readFile(hookLog, 'utf8').catch(() => '');
        const lines = text.trim().split('\n').filter(Boolean);
        return lines.length >= 2 ? lines : undefined;
      }, { timeoutMs: 30_000, intervalMs: 200, what: 'the post-upload hook run for both rax-dfw uploads' });
      for (const u of [...uploadsOf('ubuntu-jammy'), ...uploadsOf('debian-bookworm')]) {
        const line = hookLines.find((l) => l.startsWith(`rax-dfw ${u.externalId} `));
        assert.ok(line, `a hook line for upload ${u.id} (${u.externalId}) in ${hookLines.join(' | ')}`);
        assert.match(line, new RegExp(`${u.buildId}\\.qcow2$`));
      }

      // delete-after-upload: jammy keeps only qcow2 (keep-formats); bookworm keeps nothing once
      // rax-dfw has its qcow2; arm64 (delete-after-upload: false over its parent's true) keeps raw.
      const imagesDir = path.join(base, 'images');
      const filesOf = async (id: string): Promise<string[]> => (await readdir(imagesDir))
        .filter((f) => f.startsWith(`${id}.`) && /\.(qcow2|raw|vhd)$/.test(f)).sort();
      await waitFor(async () => {
        const jammy = await filesOf(byImage('ubuntu-jammy').id);
        const bookworm = await filesOf(byImage('debian-bookworm').id);
        return jammy.join() === `${byImage('ubuntu-jammy').id}.qcow2` && bookworm.length === 0 ? true : undefined;
      }, { timeoutMs: 60_000, intervalMs: 500, what: 'delete-after-upload to free the raw of ubuntu-jammy and every format of debian-bookworm' });
      assert.deepEqual(await filesOf(byImage('debian-bookworm-arm64').id), [`${byImage('debian-bookworm-arm64').id}.raw`]);
      assert.deepEqual(await filesOf(byImage('ubuntu-noble').id), ['qcow2', 'raw'].map((f) => `${byImage('ubuntu-noble').id}.${f}`));

      // The secure file's REG_PASSWORD (with the substituted token) never reaches a log.
      for (const f of ['builder.log', 'server.log', ...logs.map((l) => path.join('logs', l))]) {
        const text = await readFile(path.join(base, f), 'utf8');
        assert.ok(!text.includes(SECRET_TOKEN), `${f} holds the secure token`);
      }
    } finally {
      // Only this test's daemons: sshd and gearmand serve the other test too.
      for (const d of daemons.splice(0)) await d.stop();
      await store.close();
    }
  });

  it('launcher.yaml: a launcher-only server runs its providers without the image lifecycle and serves the static pool', async () => {
    const base = path.join(dir, 'launcher');
    await mkdir(base, { recursive: true });
    const doc = await readDoc('launcher.yaml');
    dropZooKeeper(doc);
    const webPort = await freePort();
    Object.assign(doc, {
      'state-dir': path.join(base, 'state'),
      'images-dir': path.join(base, 'images'),
      'clouds-file': cloud.cloudsFile,
      webapp: { port: webPort, listen_address: '127.0.0.1' },
      launcher: { interval: 0.2, 'delete-interval': 0.5, 'cleanup-interval': 1 },
    });
    for (const p of entries(doc, 'providers')) {
      if (p.driver === undefined || p.driver === 'openstack') {
        Object.assign(p, { cloud: cloud.cloud, 'region-name': cloud.region });
        delete p['post-upload-hook'];
      }
      if (p.driver !== 'static') continue;
      const hosts = entries(p, 'pools').flatMap((pool) => entries(pool, 'nodes'));
      // Each host becomes one of the local sshd's listeners, with its real keys (checking stays as written).
      hosts.forEach((node, i) => Object.assign(node, { name: '127.0.0.1', 'connection-port': sshd.addresses[i]?.port, 'host-key': [...sshd.hostKeys] }));
    }
    const configFile = path.join(base, 'nodepool.yaml');
    await writeFile(configFile, yaml.dump(doc));
    const config = loadConfig(configFile, { env: ENV });
    const store: Store = await openStore(config);
    try {
      const log = path.join(base, 'server.log');
      daemons.push(daemon('corpus-launcher', 'nodepool-server', ['-c', configFile, '--hostname', 'nl01'], log));
      const health = await waitFor(async () => {
        const res = await fetch(`http://127.0.0.1:${webPort}/health/ready`, { headers: { Accept: 'application/json' } }).catch(() => undefined);
        return res?.status === 200 ? (await res.json()) as { imageLifecycle?: string } : undefined;
      }, { timeoutMs: 60_000, intervalMs: 250, what: 'the launcher-only server ready' });
      assert.equal(health.imageLifecycle, 'off (launcher-only: no gearman-servers)');
      const text = await readFile(log, 'utf8');
      assert.match(text, /launcher-only/);
      assert.match(text, /nodepool-id/, 'the deprecated nodepool-id key is named in a warning');

      const staticLabels = entries(doc, 'providers').filter((p) => p.driver === 'static')
        .flatMap((p) => entries(p, 'pools')).flatMap((pool) => entries(pool, 'nodes'))
        .flatMap((n) => (Array.isArray(n.labels) ? n.labels as string[] : String(n.labels).split(/\s+/)));
      // static-windows (winrm, no key checking) and static-switch (network_cli, keys scanned).
      const request = await store.createRequest({ labels: ['static-windows', 'static-switch'], requestor: 'corpus-test', tenantName: 'zuul' });
      const done = await waitFor(async () => {
        const r = await store.getRequest(request.id);
        return r && (r.state === 'fulfilled' || r.state === 'failed') ? r : undefined;
      }, { timeoutMs: 120_000, intervalMs: 200, what: `request ${request.id}` }).catch(async (err: Error) => {
        // What the server did instead (its log goes with the temp dir).
        const tail = (await readFile(log, 'utf8')).split('\n').filter((l) => !l.includes(' debug ')).slice(-40).join('\n');
        throw new Error(`${err.message}\nserver log (last lines):\n${tail}`);
      });
      assert.equal(done.state, 'fulfilled', done.reason ?? '');
      const [win, sw] = await Promise.all(done.nodes.map((id) => store.getNode(id)));
      assert.equal(win?.connectionType, 'winrm');
      assert.equal(win?.username, 'Administrator');
      assert.equal(win?.shellType, 'powershell');
      assert.equal(sw?.connectionType, 'network_cli');
      assert.deepEqual([...(sw?.hostKeys ?? [])].sort(), [...sshd.hostKeys].sort());
      assert.deepEqual(sw?.attributes, { 'executor-zone': 'lab' });
      assert.equal(sw?.tenantName, 'zuul');
      // No image lifecycle: nothing built, nothing uploaded.
      assert.deepEqual(await store.listBuilds(), []);
      const labels = await (await fetch(`http://127.0.0.1:${webPort}/label-list`, { headers: { Accept: 'application/json' } })).json() as Array<{ label: string }>;
      const served = new Set(labels.map((l) => l.label));
      for (const l of staticLabels) assert.ok(served.has(l), `label ${l} in /label-list ${[...served].join(', ')}`);
    } finally {
      // Only this test's daemons: sshd and gearmand serve the other test too.
      for (const d of daemons.splice(0)) await d.stop();
      await store.close();
    }
  });
});
