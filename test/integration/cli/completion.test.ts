import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { NODEPOOL_COMPLETION } from '../../../cli/commands/completion.js';
import { Releasers } from '../../../lib/lifecycle.js';
import { nodeScript } from '../../support/node-command.js';
import { runningProcesses } from '../../support/processes.js';
import { createCliEnv, startCli, type CliEnv, type CliRun } from './cli-env.js';

const run = promisify(execFile);
const REPO = path.resolve('.');

describe('nodepool completion', () => {
  const releasers = new Releasers();
  afterEach(async () => {
    await releasers.releaseAll();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  async function setup(): Promise<CliEnv> {
    const env = await createCliEnv();
    releasers.add('cli env', () => env.close());
    return env;
  }

  /** `nodepool --get-yargs-completions nodepool ...words` (what the completion script runs). */
  const complete = (...words: string[]): Promise<CliRun> => startCli(null, ['--get-yargs-completions', 'nodepool', ...words]).result;
  const lines = (r: CliRun): string[] => r.stdout.split('\n').filter(Boolean);

  it('completes diskimage, provider and label names from the config', async () => {
    const env = await setup();
    assert.deepEqual(lines(await complete('-c', env.configFile, 'image-build', '')), ['debian-bookworm', 'ubuntu-jammy']);
    assert.deepEqual(lines(await complete('-c', env.configFile, 'image-pause', 'u')), ['ubuntu-jammy']);
    assert.deepEqual(lines(await complete('-c', env.configFile, 'info', '')), ['cloud-a', 'cloud-b']);
    assert.deepEqual(lines(await complete('-c', env.configFile, 'image-unpause', 'ubuntu-jammy', '--provider', 'cloud-')), ['cloud-a', 'cloud-b']);
    assert.deepEqual(lines(await complete('-c', env.configFile, 'request', 'small', '')), ['small']);
  });

  it('completes build and node ids from the store', async () => {
    const env = await setup();
    const b1 = await env.store.createBuild({ diskimage: 'ubuntu-jammy', formats: ['qcow2'] });
    const b2 = await env.store.createBuild({ diskimage: 'debian-bookworm', formats: ['qcow2'] });
    const node = await env.store.createNode({ state: 'ready', provider: 'cloud-a', pool: 'main', labels: ['small'], externalId: 'srv-1' });
    assert.deepEqual(lines(await complete('-c', env.configFile, 'image-delete', '')), [b2.id, b1.id].sort());
    assert.deepEqual(lines(await complete('-c', env.configFile, 'dib-image-delete', 'ubu')), [b1.id]);
    assert.deepEqual(lines(await complete('-c', env.configFile, 'image-delete', '--build-id=deb')), [`--build-id=${b2.id}`]);
    assert.deepEqual(lines(await complete('-c', env.configFile, 'hold', '')), [node.id]);
  });

  it('offers no names, without an error, when the config or the store is missing', async () => {
    const env = await setup();
    const missing = path.join(env.dir, 'nope.yaml');
    for (const r of [await complete('-c', missing, 'image-build', ''), await complete('-c', missing, 'image-delete', '')]) {
      assert.deepEqual(r, { stdout: '', stderr: '', code: 0 });
    }
    const noStore = path.join(env.dir, 'fresh.yaml');
    await writeFile(noStore, `state-dir: ${path.join(env.dir, 'fresh-state')}\n`);
    assert.deepEqual(await complete('-c', noStore, 'hold', ''), { stdout: '', stderr: '', code: 0 });
    assert.deepEqual(await complete('-c', noStore, 'image-delete', ''), { stdout: '', stderr: '', code: 0 });
    await assert.rejects(import('node:fs/promises').then((fs) => fs.stat(path.join(env.dir, 'fresh-state'))), /ENOENT/, 'completion creates no state-dir');
  });

  it('offers nothing for a file argument, so the shell completes file names', async () => {
    const env = await setup();
    assert.deepEqual(await complete('-c', ''), { stdout: '', stderr: '', code: 0 });
    assert.deepEqual(await complete('-c', env.configFile, 'export-image-data', ''), { stdout: '', stderr: '', code: 0 });
  });

  it('leaves commands and options to yargs', async () => {
    const env = await setup();
    const commands = lines(await complete('-c', env.configFile, 'image-'));
    assert.ok(commands.includes('image-build') && commands.includes('image-list'), commands.join(' '));
    assert.ok(commands.includes('completion'));
    const options = lines(await complete('-c', env.configFile, 'image-build', '--'));
    assert.ok(options.includes('--follow') && options.includes('--timeout'), options.join(' '));
  });

  it('works through the bash script it prints', async () => {
    const env = await setup();
    const dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-completion-'));
    releasers.add('bin dir', () => rm(dir, { recursive: true, force: true }));
    // `nodepool` on PATH, as the script calls it by name.
    const bin = path.join(dir, 'nodepool');
    await writeFile(bin, `#!/bin/sh\nexec "${process.execPath}" ${nodeScript('bin/nodepool.ts').map((a) => `"${a}"`).join(' ')} "$@"\n`);
    await chmod(bin, 0o755);
    const script = (await run(bin, ['completion'], { cwd: REPO, env: { ...process.env, SHELL: '/bin/bash' } })).stdout;
    assert.match(script, /complete .*-F _nodepool_yargs_completions nodepool/);
    const { stdout } = await run('bash', ['--norc', '-c', `${script}
COMP_WORDS=(nodepool -c "${env.configFile}" image-build "ubu"); COMP_CWORD=4
_nodepool_yargs_completions; printf '%s\\n' "\${COMPREPLY[@]}"`], { cwd: REPO, env: { ...process.env, PATH: `${dir}:${process.env.PATH ?? ''}` } });
    assert.equal(stdout, 'ubuntu-jammy\n');
  });

  it('knows every command: its spec matches each command\'s --help', async () => {
    const help = (await startCli(null, ['--help']).result).stdout;
    const commands = [...help.matchAll(/^ {2}nodepool ([a-z-]+)/gm)].map((m) => m[1] as string);
    assert.ok(commands.length > 15, help);
    const named = /<(diskimage|id|build-id|provider|labels\.\.|file)>|\[(id|provider)\]/;
    for (const command of commands) {
      const usage = help.split('\n').find((l) => l.startsWith(`  nodepool ${command} `) || l === `  nodepool ${command}`) ?? '';
      const args = usage.slice(`  nodepool ${command}`.length).split(/\s{2,}/)[0] ?? '';
      assert.equal(named.test(args), command in NODEPOOL_COMPLETION.positionals, `${command}: ${args}`);
    }
    // Every option that takes a value is known, so its value is never taken for a positional.
    const valueOptions = new Set<string>();
    for (const command of commands) {
      const out = (await startCli(null, [command, '--help']).result).stdout;
      // One block per option: its line and the lines its description wrapped onto.
      const blocks = (out.split('Options:')[1] ?? '').split(/\n(?=\s+(?:-\w, )?--)/);
      for (const block of blocks) {
        const name = /^\s+(?:-\w, )?--([a-z-]+)/.exec(block)?.[1];
        if (name && !block.includes('[boolean]')) valueOptions.add(name);
      }
    }
    for (const o of ['help', 'version']) valueOptions.delete(o);
    assert.deepEqual([...valueOptions].sort(), [...NODEPOOL_COMPLETION.valueOptions].filter((o) => o !== 'c' && o !== 's').sort());
  });
});
