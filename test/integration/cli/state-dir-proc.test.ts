/**
 * A state-dir the system cannot make fails the command at once with the reason (issue 31 §10):
 * under /proc, Node's recursive mkdir never settled, so `nodepool list` hung until killed.
 * The real CLI runs against a nodepool.yaml whose state-dir is under /proc, and a deep new
 * state-dir elsewhere is still made, parents and all.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { runningProcesses } from '../../support/processes.js';
import { startCli } from './cli-env.js';

describe('nodepool with a state-dir it cannot make', () => {
  let dir: string;

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-proc-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  it('fails within seconds with the path and the reason when state-dir is under /proc', async () => {
    const config = path.join(dir, 'proc.yaml');
    await writeFile(config, 'state-dir: /proc/nodepool-state/deeper\nproviders: []\n');
    const t0 = Date.now();
    // Killed after 30 s: before the fix it never ended on its own.
    const r = await startCli(config, ['list'], 30_000).result;
    const ms = Date.now() - t0;
    assert.notEqual(r.code, 0, `stdout: ${r.stdout}\nstderr: ${r.stderr}`);
    assert.notEqual(r.code, null, `killed after ${ms} ms: the command hung`);
    assert.match(r.stderr, /creating state-dir \/proc\/nodepool-state\/deeper: ENOENT/);
    assert.ok(ms < 20_000, `took ${ms} ms`);
  });

  it('still makes a new state-dir with its missing parents', async () => {
    const config = path.join(dir, 'deep.yaml');
    const stateDir = path.join(dir, 'a', 'b', 'state');
    await writeFile(config, `state-dir: ${stateDir}\nproviders: []\n`);
    const r = await startCli(config, ['list'], 30_000).result;
    assert.equal(r.code, 0, r.stderr);
    assert.ok((await stat(stateDir)).isDirectory());
    assert.equal((await stat(stateDir)).mode & 0o777, 0o750);
  });
});
