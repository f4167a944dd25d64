/**
 * `make run`: a whole pool on one host with real parts — gearmand on loopback, a loopback
 * Keystone + Glance, a static provider on a private sshd, a `qemu` provider, nodepool-server
 * and one nodepool-builder — with config/quickstart.yaml. The server builds debian-bookworm
 * (a bootable VM image with the real DIB where the machine allows it) and uploads it to three
 * providers (qcow2 as built, raw converted by qemu-img, and the qemu provider, which first
 * validates it by booting a VM from it). This script follows the state store, prints
 * `nodepool dib-image-list` and `image-list`, requests static hosts and a VM, logs into the VM
 * over SSH, prints the command that does so, and runs until Ctrl-C, then stops all it started
 * (VMs included). Every run starts afresh (state, images and cloud under .run/quickstart).
 * nodepool-server serves the operator console on a free 127.0.0.1 port; its write API trusts
 * a local HS256 authenticator whose secret is made for this run and kept only in the run's
 * config file (mode 0600). The console's URL and an operator token are printed as soon as it
 * answers, and again at the end (scripts/quickstart-config.ts).
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { promisify } from 'node:util';
import { loadConfig } from '../lib/config/load.js';
import { imageTargets } from '../lib/drivers/config-registry.js';
import { VmHost } from '../lib/drivers/qemu/vm-host.js';
import { waitFor } from '../lib/lifecycle.js';
import { createRootLogger } from '../lib/log.js';
import { openStore } from '../lib/store/open-store.js';
import { bookwormDibEnv } from '../test/support/debian-mirror.js';
import { DIB_CMD, qemuImageEnv } from '../test/support/qemu-image.js';
import { startGearmand } from '../test/support/gearmand.js';
import { startLoopbackCloud } from '../test/support/openstack.js';
import { freePort, startProcess } from '../test/support/processes.js';
import { startSshd } from '../test/support/sshd.js';
import {
  consoleLines, consoleToken, consoleUrl, newAuthSecret, quickstartConfigText, withQemuBlock, writeQuickstartConfig,
} from './quickstart-config.js';

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

/** Why the qemu provider is left out, or undefined when it runs. */
function qemuUnavailable(dibUnavailable: string | undefined): string | undefined {
  if (dibUnavailable) return 'the fake disk-image-create makes a file that does not boot';
  for (const bin of ['qemu-system-x86_64', 'qemu-img', 'genisoimage', 'ssh-keygen']) {
    if (!['/usr/bin', '/usr/sbin', '/bin'].some((d) => existsSync(path.join(d, bin)))) return `${bin} is not installed`;
  }
  return undefined;
}

/** The HTTP status of a GET of `url` (5 s at most). */
function httpStatus(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { timeout: 5000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer from ${url} in 5 s`)));
    req.on('error', reject);
  });
}

/**
 * Stops and removes every VM of the quick start's qemu provider. VMs outlive a launcher
 * restart by design, so the server's stop leaves them running; this runs after it, and at the
 * start for VMs a killed earlier run left behind.
 */
async function removeVms(provider: string): Promise<void> {
  const vms = new VmHost({
    stateDir: path.join(DIR, 'vm-images', 'vms'), provider, qemuBinary: 'qemu-system-x86_64',
    log: createRootLogger({ stream: process.stdout }).child({ component: 'quickstart' }),
  });
  for (const vm of await vms.list()) await vms.destroy(vm.record.id);
}

await removeVms('local-vms');
for (const sub of ['state', 'images', 'logs', 'cloud', 'vm-images', 'ssh']) await rm(path.join(DIR, sub), { recursive: true, force: true });
for (const log of ['nodepool-builder.log', 'nodepool-server.log']) await rm(path.join(DIR, log), { force: true });
await mkdir(DIR, { recursive: true });
const stops: Array<() => Promise<void>> = [];
let signals = 0;
async function shutdown(code: number): Promise<never> {
  say('stopping everything this started');
  for (const stop of stops.reverse()) await stop().catch((e: Error) => say(`stop failed: ${e.message}`));
  process.exit(code);
}
/** The first Ctrl-C (or TERM) stops everything in order; repeats while that runs are ignored until the third, which exits at once. */
function onSignal(): void {
  signals += 1;
  if (signals === 1) void shutdown(0);
  else if (signals === 2) say('still stopping (the VMs and daemons this started); Ctrl-C once more exits at once and may leave them running');
  else process.exit(130);
}
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);

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
  // The real DIB runs through test/support/dib-cmd: a `vm` image needs kpartx, which it shims
  // in a private mount namespace where the kernel has no device-mapper (docs/drivers/qemu.md).
  const dibCmd = whyNot ? path.join(ROOT, 'test/fixtures/bin/fake-dib') : DIB_CMD;
  say(whyNot ? `using the fake disk-image-create: ${whyNot}` : 'using the real diskimage-builder (a bootable debian-minimal bookworm VM image, about 4 minutes)');
  const noQemu = qemuUnavailable(whyNot);
  say(noQemu ? `the qemu provider local-vms is left out: ${noQemu}` : 'the qemu provider local-vms validates each upload by booting it, then serves VM nodes');
  const sshKey = path.join(DIR, 'ssh', 'id_ed25519');
  if (!noQemu) {
    await mkdir(path.dirname(sshKey), { recursive: true });
    await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'nodepool-quickstart', '-f', sshKey]);
  }
  const template = withQemuBlock(await readFile(path.join(ROOT, 'config/quickstart.yaml'), 'utf8'), !noQemu);
  const configPath = path.join(DIR, 'nodepool.yaml');
  const webPort = await freePort();
  await writeQuickstartConfig(configPath, quickstartConfigText(template, {
    gearmanPort: gearmand.port, root: ROOT, dir: DIR, cloudsYaml: cloud.cloudsYamlPath,
    staticNodes: sshd.addresses.map((a) => ({
      name: a.host, 'connection-port': a.port, labels: ['static-host'], 'host-key': sshd.hostKey('ed25519'), 'max-parallel-jobs': 2,
    })),
    dibCmd, dibEnv: whyNot ? { FAKE_DIB_DELAY: '0.3', FAKE_DIB_SIZE_MIB: '64' } : qemuImageEnv(),
  }, { port: webPort, secret: newAuthSecret() }));
  const config = loadConfig(configPath);
  const url = consoleUrl(config.webapp.port);
  const token = await consoleToken(config.webapp.auth);
  // The token alone on its line, so that selecting the line copies just the token.
  const sayConsole = (): void => { for (const line of consoleLines({ url, token, configPath })) (line === token ? console.log : say)(line); };
  const vmProvider = config.providers.find((p) => p.driver === 'qemu');
  // Pushed before the daemons, so it runs after their stops.
  if (vmProvider) stops.push(() => removeVms(vmProvider.name));

  const daemon = (name: string, bin: string, extra: string[]): void => {
    const logFile = path.join(DIR, `${name}.log`);
    const p = startProcess(name, process.execPath, ['--import', 'tsx', path.join(ROOT, bin), '-c', configPath, ...extra],
      { cwd: ROOT, logFile, env: { ...process.env, PATH: SYSTEM_PATH, NODEPOOL_CONFIG: '' } });
    stops.push(() => p.stop(60_000));
    say(`${name} started (log: ${logFile})`);
  };
  daemon('nodepool-builder', 'bin/nodepool-builder.ts', ['--hostname', 'quickstart-builder']);
  daemon('nodepool-server', 'bin/nodepool-server.ts', ['--hostname', 'quickstart-server']);
  await waitFor(async () => (await httpStatus(url).catch(() => 0)) === 200, { timeoutMs: 120_000, what: `the console at ${url} to answer 200`, intervalMs: 500 });
  say('the console answers: watch the build there while this goes on');
  sayConsole();

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
  if (vmProvider) {
    say('nodepool request debian-vm --wait (QEMU boots a VM from the validated upload; a few minutes under TCG)');
    const [vm] = JSON.parse(await nodepool('request', 'debian-vm', '--wait', '--timeout', '1200', '--json')) as Array<{
      id: string; interfaceIp: string; connectionPort: number; username: string; hostKeys: string[];
    }>;
    if (!vm) throw new Error('the request for debian-vm was fulfilled without a node');
    const knownHosts = path.join(DIR, 'ssh', 'known_hosts');
    await writeFile(knownHosts, vm.hostKeys.map((k) => `[${vm.interfaceIp}]:${vm.connectionPort} ${k}\n`).join(''));
    const sshArgs = ['-i', sshKey, '-p', String(vm.connectionPort), '-o', `UserKnownHostsFile=${knownHosts}`, '-o', 'StrictHostKeyChecking=yes', `${vm.username}@${vm.interfaceIp}`];
    say('nodepool list');
    process.stdout.write(await nodepool('list'));
    const { stdout } = await run('ssh', [...sshArgs, '-o', 'BatchMode=yes', 'echo "logged into $(hostname): $(. /etc/os-release; echo $PRETTY_NAME), up $(cut -d. -f1 /proc/uptime) s"']);
    say(`ssh into node ${vm.id}: ${stdout.trim()}`);
    say(`log into the VM yourself: ssh ${sshArgs.join(' ')}`);
    say(`give it back with: node --import tsx bin/nodepool.ts -c ${configPath} release ${vm.id}`);
  }
  say(`images in ${path.join(DIR, 'images')}; Glance store ${cloud.imagesDir}${vmProvider ? `; VM images in ${path.join(DIR, 'vm-images')}` : ''}; try: node --import tsx bin/nodepool.ts -c ${configPath} image-build debian-bookworm --follow`);
  sayConsole();
  say('running; press Ctrl-C to stop');
  await new Promise(() => undefined);
} catch (err) {
  console.error(`[quickstart] failed: ${(err as Error).message}`);
  await shutdown(1);
}
