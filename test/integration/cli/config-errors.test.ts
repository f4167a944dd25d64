import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Releasers } from '../../../lib/lifecycle.js';
import { runningProcesses } from '../../support/processes.js';
import { startBin, startCli } from './cli-env.js';

/** Asserts that every word of `text` is a whole word of `output` (help wrapped mid-word splits one). */
function hasWholeWords(output: string, text: string): void {
  const words = new Set(output.split(/\s+/));
  const broken = text.split(/\s+/).filter((w) => !words.has(w));
  assert.deepEqual(broken, [], `words cut by wrapping:\n${output}`);
}

describe('config and command-line errors: one message, exit 2, in every process', () => {
  const releasers = new Releasers();
  afterEach(async () => {
    await releasers.releaseAll();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  async function configFile(text: string): Promise<string> {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-config-errors-'));
    releasers.add('temp dir', () => rm(dir, { recursive: true, force: true }));
    const file = path.join(dir, 'nodepool.yaml');
    await writeFile(file, text.replaceAll('STATE', path.join(dir, 'state')).replaceAll('IMAGES', path.join(dir, 'images')));
    return file;
  }

  it('config-validate takes diskimages without gearman-servers (launcher-only), nodepool-builder refuses them', async () => {
    const file = await configFile('state-dir: STATE\nimages-dir: IMAGES\ndiskimages: [{name: ubuntu-jammy}]\n');
    const validate = await startCli(file, ['config-validate']).result;
    assert.equal(validate.code, 0, validate.stderr);
    assert.match(validate.stdout, /image lifecycle off \(launcher-only: no gearman-servers\)/);
    const builder = await startBin('nodepool-builder', ['-c', file], 30_000).result;
    assert.equal(builder.code, 2, builder.stderr);
    assert.equal(builder.stderr, `${file}: gearman-servers: expected at least one gearman server, got none: nodepool-builder takes all its jobs from Gearman\n`, 'no TypeError, no stack: one sentence');
  });

  it('a launcher-only config needs no gearmand, but a builder always does', async () => {
    const file = await configFile('state-dir: STATE\nimages-dir: IMAGES\nlabels: [{name: small}]\n');
    const validate = await startCli(file, ['config-validate']).result;
    assert.equal(validate.code, 0, validate.stderr);
    const builder = await startBin('nodepool-builder', ['-c', file], 30_000).result;
    assert.equal(builder.code, 2, builder.stderr);
    assert.equal(builder.stderr, `${file}: gearman-servers: expected at least one gearman server, got none: nodepool-builder takes all its jobs from Gearman\n`);
  });

  it('reports a duration too long for a timer with the limit, in config-validate and the builder alike', async () => {
    const file = await configFile('state-dir: STATE\nimages-dir: IMAGES\ngearman-servers: [{host: 127.0.0.1}]\ndiskimages: [{name: d, build-timeout: 3000000}]\n');
    const expected = `${file}: diskimages[0].build-timeout: expected at most 2147483 seconds (about 24.8 days, the longest delay Node's timers hold), got 3000000\n`;
    const validate = await startCli(file, ['config-validate']).result;
    assert.equal(validate.code, 2);
    assert.equal(validate.stderr, expected);
    const builder = await startBin('nodepool-builder', ['-c', file], 30_000).result;
    assert.equal(builder.code, 2);
    assert.equal(builder.stderr, expected);
  });

  it('says what a number flag was given and what it expects, as a usage error (exit 2)', async () => {
    const cases: Array<[name: 'nodepool' | 'nodepool-builder', args: string[], message: string]> = [
      ['nodepool', ['image-build', 'ubuntu-jammy', '--follow', '--timeout', 'abc'], '--timeout: expected number >= 1, got "abc"'],
      ['nodepool', ['request', 'small', '--wait', '--timeout', 'abc'], '--timeout: expected number >= 1, got "abc"'],
      ['nodepool', ['request', 'small', '--priority', 'high'], '--priority: expected integer from 0 to 999, got "high"'],
      ['nodepool', ['alien-image-list', '--timeout', '0'], '--timeout: expected number >= 1, got 0'],
      ['nodepool-builder', ['--shutdown-timeout', 'abc'], '--shutdown-timeout: expected number >= 0, got "abc"'],
      ['nodepool-builder', ['--build-workers', '1.5'], '--build-workers: expected integer >= 1, got 1.5'],
    ];
    const runs = await Promise.all(cases.map(([name, args]) => startBin(name, ['-c', '/nonexistent/nodepool.yaml', ...args], 30_000).result));
    runs.forEach((r, i) => {
      const [name, args, message] = cases[i] as (typeof cases)[number];
      assert.equal(r.code, 2, `${name} ${args.join(' ')}: ${r.stderr}`);
      assert.ok(r.stderr.includes(message), `${name} ${args.join(' ')}: ${r.stderr}`);
      assert.doesNotMatch(r.stderr, /NaN/);
    });
  });

  it('wraps --help at word boundaries when stdout is not a terminal', async () => {
    const [builder, server, cli] = await Promise.all([
      startBin('nodepool-builder', ['--help'], 30_000).result,
      startBin('nodepool-server', ['--help'], 30_000).result,
      startBin('nodepool', ['image-delete', '--help'], 30_000).result,
    ]);
    for (const r of [builder, server, cli]) assert.equal(r.code, 0, r.stderr);
    hasWholeWords(builder.stdout, 'Builds images with diskimage-builder and serves uploads and deletes over Gearman.');
    hasWholeWords(server.stdout, 'Decides what to build, upload and delete, and has the builders do it over Gearman.');
    hasWholeWords(server.stdout, 'run only this provider (repeatable); others are left to other servers sharing the store. Without it the server is a fleet member and runs the pools it owns (docs/fleet.md)');
    hasWholeWords(cli.stdout, 'delete a build: its uploads first, then its files');
    hasWholeWords(cli.stdout, 'nodepool image-delete --provider cloud-a --image ubuntu-jammy --build-id ubuntu-jammy-0000000003 --upload-id 0000000007');
  });
});
