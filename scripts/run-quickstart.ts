/**
 * `make run`: the image system on one host with real parts — gearmand on loopback, a loopback
 * Keystone + Glance, nodepool-server and one nodepool-builder — with config/quickstart.yaml.
 * The server builds debian-bookworm (the real DIB where the machine allows it) and uploads it
 * to two providers (qcow2 as built, raw converted by qemu-img); this script follows the state
 * store, prints `nodepool dib-image-list` and `image-list`, and runs until Ctrl-C, then stops
 * all it started. Every run starts afresh (state, images and cloud under .run/quickstart).
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { loadConfig } from '../lib/config/load.js';
import { imageTargets } from '../lib/drivers/config-registry.js';
import { waitFor } from '../lib/lifecycle.js';
import { openStore } from '../lib/store/open-store.js';
import { bookwormDibEnv } from '../test/support/debian-mirror.js';
import { startGearmand } from '../test/support/gearmand.js';
import { startLoopbackCloud } from '../test/support/openstack.js';
import { startProcess } from '../test/support/processes.js';
import { startSshd } from '../test/support/sshd.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const DIR = path.join(ROOT, '.run', 'quickstart');
const SYSTEM_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const say = (s: string): void => console.log(`[quickstart] ${s}`);
const run = promisify(execFile);

/** Why the real DIB cannot run here, or undefined when it can. */
function realDibUnavailable(): string | undefined {
  if (process.env.QUICKSTART_DIB === 'fake') return 'QUICKSTART_DIB=fake was given';
  if (process.getuid?.() !== 0) return 'DIB needs root (loop devices and mounts)';
  if (!existsSync('/dev/loop-control')) return 'this machine has no loop devices';
  if (!existsSync('/usr/bin/disk-image-create')) return 'disk-image-create is not installed';
  try {
    bookwormDibEnv();
  } catch (err) {
    return (err as Error).message;
  }
  return undefined;
}

for (const sub of ['state', 'images', 'logs', 'cloud']) await rm(path.join(DIR, sub), { recursive: true, force: true });
await mkdir(DIR, { recursive: true });
const stops: Array<() => Promise<void>> = [];
let stopping = false;
async function shutdown(code: number): Promise<never> {
  if (!stopping) {
    stopping = true;
    say('stopping everything this started');
    for (const stop of stops.reverse()) await stop().catch((e: Error) => say(`stop failed: ${e.message}`));
  }
  process.exit(code);
}
process.on('SIGINT', () => void shutdown(0));
process.on('SIGTERM', () => void shutdown(0));

try {
  say('starting gearmand and the loopback Keystone + Glance');
  const gearmand = await startGearmand();
  stops.push(() => gearmand.stop());
  const cloud = await startLoopbackCloud({ dir: path.join(DIR, 'cloud') });
  stops.push(() => cloud.stop());
  say(`gearmand on 127.0.0.1:${gearmand.port}; Keystone ${cloud.authUrl}; Glance on 127.0.0.1:${cloud.glancePort} (up in ${(cloud.startupMs / 1000).toFixed(1)} s)`);

  const sshd = await startSshd({ addresses: ['127.0.0.1:0', '127.0.0.2:0'].map((a) => a.replace(':0', `:${20000 + Math.floor(Math.random() * 20000)}`)) });
  stops.push(() => sshd.stop());
  say(`sshd for the static provider on ${sshd.addresses.map((a) => `${a.host}:${a.port}`).join(', ')}`);

  const whyNot = realDibUnavailable();
  const dibCmd = whyNot ? path.join(ROOT, 'test/fixtures/bin/fake-dib') : 'disk-image-create';
  say(whyNot ? `using the fake disk-image-create: ${whyNot}` : 'using the real diskimage-builder (debian-minimal bookworm, about 3 minutes)');
  const template = await readFile(path.join(ROOT, 'config/quickstart.yaml'), 'utf8');
  const configPath = path.join(DIR, 'nodepool.yaml');
  await writeFile(configPath, template
    .replaceAll('@@GEARMAN_PORT@@', String(gearmand.port))
    .replaceAll('@@DIR@@', DIR)
    .replaceAll('@@CLOUDS_YAML@@', cloud.cloudsYamlPath)
    .replaceAll('@@STATIC_NODES@@', JSON.stringify(sshd.addresses.map((a) => ({
      name: a.host, 'connection-port': a.port, labels: ['static-host'], 'host-key': sshd.hostKey('ed25519'), 'max-parallel-jobs': 2,
    }))))
    .replaceAll('@@DIB_CMD@@', dibCmd)
    .replaceAll('@@DIB_ENV@@', JSON.stringify(whyNot ? { FAKE_DIB_DELAY: '0.3', FAKE_DIB_SIZE_MIB: '64' } : bookwormDibEnv())));
  const config = loadConfig(configPath);

  const daemon = (name: string, bin: string, extra: string[]): void => {
    const logFile = path.join(DIR, `${name}.log`);
    const p = startProcess(name, process.execPath, ['--import', 'tsx', path.join(ROOT, bin), '-c', configPath, ...extra],
      { cwd: ROOT, logFile, env: { ...process.env, PATH: SYSTEM_PATH, NODEPOOL_CONFIG: '' } });
    stops.push(() => p.stop(60_000));
    say(`${name} started (log: ${logFile})`);
  };
  daemon('nodepool-builder', 'bin/nodepool-builder.ts', ['--hostname', 'quickstart-builder']);
  daemon('nodepool-server', 'bin/nodepool-server.ts', ['--hostname', 'quickstart-server']);

  const store = await openStore(config);
  stops.push(() => store.close());
  const providers = config.providers.filter((p) => imageTargets(p).length > 0).map((p) => p.name);
  let last = '';
  const timeoutMs = (config.diskimages[0]?.buildTimeout ?? 1800) * 1000 + 600_000;
  await waitFor(async () => {
    const builds = await store.listBuilds();
    const uploads = await store.listUploads();
    const line = [
      ...builds.map((b) => `build ${b.id} ${b.state}${b.progress ? ` ${b.progress.numerator}/${b.progress.denominator}` : ''}${b.reason ? ` (${b.reason})` : ''}`),
      ...uploads.map((u) => `upload ${u.id} to ${u.provider} ${u.state}${u.progress ? ` ${Math.floor((100 * u.progress.numerator) / Math.max(1, u.progress.denominator))}%` : ''}${u.reason ? ` (${u.reason})` : ''}`),
    ].join('; ');
    if (line && line !== last) say(line);
    last = line;
    return providers.every((p) => uploads.some((u) => u.provider === p && u.state === 'ready'));
  }, { timeoutMs, what: 'the first build to be ready and uploaded to every provider', intervalMs: 1000 });

  for (const cmd of ['dib-image-list', 'image-list']) {
    const out = await run(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bin/nodepool.ts'), '-c', configPath, cmd], { cwd: ROOT });
    say(`nodepool ${cmd}`);
    process.stdout.write(out.stdout);
  }
  const nodepool = async (...args: string[]): Promise<string> =>
    (await run(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bin/nodepool.ts'), '-c', configPath, ...args], { cwd: ROOT })).stdout;
  say('nodepool request static-host static-host --wait');
  const got = JSON.parse(await nodepool('request', 'static-host', 'static-host', '--wait', '--timeout', '60', '--json')) as Array<{ id: string }>;
  say('nodepool list');
  process.stdout.write(await nodepool('list'));
  for (const n of got) await nodepool('release', n.id);
  say(`released nodes ${got.map((n) => n.id).join(', ')}: their hosts come back as new ready nodes`);
  say(`images in ${path.join(DIR, 'images')}; Glance store ${cloud.imagesDir}; try: node --import tsx bin/nodepool.ts -c ${configPath} image-build debian-bookworm --follow`);
  say('running; press Ctrl-C to stop');
  await new Promise(() => undefined);
} catch (err) {
  console.error(`[quickstart] failed: ${(err as Error).message}`);
  await shutdown(1);
}
