import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { knownHostsText, runSshCommand, sshCommandArgv } from '../../../lib/ssh/ssh-command.js';

const spec = {
  host: '127.0.0.1', port: 40022, user: 'debian', privateKey: '/keys/id_ed25519', knownHostsFile: '/tmp/kh', command: 'test -e /etc/os-release', connectTimeout: 12.5,
};

describe('sshCommandArgv', () => {
  it('checks the host key strictly against the given file, in batch mode, with only the given key', () => {
    assert.deepEqual(sshCommandArgv(spec), [
      'ssh', '-o', 'BatchMode=yes', '-o', 'PasswordAuthentication=no', '-o', 'ConnectTimeout=13', '-o', 'LogLevel=ERROR',
      '-o', 'GlobalKnownHostsFile=/dev/null', '-o', 'StrictHostKeyChecking=yes', '-o', 'UserKnownHostsFile=/tmp/kh',
      '-o', 'IdentitiesOnly=yes', '-i', '/keys/id_ed25519', '-p', '40022', '-l', 'debian', '--', '127.0.0.1', 'test -e /etc/os-release',
    ]);
  });

  it('skips the host key check only when no keys were recorded, and uses ssh defaults without a key', () => {
    const argv = sshCommandArgv({ ...spec, knownHostsFile: null, privateKey: null });
    assert.ok(argv.includes('StrictHostKeyChecking=no') && argv.includes('UserKnownHostsFile=/dev/null'));
    assert.ok(!argv.includes('-i') && !argv.includes('IdentitiesOnly=yes'));
  });

  it('puts options before the destination, so a command starting with - is not read as an option', () => {
    const argv = sshCommandArgv({ ...spec, command: '-rf' });
    assert.deepEqual(argv.slice(-3), ['--', '127.0.0.1', '-rf']);
  });
});

describe('knownHostsText', () => {
  it('names a non-22 port in brackets and port 22 bare', () => {
    assert.equal(knownHostsText('127.0.0.1', 2222, ['ssh-ed25519 AAAA', 'ecdsa-sha2-nistp256 BBBB']),
      '[127.0.0.1]:2222 ssh-ed25519 AAAA\n[127.0.0.1]:2222 ecdsa-sha2-nistp256 BBBB\n');
    assert.equal(knownHostsText('node.example', 22, ['ssh-ed25519 AAAA']), 'node.example ssh-ed25519 AAAA\n');
  });
});

describe('runSshCommand (with a stand-in ssh executable)', () => {
  async function fakeSsh(body: string): Promise<{ exe: string; dir: string }> {
    const dir = await mkdtemp(path.join(tmpdir(), 'fake-ssh-'));
    const exe = path.join(dir, 'ssh');
    await writeFile(exe, `#!/bin/sh\n${body}\n`);
    await chmod(exe, 0o755);
    return { exe, dir };
  }
  const base = { host: '127.0.0.1', port: 2222, user: 'debian', privateKey: '/k', command: 'true' };

  it('reports the exit status and the output tail, and writes the recorded keys as known hosts for the run', async () => {
    const { exe, dir } = await fakeSsh(`for a in "$@"; do case "$a" in UserKnownHostsFile=*) cat "\${a#UserKnownHostsFile=}";; esac; done; echo "to stderr" >&2; exit 3`);
    try {
      const r = await runSshCommand({ ...base, hostKeys: ['ssh-ed25519 AAAA'], timeoutMs: 10_000, ssh: exe });
      assert.equal(r.exitCode, 3);
      assert.equal(r.timedOut, false);
      assert.match(r.outputTail, /\[127\.0\.0\.1\]:2222 ssh-ed25519 AAAA/);
      assert.match(r.outputTail, /to stderr/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('keeps only the tail of long output', async () => {
    const { exe, dir } = await fakeSsh('i=0; while [ $i -lt 200 ]; do echo "line $i"; i=$((i+1)); done; exit 0');
    try {
      const r = await runSshCommand({ ...base, hostKeys: [], timeoutMs: 10_000, ssh: exe, tailChars: 20 });
      assert.equal(r.exitCode, 0);
      assert.equal(r.outputTail.length, 20);
      assert.match(r.outputTail, /line 199\n$/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('kills ssh at the deadline and says it timed out', async () => {
    const { exe, dir } = await fakeSsh('exec sleep 30');
    try {
      const started = Date.now();
      const r = await runSshCommand({ ...base, hostKeys: [], timeoutMs: 300, ssh: exe });
      assert.deepEqual([r.exitCode, r.timedOut], [null, true]);
      assert.ok(Date.now() - started < 5000);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('removes its known_hosts file afterwards', async () => {
    const { exe, dir } = await fakeSsh('for a in "$@"; do case "$a" in UserKnownHostsFile=*) echo "${a#UserKnownHostsFile=}";; esac; done');
    try {
      const r = await runSshCommand({ ...base, hostKeys: ['ssh-ed25519 AAAA'], timeoutMs: 10_000, ssh: exe });
      await assert.rejects(readFile(r.outputTail.trim()), { code: 'ENOENT' });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
