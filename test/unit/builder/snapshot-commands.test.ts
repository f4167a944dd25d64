import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { receiveCommand, runSetupCommand, sealCommand, SETUP_ENV_FILE, SETUP_FILE, setupEnvText, shellQuote } from '../../../workers/builder/snapshot-commands.js';
import { parseBuildPayload } from '../../../workers/builder/job-payloads.js';
import { InvalidJobError } from '../../../lib/errors.js';

/** Runs `command` with sh in `home` as the instance's login shell would, with `stdin`. */
function sh(home: string, command: string, stdin = ''): string {
  return execFileSync('sh', ['-c', command], { cwd: home, input: stdin, encoding: 'utf8', env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home } });
}

describe('snapshot build commands', () => {
  it('quotes any word for the shell', () => {
    const home = '/';
    for (const w of ['plain', "it's", 'a b', '$(rm -rf /)', '`x`', '"q"', '\\n', '']) {
      assert.equal(sh(home, `printf %s ${shellQuote(w)}`), w);
    }
  });

  it('receives the setup and its environment, runs it with its arguments, and keeps values off the command line', async () => {
    const home = await mkdtemp(path.join(tmpdir(), 'nodepool-snap-cmd-'));
    try {
      sh(home, receiveCommand(SETUP_FILE, '700'), '#!/bin/sh\necho "args:$*" "mode:$MODE" "token:$TOKEN"\necho oops >&2\n');
      sh(home, receiveCommand(SETUP_ENV_FILE, '600'), setupEnvText({ MODE: "it's ci", TOKEN: '$(never run)' }));
      assert.equal(sh(home, `stat -c %a ${SETUP_FILE} ${SETUP_ENV_FILE}`), '700\n600\n');
      const command = runSetupCommand(['/etc/prepare.sh', '--ci', 'two words']);
      assert.doesNotMatch(command, /never run|it's ci/);
      assert.equal(sh(home, command), "args:--ci two words mode:it's ci token:$(never run)\noops\n");
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  });

  it('seals: removes the setup files and exactly the build key line', async () => {
    const home = await mkdtemp(path.join(tmpdir(), 'nodepool-snap-seal-'));
    try {
      await mkdir(path.join(home, '.ssh'));
      await writeFile(path.join(home, '.ssh', 'authorized_keys'), 'ssh-ed25519 AAAA1 ops@site\nssh-ed25519 AAAA2 nodepool-build-snap-0000000001\nssh-ed25519 AAAA3 nodepool-build-snap-0000000001x\n');
      await writeFile(path.join(home, SETUP_FILE), 'x');
      await writeFile(path.join(home, SETUP_ENV_FILE), 'x');
      // Up to the cloud-init reset: this host is no instance to reset or power off.
      const command = sealCommand('nodepool-build-snap-0000000001').split(' && ').slice(0, 2).join(' && ');
      sh(home, command);
      assert.equal(await readFile(path.join(home, '.ssh', 'authorized_keys'), 'utf8'), 'ssh-ed25519 AAAA1 ops@site\nssh-ed25519 AAAA3 nodepool-build-snap-0000000001x\n');
      assert.equal(sh(home, 'ls -A | grep nodepool || true'), '');
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  });
});

describe('image-build payload: base-image (snapshot builds on another diskimage)', () => {
  const known = new Set(['snap']);
  const payload = (o: Record<string, unknown>): Buffer => Buffer.from(JSON.stringify({ 'image-id': 'snap-0000000001', ...o }));

  it('carries the upload the server found, and nothing when absent', () => {
    assert.equal(parseBuildPayload(payload({ 'base-image': '6f1c2e0a-1b2c-4d5e-8f90-0a1b2c3d4e5f' }), 'snap', known).baseImage, '6f1c2e0a-1b2c-4d5e-8f90-0a1b2c3d4e5f');
    assert.equal(parseBuildPayload(payload({ 'base-image': '/srv/images/base-0000000007.qcow2' }), 'snap', known).baseImage, '/srv/images/base-0000000007.qcow2');
    assert.equal('baseImage' in parseBuildPayload(payload({}), 'snap', known), false);
  });

  it('refuses a base-image that is not a printable string, as WORK_FAIL with a message', () => {
    for (const bad of [12, '', 'a\nb', 'x'.repeat(256), ['id']]) {
      assert.throws(() => parseBuildPayload(payload({ 'base-image': bad }), 'snap', known), (err: Error) =>
        err instanceof InvalidJobError && /"base-image" must be a string of 1-255 printable characters/.test(err.message));
    }
  });
});
