/**
 * The test runner behind `make test`: selects test files (all, `unit`, `integration`,
 * `contract` (the files running a contract suite), or paths), checks the machine has what they
 * need (test/support/preflight.ts), starts one shared loopback Keystone+Glance for the integration tests and, in
 * parallel, one shared full cloud (Nova, Neutron, Placement, MariaDB, RabbitMQ) when a
 * selected test boots servers, runs Node's test runner, stops the clouds, and fails the run
 * if a process it started is left behind.
 */
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { waitFor } from '../lib/lifecycle.js';
import { COMPILED_BASE, compileProduct, sweepDeadCopies } from './support/compile-product.js';
import { CpuMeter } from './support/cpu-meter.js';
import { COMPILED_DIR_ENV } from './support/node-command.js';
import { preflight } from './support/preflight.js';

const WATCHED = /^(chromium|sshd|ssh-keyscan|gearmand|keystone-|uwsgi|glance-api|fake-dib|disk-image-crea|qemu-img|placement-|nova-|neutron-|mariadbd|mariadb-install|beam\.smp|epmd|rabbitmq|qemu-system|java)/;

function findTests(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) return findTests(p);
    return name.endsWith('.test.ts') ? [p] : [];
  }).sort();
}

/**
 * Each module's own local imports, read once (the lanes' predicates ask for every file several
 * times; importsOf fills it). Declared up here: the preflight below already walks the imports.
 */
const directImports = new Map<string, string[]>();

/** Marks every process this run starts (children inherit it), so a concurrent run's processes are never ours. */
const RUN_MARK = `NODEPOOL_TEST_RUN=${process.pid}-${Date.now()}`;

/** Watched processes started by this run (their environment carries RUN_MARK). */
function watchedPids(): Map<number, string> {
  const out = execFileSync('ps', ['-eo', 'pid=,comm='], { encoding: 'utf8' });
  const pids = new Map<number, string>();
  for (const line of out.split('\n')) {
    const m = /^\s*(\d+)\s+(.+)$/.exec(line);
    if (!m || !WATCHED.test(m[2] as string)) continue;
    try {
      if (!readFileSync(`/proc/${m[1]}/environ`, 'latin1').split('\0').includes(RUN_MARK)) continue;
    } catch {
      continue; // gone, or not readable: not ours
    }
    pids.set(Number(m[1]), m[2] as string);
  }
  return pids;
}

const args = process.argv.slice(2);
let files: string[];
if (args.length === 0) files = findTests('test');
else if (args.length === 1 && (args[0] === 'unit' || args[0] === 'integration')) files = findTests(path.join('test', args[0]));
// The contract suites (test/contract/*.contract.ts) run from the test files of each backend or driver that imports them.
else if (args.length === 1 && args[0] === 'contract') files = findTests('test').filter((f) => readFileSync(f, 'utf8').includes('/contract/'));
else files = args;
if (files.length === 0) {
  console.error('no test files selected');
  process.exit(1);
}

/**
 * The bootable image of the qemu tests: a test that imports it boots VMs, or (real-dib) runs
 * the real DIB with that image's DIB cache, so after that build and never beside another.
 */
const QEMU_IMAGE = path.resolve('test/support/qemu-image.ts');
const bootsVms = (f: string): boolean => localImports(path.resolve(f)).has(QEMU_IMAGE);

const missing = preflight({
  integration: files.some((f) => !f.includes(`${path.sep}unit${path.sep}`)),
  realDib: files.some(bootsVms),
});
if (missing.length) {
  console.error(`# this machine cannot run the selected tests:\n${missing.map((m) => `#   ${m}`).join('\n')}`);
  process.exit(1);
}

/**
 * Longest a test may run unless it sets its own, and (Node's test runner applies it to each
 * file too) longest a test file may run: 50 minutes. It was 10, then 25, but on a loaded
 * machine the real DIB's file (its build-timeout is 40 minutes) and the mid-validation outages
 * went past it whole.
 */
const TEST_TIMEOUT_MS = 3_000_000;

function importsOf(file: string): string[] {
  let deps = directImports.get(file);
  if (!deps) {
    deps = [...readFileSync(file, 'utf8').matchAll(/from '(\.{1,2}\/[^']+)\.js'/g)]
      .map((m) => path.resolve(path.dirname(file), `${m[1] as string}.ts`)).filter((dep) => existsSync(dep));
    directImports.set(file, deps);
  }
  return deps;
}

/** The local modules `file` imports, directly or through other local modules (test/ and the code under test). */
function localImports(file: string, seen = new Set<string>()): Set<string> {
  for (const dep of importsOf(file)) {
    if (seen.has(dep)) continue;
    seen.add(dep);
    localImports(dep, seen);
  }
  return seen;
}

/** Load tests whose figures are latencies: run alone, after every other file. */
const RUN_ALONE = ['test/faults/metrics-scrape-storm.test.ts', 'test/faults/api-read-storm.test.ts'];
const runsAlone = (f: string): boolean => RUN_ALONE.some((a) => path.resolve(f) === path.resolve(a));


/**
 * Files that boot Nova servers and change what every file on the shared Nova sees: the `demo`
 * project's compute quota (nova-cloud, openstack-provider-quota) or every unattached floating IP
 * in it (clean-floating-ips, and the Nova 11 corpus whose fixture cleans them every second).
 * They run one at a time with no other Nova file. The other Nova files can run two at a time
 * (each boots in its own provider's name and cleans up only its own servers and images), but
 * do only once the VM lane is done: two at once beside the other lanes (load 10-12) made a boot
 * take 50 s to over 120 s, and files failed their launch timeouts.
 */
const NOVA_ALONE = [
  'test/integration/openstack/nova-cloud.test.ts', 'test/integration/drivers/openstack/openstack-provider-quota.test.ts',
  'test/integration/drivers/openstack/clean-floating-ips.test.ts', 'test/integration/server/nodepool11-corpus-run.test.ts',
];
const novaAlone = (f: string): boolean => NOVA_ALONE.some((a) => path.resolve(f) === path.resolve(a));

/**
 * The longest files of their groups (minutes each: outages, twenty launches through
 * Nova) start first, so the end of a group is not one of them running alone.
 */
const SLOW_FIRST = [
  'test/faults/zookeeper-outage-images.test.ts', 'test/integration/server/restart-safety.test.ts',
  'test/integration/rollout/canary-sqlite.test.ts', 'test/faults/server-launch-kill.test.ts',
  'test/integration/drivers/openstack/openstack-provider.test.ts', 'test/integration/drivers/openstack/openstack-provider-cleanup.test.ts',
  'test/integration/rollout/abort-sqlite.test.ts',
];
/** `group` with the SLOW_FIRST files first (in that list's order), the others after them as they were. */
const slowFirst = (group: string[]): string[] => {
  const rank = (f: string): number => SLOW_FIRST.findIndex((a) => path.resolve(f) === path.resolve(a));
  return [...group.filter((f) => rank(f) >= 0).sort((a, b) => rank(a) - rank(b)), ...group.filter((f) => rank(f) < 0)];
};

/** The VM file that boots guests for real (its subject is the boot) goes first: it takes longest. */
const VM_FIRST = ['test/integration/drivers/qemu/qemu-vm.test.ts'];
const vmFirst = (f: string): boolean => VM_FIRST.some((a) => path.resolve(f) === path.resolve(a));

const before = watchedPids();
/** The full cloud's support module: a test that imports it (directly or not) boots servers. */
const NOVA_CLOUD = path.resolve('test/support/openstack-full.ts');
/** Tests that boot servers get the full cloud (its start takes a minute or more, so only then). */
const bootsServers = (f: string): boolean => f.includes(`${path.sep}integration${path.sep}drivers${path.sep}openstack${path.sep}`)
  || f.endsWith('nova-cloud.test.ts') || localImports(path.resolve(f)).has(NOVA_CLOUD);
/** Tests that use the shared Keystone + Glance (test/support/openstack.ts); the others never wait for it. */
const LOOPBACK_CLOUD = path.resolve('test/support/openstack.ts');
const usesCloud = (f: string): boolean => bootsServers(f) || localImports(path.resolve(f)).has(LOOPBACK_CLOUD);
const needsCloud = files.some(usesCloud) && !process.env.NODEPOOL_TEST_CLOUD;
const needsNovaCloud = files.some(bootsServers) && !process.env.NODEPOOL_TEST_NOVA_CLOUD;
const [markKey, markValue] = RUN_MARK.split('=') as [string, string];
process.env[markKey] = markValue;
const env = { ...process.env };
const clouds: Array<ReturnType<typeof spawn>> = [];
const tmp = mkdtempSync(path.join(os.tmpdir(), 'nodepool-test-run-'));
/** This run's compiled copy of the product and the tests (test/support/compile-product.ts), removed when the run ends. */
const productJs = path.resolve(COMPILED_BASE, markValue);

/**
 * Compiles the product and the tests once for the run: the test files then run from JS, and
 * they start the product's daemons and CLIs from it (test/support/node-command.ts, which finds
 * the copy named in their environment); under tsx each process transforms every module again,
 * about 1 CPU-s more per integration test file. Resolves false when the copy cannot be made,
 * and everything runs through tsx.
 */
async function compileForRun(): Promise<boolean> {
  const started = Date.now();
  try {
    await sweepDeadCopies(path.resolve(COMPILED_BASE));
    const count = await compileProduct(process.cwd(), productJs);
    console.log(`# product and tests compiled to JS for the run (${count} files in ${((Date.now() - started) / 1000).toFixed(1)} s)`);
    return true;
  } catch (err) {
    console.error(`# product and tests not compiled, they run through tsx: ${(err as Error).message}`);
    return false;
  }
}
/** True once the compiled copy is made (main() makes it before any test file runs). */
let fromJs = false;

/** Where `file` (a test file's source path) runs from: its compiled copy when there is one. */
function runPath(file: string): string {
  return fromJs ? path.join(productJs, path.relative(process.cwd(), path.resolve(file)).replace(/\.ts$/, '.js')) : file;
}

/** The source path (relative to the project) of a test file the run ran from `file`. */
function sourcePath(file: string): string {
  const inCopy = path.relative(productJs, file);
  return inCopy.startsWith('..') || path.isAbsolute(inCopy) ? path.relative(process.cwd(), file) : inCopy.replace(/\.js$/, '.ts');
}

/** Starts `script up <info>` in the background; resolves with the info file once it is written. */
async function startCloud(what: string, script: string, info: string, timeoutMs: number): Promise<string> {
  const started = Date.now();
  console.log(`# starting the shared ${what}`);
  const cloud = spawn(process.execPath, ['--import', 'tsx', script, 'up', info], { stdio: ['ignore', 'inherit', 'inherit'] });
  clouds.push(cloud);
  const exited = new Promise<void>((resolve) => cloud.once('exit', () => resolve()));
  await Promise.race([
    waitFor(() => existsSync(info), { timeoutMs, what: `the ${what} to start`, intervalMs: 200 }),
    exited.then(() => { throw new Error(`the ${what} failed to start`); }),
  ]);
  console.log(`# ${what} up in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return info;
}

const DURATION_REPORTER = path.resolve('test/support/duration-reporter.mjs');
let runs = 0;
const runStarted = Date.now();
/** Seconds from the run's start to `t` (default now), as the timeline prints them. */
const sinceStart = (t = Date.now()): string => ((t - runStarted) / 1000).toFixed(0).padStart(5);
/** Each `node --test` run: what it ran and when (s from the start), printed last to show where a run's time went. */
const timeline: string[] = [];
/** The machine's CPU use, so the timeline says which groups waited on the CPU and which on timers or I/O. */
const cpu = new CpuMeter();

/**
 * `make test` builds better-sqlite3's native module (about 90 s of one core compiling SQLite)
 * while the runner starts the clouds: NODEPOOL_TEST_NATIVE_RC names the file its exit code lands
 * in, and no test file starts before it does. Resolves with why the tests cannot run, or
 * undefined (at once when the variable is unset: the module is built already).
 */
const nativeBuilt: Promise<string | undefined> = (async () => {
  const rcFile = process.env.NODEPOOL_TEST_NATIVE_RC;
  if (!rcFile) return undefined;
  const started = Date.now();
  try {
    const rc = await waitFor(() => readFileSync(rcFile, 'utf8').trim(), { timeoutMs: 1_800_000, intervalMs: 250, what: `better-sqlite3's native build (${rcFile})` });
    if (rc !== '0') return `better-sqlite3's native build failed (exit ${rc}; its output follows the tests)`;
    timeline.push(`#   ${sinceStart(runStarted)} s to ${sinceStart()} s  better-sqlite3's native build, beside the clouds' start (the first test file waited for it)`);
    console.log(`# better-sqlite3's native module built (the tests waited ${((Date.now() - started) / 1000).toFixed(0)} s for it)`);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
})();
cpu.start();

/** The reporter's records of every `node --test` run so far (test/support/duration-reporter.mjs). */
function reported(): Array<{ file: string; name: string; ms?: number; failed?: boolean; error?: string }> {
  return readdirSync(tmp).filter((n) => n.startsWith('durations-'))
    .flatMap((name) => readFileSync(path.join(tmp, name), 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line) as ReturnType<typeof reported>[number]));
}

type Reported = ReturnType<typeof reported>[number];

/** The slowest files of the run (their top-level tests' summed durations), a line each. */
function slowestFiles(records: readonly Reported[], count: number): string[] {
  const perFile = new Map<string, number>();
  for (const { file, ms, failed } of records) if (!failed) perFile.set(file, (perFile.get(file) ?? 0) + (ms ?? 0));
  return [...perFile].sort((a, b) => b[1] - a[1]).slice(0, count)
    .map(([file, ms]) => `#   ${(ms / 1000).toFixed(0).padStart(5)} s  ${sourcePath(file)}`);
}

/** The tests that failed (at any depth, not the suites that only hold them), a line each with their error's start. */
function failingTests(records: readonly Reported[]): string[] {
  return records.filter((r) => r.failed)
    .map((r) => `#   ${sourcePath(r.file)}: ${JSON.stringify(r.name)}\n#       ${r.error ?? ''}`);
}

/**
 * Runs `node --test` over `group` (`what` names it in the timeline), from the compiled copy once
 * it is made (source maps keep failures on the .ts lines), else through tsx; resolves with its
 * exit code.
 */
async function runTests(what: string, group: string[], concurrency: number, opts: { record?: boolean } = {}): Promise<number> {
  if (group.length === 0) return 0;
  const native = await nativeBuilt;
  if (native) {
    console.error(`# not run, ${native}:\n${group.map((f) => `#   ${f}`).join('\n')}`);
    return 1;
  }
  const from = sinceStart();
  const fromMs = Date.now();
  cpu.sample();
  const runner = spawn(process.execPath, [
    ...(fromJs ? ['--enable-source-maps'] : ['--import', 'tsx']), '--test', `--test-concurrency=${concurrency}`, `--test-timeout=${TEST_TIMEOUT_MS}`,
    `--test-reporter=${process.stdout.isTTY ? 'spec' : 'tap'}`, '--test-reporter-destination=stdout',
    `--test-reporter=${DURATION_REPORTER}`, `--test-reporter-destination=${path.join(tmp, `durations-${++runs}.jsonl`)}`,
    ...group.map(runPath),
  ], { stdio: 'inherit', env });
  return new Promise((resolve) => runner.once('exit', (code, signal) => {
    cpu.sample();
    const load = cpu.summary(fromMs, Date.now());
    if (opts.record !== false) {
      timeline.push(`#   ${from} s to ${sinceStart()} s  ${what} (${group.length} file${group.length === 1 ? '' : 's'}, ${concurrency} at a time)${load ? `; ${load}` : ''}${code || signal ? `; FAILED (${signal ?? `exit ${code}`})` : ''}`);
    }
    resolve(code ?? (signal ? 1 : 0));
  }));
}

/**
 * A group of files taken a file at a time (one `node --test` each) by workers that may join
 * while it runs: a lane that has finished its own files helps with these, so the run's end is
 * not two files at a time on a machine with idle cores. One timeline line for the group.
 */
class SharedGroup {
  private readonly queue: string[];
  private started: number | undefined;
  private workers = 0;
  private running = 0;
  private code = 0;
  private readonly joins: string[] = [];
  private recorded = false;

  constructor(private readonly what: string, files: string[]) {
    this.queue = [...files];
  }

  /** Takes files until none is left; resolves with the worst exit code of the files it ran. `who` names it in the timeline. */
  async work(who: string): Promise<number> {
    if (this.queue.length === 0) return 0;
    this.started ??= Date.now();
    this.workers++;
    this.joins.push(`${who} from ${sinceStart().trim()} s`);
    let code = 0;
    for (let f = this.queue.shift(); f !== undefined; f = this.queue.shift()) {
      this.running++;
      code = Math.max(code, await runTests(this.what, [f], 1, { record: false }));
      this.running--;
    }
    this.code = Math.max(this.code, code);
    if (this.running === 0 && this.queue.length === 0) this.record();
    return code;
  }

  /** The group's timeline line, once its last file has ended. */
  private record(): void {
    if (this.recorded || this.started === undefined) return;
    this.recorded = true;
    cpu.sample();
    const load = cpu.summary(this.started, Date.now());
    timeline.push(`#   ${sinceStart(this.started)} s to ${sinceStart()} s  ${this.what} (a file at a time by ${this.workers} worker${this.workers === 1 ? '' : 's'}: ${this.joins.join(', ')})${load ? `; ${load}` : ''}${this.code ? `; FAILED (exit ${this.code})` : ''}`);
  }
}

/** Reports files that cannot run because a cloud did not start; resolves with exit code 1. */
function notRun(group: string[], err: Error): number {
  if (group.length) console.error(`# not run, ${err.message}:\n${group.map((f) => `#   ${f}`).join('\n')}`);
  return group.length ? 1 : 0;
}

/**
 * Three lanes at once. The tests that need no cloud (two files at a time, while the clouds
 * start), then those that use Keystone + Glance (two at a time, and a file at a time more
 * from each other lane once it is done: SharedGroup). The tests that boot servers on
 * the one shared Nova: those that change its shared state alone (NOVA_ALONE), then the others
 * a file at a time, and two at a time once the VM lane is done (SharedGroup). The tests that
 * boot QEMU guests, a file at a time once the saved guest is ready (vmLane). A cloud that fails to start fails only the files that use it.
 */
async function main(): Promise<number> {
  // Before the clouds start (seconds on a quiet machine; during the clouds' start, the
  // machine's busiest minute, it took most of one), and before any test file runs.
  env[COMPILED_DIR_ENV] = productJs;
  fromJs = await compileForRun();
  const keystone = needsCloud
    ? startCloud('loopback cloud (Keystone + Glance)', 'test/support/openstack.ts', path.join(tmp, 'cloud.json'), 300_000)
      .then((info) => { env.NODEPOOL_TEST_CLOUD = info; })
    : Promise.resolve();
  const nova = needsNovaCloud
    ? startCloud('full cloud (Nova, Neutron, Placement)', 'test/support/openstack-full.ts', path.join(tmp, 'nova-cloud.json'), 600_000)
      .then((info) => { env.NODEPOOL_TEST_NOVA_CLOUD = info; })
    : Promise.resolve();
  // QEMU guests under TCG take a core each for minutes: one VM file at a time (vmLane).
  const alone = files.filter(runsAlone);
  const serial = files.filter((f) => !alone.includes(f) && (bootsServers(f) || bootsVms(f)));
  // Their bootable image is built (or found in the cache) here, beside the clouds' start, so no
  // test file spends its own bound on the real DIB, and then the saved guest the files resume
  // guests from (one boot); a build or save that fails here is tried again, and reported, by the
  // first file that needs it.
  const vmImage = files.some(bootsVms)
    ? import('./support/qemu-image.js').then((m) => m.bootableImage()).then(
      async (image) => {
        console.log(`# bootable test image ready${image.buildSeconds ? ` (built in ${image.buildSeconds} s)` : ' (cached, or made by `make test`\'s head start)'}`);
        const saved = await import('./support/qemu-saved-guest.js').then((m) => m.savedGuest());
        console.log(`# saved test guest ready${saved.saveSeconds ? ` (booted and saved in ${saved.saveSeconds} s)` : ' (cached, or made by `make test`\'s head start)'}`);
      },
      (err: Error) => console.error(`# bootable test image not built before the tests: ${err.message}`),
    ).catch((err: Error) => console.error(`# saved test guest not made before the tests: ${err.message}`))
    : Promise.resolve();
  const serialVms = serial.filter(bootsVms);
  const serialServers = serial.filter((f) => !serialVms.includes(f));
  const aloneServers = serialServers.filter(novaAlone);
  const pairedServers = slowFirst(serialServers.filter((f) => !novaAlone(f)));
  const withCloud = slowFirst(files.filter((f) => !serial.includes(f) && !alone.includes(f) && usesCloud(f)));
  const plain = files.filter((f) => !serial.includes(f) && !alone.includes(f) && !usesCloud(f));
  // Settled at once, so a failed start is never an unhandled rejection while the plain tests run.
  const keystoneUp = keystone.then(() => undefined, (err: Error) => err);
  const vmsReady = Promise.all([keystone, nova, vmImage]).then(() => undefined, (err: Error) => err);
  // The VM files are a queue, taken a file at a time by a lane of their own from when the saved
  // guest is ready (their waits on guests and outages then overlap the other lanes).
  const vmQueue = [...serialVms.filter(vmFirst), ...serialVms.filter((f) => !vmFirst(f))];
  const vmLane = async (): Promise<number> => {
    const failed = await vmsReady;
    if (failed) return notRun(vmQueue.splice(0), failed);
    let code = 0;
    for (let f = vmQueue.shift(); f !== undefined; f = vmQueue.shift()) code = Math.max(code, await runTests(path.relative(process.cwd(), f), [f], 1));
    return code;
  };
  // The Keystone + Glance files: two workers once the files that need no cloud are done, and
  // each other lane joins when it has run its own files (their cores would idle otherwise).
  const cloudGroup = new SharedGroup('the files that use Keystone + Glance', withCloud);
  const help = async (who: string): Promise<number> => ((await keystoneUp) ? 0 : cloudGroup.work(who));
  const novaUp = Promise.all([keystone, nova]).then(() => undefined, (err: Error) => err);
  const aloneNova = novaUp.then((failed) => (failed ? 0 : runTests('the Nova files that change shared state, alone', aloneServers, 1)));
  const novaGroup = new SharedGroup('the files that boot Nova servers', pairedServers);
  /** A lane done with its own files takes Nova files too, never beside those that change shared state. */
  const helpNova = async (who: string): Promise<number> => {
    if (await novaUp) return 0;
    await aloneNova;
    return novaGroup.work(who);
  };
  const codes = await Promise.all([
    runTests('the files that need no cloud', plain, 2).then(async (code) => {
      const failed = await keystoneUp;
      if (failed) return Math.max(code, notRun(withCloud, failed));
      return Math.max(code, ...await Promise.all([cloudGroup.work('the no-cloud lane'), cloudGroup.work('the no-cloud lane')]));
    }),
    // The files that boot only servers start once the clouds are up: those that change shared
    // state alone, then the others a file at a time, by the Nova lane and, once its own files and
    // the Keystone + Glance queue are done, the VM lane (two Nova files at once only then).
    novaUp.then(async (failed) => {
      if (failed) return Math.max(notRun(serialServers, failed), await help('the Nova lane'));
      return Math.max(await aloneNova, await novaGroup.work('the Nova lane'), await help('the Nova lane'));
    }),
    // One VM file at a time: two guests booting under TCG beside the other lanes (load 8) took
    // one boot to 371 s, past the mid-validation outage's bound.
    vmLane().then(async (code) => Math.max(code, await help('the VM lane'), await helpNova('the VM lane'))),
  ]);
  // Load tests time latencies: they run alone, after every other file (the clouds idle by then).
  return Math.max(...codes, await runTests('the load tests, alone', alone, 1));
}

async function stopCloud(cloud: ReturnType<typeof spawn>): Promise<void> {
  if (cloud.exitCode !== null || cloud.signalCode !== null) return;
  const exited = new Promise((resolve) => cloud.once('exit', resolve));
  cloud.kill('SIGTERM');
  const t = setTimeout(() => cloud.kill('SIGKILL'), 60_000);
  await exited;
  clearTimeout(t);
}

let code = 1;
try {
  code = await main();
} catch (err) {
  console.error(`test run failed: ${(err as Error).message}`);
} finally {
  const records = reported();
  const slowest = slowestFiles(records, 15);
  if (slowest.length) console.log(`# slowest test files:\n${slowest.join('\n')}`);
  cpu.stop();
  const load = cpu.summary(runStarted, Date.now());
  if (timeline.length) console.log(`# where the time went:\n${timeline.join('\n')}${load ? `\n#   the whole run: ${load} (${cpu.cpus} CPUs; every process on the machine counts)` : ''}`);
  // Last of all, so the tail of a CI log names what failed.
  const failing = failingTests(records);
  if (failing.length) console.log(`# failing tests (${failing.length}):\n${failing.join('\n')}`);
  await Promise.all(clouds.map(stopCloud));
  rmSync(tmp, { recursive: true, force: true });
  rmSync(productJs, { recursive: true, force: true });
}
const leaked = [...watchedPids()].filter(([pid]) => !before.has(pid));
if (leaked.length) {
  console.error(`# processes left running by the tests: ${leaked.map(([pid, name]) => `${name}(${pid})`).join(', ')}`);
  for (const [pid] of leaked) {
    try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
  }
  code = code || 1;
}
process.exit(code);
