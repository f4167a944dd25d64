/**
 * The package as operators install it: `npm pack` (prepack builds dist/), `npm install -g` of
 * the tarball into a temporary prefix (dependencies from the npm registry, better-sqlite3's
 * binding placed by its install script from a local prebuild, see localPrebuild), then the
 * installed bins, run from outside the checkout, against a real gearmand and the fake DIB:
 * config-validate, a build, dib-image-list, SIGHUP reloads, `--version`; and the systemd units
 * checked by `systemd-analyze verify` against those bins.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { access, cp, mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import yaml from 'js-yaml';
import { waitFor } from '../../../lib/lifecycle.js';
import { startGearmand, type GearmandHandle } from '../../support/gearmand.js';
import { runningProcesses, startProcess, type TrackedProcess } from '../../support/processes.js';

const run = promisify(execFile);
const REPO = path.resolve('.');
/** test/fixtures/bin/fake-dib: takes DIB's argv and env and writes fake images. */
const FAKE_DIB = path.join(REPO, 'test/fixtures/bin/fake-dib');
const BINS = ['nodepool', 'nodepool-server', 'nodepool-builder'] as const;
/** What the tarball may hold: compiled code, examples, docs, units, README, licence. */
const SHIPPED = /^(dist\/(bin|cli|lib|server|workers)\/.+\.js|dist\/build-info\.json|config\/[^/]+\.yaml|config\/elements\/[^/]+\/[^/]+|docs\/.+\.(md|png)|contrib\/systemd\/[^/]+\.service|README\.md|LICENSE|package\.json)$/;

/**
 * better-sqlite3's binding as a prebuild in `<dir>/prebuilds`, where its install script
 * (prebuild-install) takes it from `$npm_config_better_sqlite3_local_prebuilds` instead of
 * downloading it from GitHub, which this machine cannot reach (it would compile SQLite instead,
 * minutes of CPU): packed from the checkout's own copy, which `npm ci` built here. When the
 * registry resolves another version, the file does not match and the script compiles as before.
 */
async function localPrebuild(dir: string): Promise<string> {
  const mod = path.join(REPO, 'node_modules', 'better-sqlite3');
  const { version } = JSON.parse(await readFile(path.join(mod, 'package.json'), 'utf8')) as { version: string };
  const out = path.join(dir, 'prebuilds');
  await mkdir(out, { recursive: true });
  const name = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  await run('tar', ['-czf', path.join(out, name), '-C', mod, 'build/Release/better_sqlite3.node']);
  return out;
}

interface PackReport {
  filename: string;
  version: string;
  entryCount: number;
  size: number;
  files: Array<{ path: string }>;
}

describe('the installed package', () => {
  let tmp: string;
  let prefix: string;
  let pack: PackReport;
  let gearmand: GearmandHandle | undefined;
  const started: TrackedProcess[] = [];
  const bin = (name: (typeof BINS)[number]): string => path.join(prefix, 'bin', name);
  /** The environment of the installed bins: no config from the caller, no tsx. */
  const binEnv = (): NodeJS.ProcessEnv => {
    const env = { ...process.env };
    delete env.NODEPOOL_CONFIG;
    delete env.NODE_OPTIONS;
    return env;
  };
  const nodepool = (...args: string[]) => run(bin('nodepool'), args, { cwd: tmp, env: binEnv(), timeout: 30_000 });

  before(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'nodepool-package-'));
    prefix = path.join(tmp, 'prefix');
    let t = Date.now();
    const packed = await run('npm', ['pack', '--json', '--pack-destination', tmp], { cwd: REPO, timeout: 180_000, maxBuffer: 16 * 1024 * 1024 });
    pack = (JSON.parse(packed.stdout) as PackReport[])[0] as PackReport;
    console.log(`npm pack (prepack build included): ${((Date.now() - t) / 1000).toFixed(1)} s, ${pack.entryCount} files, ${pack.size} bytes`);
    t = Date.now();
    // --allow-scripts: npm 11 warns about (and with strict-allow-scripts refuses) dependency install scripts
    // not allowed; better-sqlite3's builds its native binding.
    const prebuilds = await localPrebuild(tmp);
    await run('npm', ['install', '--global', '--prefix', prefix, '--allow-scripts=better-sqlite3', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error', path.join(tmp, pack.filename)], {
      cwd: tmp, timeout: 300_000, maxBuffer: 16 * 1024 * 1024, env: { ...process.env, npm_config_better_sqlite3_local_prebuilds: prebuilds },
    });
    // node-gyp leaves its object files beside the binding; a prebuild has none.
    const compiled = await access(path.join(prefix, 'lib', 'node_modules', 'nodepool-ts', 'node_modules', 'better-sqlite3', 'build', 'Release', 'obj')).then(() => true, () => false);
    console.log(`npm install -g of the tarball: ${((Date.now() - t) / 1000).toFixed(1)} s (better-sqlite3 ${compiled ? 'compiled' : 'from the local prebuild'})`);
  });

  after(async () => {
    await Promise.all(started.map((p) => p.stop(15_000)));
    await gearmand?.stop();
    if (tmp) await rm(tmp, { recursive: true, force: true });
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  it('ships only what runs: compiled JS, config examples, docs, units, README and licence', () => {
    const files = pack.files.map((f) => f.path);
    assert.deepEqual(files.filter((f) => !SHIPPED.test(f)), []);
    for (const b of BINS) assert.ok(files.includes(`dist/bin/${b}.js`), b);
    // The DIB element a bootable qemu image needs (docs/drivers/qemu.md): operators point elements-dir at it.
    assert.ok(files.includes('config/elements/ifupdown/package-installs.yaml'));
    for (const unit of ['nodepool-server.service', 'nodepool-builder.service', 'nodepool-builder@.service']) {
      assert.ok(files.includes(`contrib/systemd/${unit}`), unit);
    }
    assert.ok(files.includes('LICENSE') && files.includes('docs/install.md'));
  });

  it('prints the package version and the git revision it was built from', async () => {
    const { version } = JSON.parse(await readFile(path.join(REPO, 'package.json'), 'utf8')) as { version: string };
    let revision: string | undefined;
    try {
      revision = (await run('git', ['rev-parse', 'HEAD'], { cwd: REPO })).stdout.trim().slice(0, 12);
    } catch {
      revision = undefined; // not a git checkout: the version alone
    }
    for (const b of BINS) {
      const { stdout } = await run(bin(b), ['--version'], { cwd: tmp, env: binEnv() });
      if (revision) assert.match(stdout, new RegExp(`^${version.replace(/\./g, '\\.')} \\(git ${revision}(-dirty)?\\)\\n$`), b);
      else assert.equal(stdout, `${version}\n`, b);
    }
  });

  it('validates a config, builds through the fake DIB, lists the build and reloads on SIGHUP', async () => {
    gearmand = await startGearmand({ jobRetries: 1 });
    const configFile = path.join(tmp, 'nodepool.yaml');
    await writeFile(configFile, yaml.dump({
      'gearman-servers': [{ host: '127.0.0.1', port: gearmand.port }],
      'state-dir': path.join(tmp, 'state'),
      'images-dir': path.join(tmp, 'images'),
      'build-log-dir': path.join(tmp, 'logs'),
      'image-lifecycle': { interval: 1 },
      diskimages: [{
        name: 'fake-image', elements: ['fake-element'], release: 'bookworm', formats: ['qcow2'], 'dib-cmd': FAKE_DIB, 'env-vars': { FAKE_DIB_DELAY: '0.1' },
      }],
    }));
    assert.equal((await nodepool('-c', configFile, 'config-validate')).stdout, `${configFile}: valid (1 diskimages, 0 providers, 0 labels)\n`);

    const daemon = (name: 'nodepool-server' | 'nodepool-builder', args: string[]): TrackedProcess => {
      const p = startProcess(name, bin(name), ['-c', configFile, ...args], { cwd: tmp, env: binEnv(), logFile: path.join(tmp, `${name}.log`) });
      started.push(p);
      return p;
    };
    const log = (name: string): Promise<string> => readFile(path.join(tmp, `${name}.log`), 'utf8').catch(() => '');
    const builder = daemon('nodepool-builder', ['--hostname', 'installed-builder', '--shutdown-timeout', '5']);
    const server = daemon('nodepool-server', ['--no-webapp', '--hostname', 'installed-server']);

    let listed = '';
    await waitFor(async () => {
      listed = (await nodepool('-c', configFile, 'dib-image-list')).stdout;
      return /fake-image-0000000001 .*installed-builder .*qcow2 .*ready/.test(listed);
    }, { timeoutMs: 60_000, intervalMs: 500, what: 'the build ready in dib-image-list' }).catch(async (err: Error) => {
      throw new Error(`${err.message}\n${listed}\nserver: ${await log('nodepool-server')}\nbuilder: ${await log('nodepool-builder')}`);
    });
    const image = (await readdir(path.join(tmp, 'images'))).filter((f) => f.startsWith('fake-image-0000000001'));
    assert.ok(image.includes('fake-image-0000000001.qcow2'), image.join(' '));

    for (const [name, p] of [['nodepool-server', server], ['nodepool-builder', builder]] as const) {
      process.kill(p.pid, 'SIGHUP');
      await waitFor(async () => /config reloaded.*SIGHUP/.test(await log(name)), { timeoutMs: 10_000, what: `${name} to reload on SIGHUP` });
    }
    for (const p of [server, builder]) {
      await p.stop(15_000);
      assert.deepEqual(await p.exited, { code: 0, signal: null }, `${p.name} stops cleanly on SIGTERM`);
    }
  });

  it('has systemd units that systemd-analyze verify accepts with the installed bins', async () => {
    const units = path.join(tmp, 'units');
    await cp(path.join(prefix, 'lib/node_modules/nodepool-ts/contrib/systemd'), units, { recursive: true });
    const names: string[] = [];
    for (const unit of await readdir(units)) {
      const file = path.join(units, unit);
      await writeFile(file, (await readFile(file, 'utf8')).replaceAll('/usr/local/bin/', `${path.join(prefix, 'bin')}/`));
      // A template is verified as an instance of it.
      if (unit.endsWith('@.service')) {
        const instance = unit.replace('@.service', '@a.service');
        await cp(file, path.join(units, instance));
        names.push(path.join(units, instance));
      } else {
        names.push(file);
      }
    }
    assert.equal(names.length, 3);
    const verify = async (files: string[]): Promise<string[]> => {
      const r = await run('systemd-analyze', ['verify', ...files], { cwd: units }).catch((err: { stdout: string; stderr: string }) => err);
      // Other units of this machine may be reported too; only ours matter.
      return `${r.stdout}${r.stderr}`.split('\n').filter((l) => l.includes(units) || /^nodepool-/.test(l));
    };
    assert.deepEqual(await verify(names), []);
    // The check sees mistakes: a misspelt setting and a missing binary are reported.
    const broken = path.join(units, 'nodepool-server.service');
    await writeFile(broken, (await readFile(broken, 'utf8')).replace('KillMode=mixed', 'KillMode=mixd').replace(`${prefix}/bin/nodepool-server`, `${prefix}/bin/missing`));
    const problems = await verify([broken]);
    assert.ok(problems.some((l) => /kill mode/i.test(l)) && problems.some((l) => /missing/.test(l)), problems.join('\n'));
  });
});
