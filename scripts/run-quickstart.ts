/**
 * `make run`: the image system on one host with real parts — gearmand on loopback, a loopback
 * Keystone + Glance, and one nodepool-builder — then one image built and uploaded to two
 * providers (qcow2 as built, raw converted by qemu-img). Until nodepool-server exists, this
 * script submits the Gearman jobs the server will submit. Runs until Ctrl-C, then stops all
 * it started.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { loadConfig } from '../lib/config/load.js';
import { adminWorkers } from '../lib/gearman/admin.js';
import { GearmanClient } from '../lib/gearman/client.js';
import { fn } from '../lib/gearman/functions.js';
import { waitFor } from '../lib/lifecycle.js';
import { bookwormDibEnv } from '../test/support/debian-mirror.js';
import { startGearmand } from '../test/support/gearmand.js';
import { startLoopbackCloud } from '../test/support/openstack.js';
import { startProcess } from '../test/support/processes.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const DIR = path.join(ROOT, '.run', 'quickstart');
const say = (s: string): void => console.log(`[quickstart] ${s}`);

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
  const [gearmand, cloud] = await Promise.all([startGearmand(), startLoopbackCloud({ dir: path.join(DIR, 'cloud') })]);
  stops.push(() => cloud.stop(), () => gearmand.stop());
  say(`gearmand on 127.0.0.1:${gearmand.port}; Keystone ${cloud.authUrl}; Glance on 127.0.0.1:${cloud.glancePort} (up in ${(cloud.startupMs / 1000).toFixed(1)} s)`);

  const whyNot = realDibUnavailable();
  const dibCmd = whyNot ? path.join(ROOT, 'test/fixtures/bin/fake-dib') : 'disk-image-create';
  say(whyNot ? `using the fake disk-image-create: ${whyNot}` : 'using the real diskimage-builder (debian-minimal bookworm, about 3 minutes)');
  const template = await readFile(path.join(ROOT, 'config/quickstart.yaml'), 'utf8');
  const configPath = path.join(DIR, 'nodepool.yaml');
  await writeFile(configPath, template
    .replaceAll('@@GEARMAN_PORT@@', String(gearmand.port))
    .replaceAll('@@DIR@@', DIR)
    .replaceAll('@@CLOUDS_YAML@@', cloud.cloudsYamlPath)
    .replaceAll('@@DIB_CMD@@', dibCmd)
    .replaceAll('@@DIB_ENV@@', JSON.stringify(whyNot ? { FAKE_DIB_DELAY: '0.3', FAKE_DIB_SIZE_MIB: '64' } : bookwormDibEnv())));
  loadConfig(configPath);

  const builderLog = path.join(DIR, 'builder.log');
  const builder = startProcess('nodepool-builder', process.execPath, [
    '--import', 'tsx', path.join(ROOT, 'bin/nodepool-builder.ts'), '-c', configPath, '--hostname', 'quickstart-builder',
  ], { cwd: ROOT, logFile: builderLog, env: { ...process.env, PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' } });
  stops.push(() => builder.stop(60_000));
  await waitFor(async () => (await adminWorkers(gearmand.address)).some((w) => w.functions.includes(fn.imageBuild('debian-bookworm'))),
    { timeoutMs: 30_000, what: 'nodepool-builder to register image-build:debian-bookworm' });
  say(`nodepool-builder registered (log: ${builderLog})`);

  const client = new GearmanClient({ servers: [gearmand.address], clientId: 'quickstart' });
  await client.start();
  stops.push(() => client.stop());
  const id = `debian-bookworm-${String(Math.floor(Date.now() / 1000)).padStart(10, '0')}`;
  say(`submitting image-build:debian-bookworm for ${id}`);
  const build = client.submit(fn.imageBuild('debian-bookworm'), JSON.stringify({ 'image-id': id }), {
    unique: id, onStatus: (n, d) => say(`  build progress ${n}/${d}`),
  });
  const built = await build.result;
  if (built.type !== 'complete') throw new Error(`build failed: ${Buffer.concat(built.warnings).toString() || built.type}`);
  say(`built: ${built.data.toString()}`);
  for (const provider of ['loopback', 'loopback-raw']) {
    let lastPct = -1;
    const up = await client.submit(fn.imageUpload(id), JSON.stringify({ 'image-name': 'debian-bookworm', provider }), {
      onStatus: (n, d) => {
        const pct = Math.floor((100 * n) / Math.max(1, d));
        if (pct >= lastPct + 25) { lastPct = pct; say(`  upload to ${provider}: ${pct}%`); }
      },
    }).result;
    if (up.type !== 'complete') throw new Error(`upload to ${provider} failed: ${Buffer.concat(up.warnings).toString() || up.type}`);
    say(`uploaded to ${provider}: ${up.data.toString()}`);
  }
  const held = (await adminWorkers(gearmand.address)).filter((w) => w.functions.includes(fn.imageUpload(id)));
  say(`gearmand workers advertising ${fn.imageUpload(id)}: ${held.map((w) => w.clientId).join(', ')}`);
  say(`images in ${path.join(DIR, 'images')}; Glance store ${cloud.imagesDir}`);
  say('running; press Ctrl-C to stop');
  await new Promise(() => undefined);
} catch (err) {
  console.error(`[quickstart] failed: ${(err as Error).message}`);
  await shutdown(1);
}
