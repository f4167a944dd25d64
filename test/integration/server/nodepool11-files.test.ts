/**
 * The daemons and the CLI on Nodepool 11's way of reading files, as real processes: `-s`
 * (the secure file), `%(NODEPOOL_…)` from the process environment, a launcher-only config
 * (diskimages, no gearman-servers) that runs without the image lifecycle and says so in its
 * start line and `/health/ready`, config warnings in the log and in config-validate, and the
 * secure file's env-vars kept out of every message.
 */
import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Releasers } from '../../../lib/lifecycle.js';
import { runningProcesses } from '../../support/processes.js';
import { startBin, startCli } from '../cli/cli-env.js';

const SECRET = 'hunter2-secure-value-9f3a';

/** A launcher-only config: one diskimage, no gearman-servers, a provider of a driver we lack. */
const launcherOnly = (dir: string, extra = ''): string => `
state-dir: ${path.join(dir, 'state')}
images-dir: ${path.join(dir, 'images')}
webapp: {port: 0, listen_address: 127.0.0.1}
labels: [{name: small}]
diskimages: [{name: ubuntu-jammy, python-path: '%(NODEPOOL_TEST_PYTHON)'}]
providers:
  - {name: k8s, driver: kubernetes, context: admin, pools: [{name: main, labels: [{name: small, type: pod}]}]}
${extra}`;

describe('Nodepool 11 files in the daemons and the CLI', () => {
  const releasers = new Releasers();
  afterEach(async () => {
    await releasers.releaseAll();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  async function files(main: string, secure: string): Promise<{ dir: string; config: string; secure: string }> {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool11-files-'));
    releasers.add('temp dir', () => rm(dir, { recursive: true, force: true }));
    const config = path.join(dir, 'nodepool.yaml');
    const secureFile = path.join(dir, 'secure.conf');
    await writeFile(config, main.replaceAll('DIR', dir));
    await writeFile(secureFile, secure);
    return { dir, config, secure: secureFile };
  }

  it('config-validate reads -s and the environment, prints warnings on stderr, and names the secure file in its errors', async () => {
    process.env.NODEPOOL_TEST_PYTHON = '/usr/bin/python3';
    releasers.add('env', () => { delete process.env.NODEPOOL_TEST_PYTHON; });
    const f = await files(launcherOnly('DIR'), `diskimages: [{name: ubuntu-jammy, env-vars: {REGISTRY_TOKEN: ${SECRET}}}]\n`);
    const ok = await startCli(f.config, ['-s', f.secure, 'config-validate']).result;
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal(ok.stdout, `${f.config}: valid (1 diskimages, 0 providers, 1 labels; image lifecycle off (launcher-only: no gearman-servers))\n`);
    assert.match(ok.stderr, /^warning: .*nodepool\.yaml: providers\[0\]\.driver: Nodepool's driver "kubernetes" is not supported here \(provider k8s\): this provider is skipped \(not run\)/);
    delete process.env.NODEPOOL_TEST_PYTHON;
    const unset = await startCli(f.config, ['-s', f.secure, 'config-validate']).result;
    assert.equal(unset.code, 2);
    assert.equal(unset.stderr, `${f.config}: diskimages[0].python-path: %(NODEPOOL_TEST_PYTHON) names an environment variable that is not set (Nodepool would leave the text as it is; set NODEPOOL_TEST_PYTHON for this process)\n`);
    process.env.NODEPOOL_TEST_PYTHON = '/usr/bin/python3';
    await writeFile(f.secure, 'diskimages: [{name: ubuntu-noble, env-vars: {A: b}}]\n');
    const bad = await startCli(f.config, ['--secure', f.secure, 'config-validate']).result;
    assert.equal(bad.code, 2);
    assert.equal(bad.stderr, `${f.secure}: diskimages[0].name: diskimage "ubuntu-noble" is not defined in the diskimages of ${f.config}\n`);
  });

  it('nodepool info says a launcher-only config runs no image lifecycle', async () => {
    const f = await files(launcherOnly('DIR').replace('python-path: \'%(NODEPOOL_TEST_PYTHON)\'', 'python-path: auto')
      .replace(/providers:\n.*\n/, 'providers:\n  - {name: lab, driver: static, pools: [{name: main, nodes: [{name: 127.0.0.1, labels: small, host-key-checking: false}]}]}\n'), 'diskimages: []\n');
    const text = await startCli(f.config, ['-s', f.secure, 'info', 'lab']).result;
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /\nImage lifecycle: off \(launcher-only: no gearman-servers\)\n$/);
    const json = await startCli(f.config, ['-s', f.secure, 'info', 'lab', '--json']).result;
    assert.equal((JSON.parse(json.stdout) as { imageLifecycle: string }).imageLifecycle, 'off (launcher-only: no gearman-servers)');
  });

  it('nodepool-server runs a launcher-only config without the image lifecycle, says so, logs warnings and never the secure values', async () => {
    process.env.NODEPOOL_TEST_PYTHON = '/usr/bin/python3';
    releasers.add('env', () => { delete process.env.NODEPOOL_TEST_PYTHON; });
    const f = await files(launcherOnly('DIR'), `diskimages: [{name: ubuntu-jammy, env-vars: {REGISTRY_TOKEN: ${SECRET}}}]\n`);
    const server = startBin('nodepool-server', ['-c', f.config, '-s', f.secure, '--log-format', 'json'], 60_000);
    releasers.add('server', () => server.proc.stop(10_000));
    await server.waitForOutput(/nodepool-server started/, 'its start line', 30_000);
    const lines = (server.stdout() + server.stderr()).split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
    const started = lines.find((l) => typeof l.message === 'string' && l.message.startsWith('nodepool-server started'));
    assert.equal(started?.message, 'nodepool-server started, image lifecycle off (launcher-only: no gearman-servers)');
    assert.equal(started?.imageLifecycle, 'off (launcher-only: no gearman-servers)');
    assert.ok(lines.some((l) => l.level === 'warn' && /^config: providers\[0\]\.driver: Nodepool's driver "kubernetes"/.test(String(l.message))), 'the warning is logged at load');
    const listening = lines.find((l) => l.message === 'web status listening');
    const address = String(listening?.address);
    const health = await fetch(`http://${address}/health/ready`, { headers: { accept: 'application/json' } });
    const body = await health.json() as { imageLifecycle?: string; loops: Array<{ name: string }> };
    assert.equal(body.imageLifecycle, 'off (launcher-only: no gearman-servers)');
    assert.ok(!body.loops.some((l) => /lifecycle/.test(l.name)), `no image lifecycle loop: ${JSON.stringify(body.loops)}`);
    // A reload whose error would quote the secret value: the registered secret is scrubbed.
    await writeFile(f.config, launcherOnly(f.dir, `max-hold-age: "${SECRET}"\n`));
    await server.waitForOutput(/config reload failed/, 'the refused reload', 20_000);
    const out = server.stdout() + server.stderr();
    assert.match(out, /max-hold-age: expected integer >= 0, got \\?"<redacted>\\?"/);
    assert.ok(!out.includes(SECRET), 'no secure value in any line');
  });
});
