import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { BuilderError, PostUploadHookError } from '../../../lib/errors.js';
import { waitFor } from '../../../lib/lifecycle.js';
import { createRootLogger } from '../../../lib/log.js';
import { isExpectedFailure } from '../../../workers/builder/outcome.js';
import {
  hookVerdict, OutputTail, postUploadHookArgv, runPostUploadHook,
} from '../../../workers/builder/post-upload-hook.js';
import { testLogger } from '../../support/test-log.js';

const call = { script: '/etc/nodepool/hook.sh', provider: 'cloud-a', externalId: 'f3e1-77', file: '/opt/images/deb-0000000001.qcow2' };
const exited = (exitCode: number | null, signal: NodeJS.Signals | null = null, aborted = false) => ({ exitCode, signal, aborted });

describe('post-upload-hook: argv and verdict', () => {
  it('calls the script as Nodepool 11 does: <script> <provider> <external-id> <local-file>', () => {
    assert.deepEqual(postUploadHookArgv(call), ['/etc/nodepool/hook.sh', 'cloud-a', 'f3e1-77', '/opt/images/deb-0000000001.qcow2']);
  });

  it('passes on exit 0 only', () => {
    assert.deepEqual(hookVerdict(call.script, { result: exited(0), timedOut: false, tail: 'fine' }, 60), { ok: true });
    const v = hookVerdict(call.script, { result: exited(3), timedOut: false, tail: 'no sshd in image\nchecked 4 things' }, 60);
    assert.deepEqual(v, { ok: false, message: 'post-upload-hook /etc/nodepool/hook.sh exited 3: no sshd in image\nchecked 4 things', exitCode: 3, signal: null, timedOut: false });
  });

  it('fails a hook killed by a signal, timed out, aborted by shutdown or that could not start, and says which', () => {
    const msg = (run: Parameters<typeof hookVerdict>[1]): string => {
      const v = hookVerdict(call.script, run, 600);
      assert.equal(v.ok, false);
      return v.ok ? '' : v.message;
    };
    assert.equal(msg({ result: exited(null, 'SIGSEGV'), timedOut: false, tail: '' }), 'post-upload-hook /etc/nodepool/hook.sh was killed by SIGSEGV (no output)');
    assert.equal(msg({ result: exited(null, 'SIGTERM', true), timedOut: true, tail: 'waiting' }),
      'post-upload-hook /etc/nodepool/hook.sh did not finish within 600 s (image-upload-timeout) and was killed: waiting');
    // A hook that exits 0 while the deadline fires still timed out: the group was being killed.
    assert.match(msg({ result: exited(0, null, true), timedOut: true, tail: '' }), /did not finish within 600 s/);
    assert.match(msg({ result: exited(null, 'SIGTERM', true), timedOut: false, tail: '' }), /was killed: the builder is shutting down/);
    assert.equal(msg({ startError: new Error('spawn /etc/nodepool/hook.sh EACCES'), timedOut: false, tail: '' }),
      'post-upload-hook /etc/nodepool/hook.sh could not be started (spawn /etc/nodepool/hook.sh EACCES) (no output)');
  });

  it('is an expected failure (WORK_FAIL), not an exception', () => {
    const err = new PostUploadHookError('post-upload-hook x exited 1 (no output)', { exitCode: 1, signal: null, timedOut: false });
    assert.ok(err instanceof BuilderError);
    assert.equal(isExpectedFailure(err), true);
    assert.equal(err.name, 'PostUploadHookError');
  });
});

describe('post-upload-hook: output tail', () => {
  it('keeps the last lines, drops trailing blank ones, and counts them all', () => {
    const t = new OutputTail(3, 1000);
    for (const l of ['one', 'two', 'three', 'four', '', ' ']) t.push(l);
    assert.equal(t.text(), 'four');
    assert.equal(t.total, 6);
    const u = new OutputTail(3, 1000);
    for (const l of ['a', 'b', 'c', 'd']) u.push(l);
    assert.equal(u.text(), 'b\nc\nd');
  });

  it('cuts a long tail at the front, marked, to the character bound', () => {
    const t = new OutputTail(10, 10);
    t.push('0123456789abcdef');
    assert.equal(t.text(), '…789abcdef');
    assert.equal(t.text().length, 10);
    assert.equal(new OutputTail().text(), '');
  });
});

describe('post-upload-hook: running the script', () => {
  let dir: string;
  before(async () => { dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-hook-unit-')); });
  after(async () => { await rm(dir, { recursive: true, force: true }); });

  async function script(name: string, body: string): Promise<string> {
    const p = path.join(dir, name);
    await writeFile(p, `#!/bin/sh\n${body}\n`);
    await chmod(p, 0o755);
    return p;
  }

  it('resolves when the script exits 0, having given it the three arguments', async () => {
    const out = path.join(dir, 'args-seen');
    const s = await script('pass.sh', `printf '%s\\n' "$#" "$@" > ${out}; echo checked`);
    await runPostUploadHook({ ...call, script: s }, { timeoutS: 10, signal: new AbortController().signal, log: testLogger() });
    assert.deepEqual((await readFile(out, 'utf8')).trim().split('\n'), ['3', 'cloud-a', 'f3e1-77', '/opt/images/deb-0000000001.qcow2']);
  });

  it('throws with the exit code and the tail of stdout and stderr, which it logs line by line', async () => {
    const s = await script('fail.sh', 'echo "booting image"; echo "no sshd in image" >&2; exit 3');
    const stream = new PassThrough();
    const logged: Array<Record<string, unknown>> = [];
    stream.on('data', (b: Buffer) => { for (const l of b.toString('utf8').split('\n').filter(Boolean)) logged.push(JSON.parse(l) as Record<string, unknown>); });
    const log = createRootLogger({ format: 'json', stream, level: 'debug' }).child({ component: 'builder' });
    const err = await runPostUploadHook({ ...call, script: s }, { timeoutS: 10, signal: new AbortController().signal, log }).then(() => undefined, (e: unknown) => e);
    assert.deepEqual(logged.filter((l) => l.message === 'post-upload-hook output').map((l) => [l.hook, l.line]).sort(),
      [[s, 'booting image'], [s, 'no sshd in image']]);
    const end = logged.find((l) => l.message === 'post-upload-hook failed');
    assert.equal(end?.level, 'warn');
    assert.equal(end?.exitCode, 3);
    assert.ok(err instanceof PostUploadHookError);
    assert.equal(err.exitCode, 3);
    assert.match(err.message, new RegExp(`^post-upload-hook ${s} exited 3: `));
    assert.match(err.message, /booting image/);
    assert.match(err.message, /no sshd in image/);
  });

  it('kills the whole process group at the timeout, a background child included', async () => {
    const pidFile = path.join(dir, 'child.pid');
    const s = await script('hang.sh', `sleep 60 & echo $! > ${pidFile}; echo waiting; wait`);
    const started = Date.now();
    const err = await runPostUploadHook({ ...call, script: s }, { timeoutS: 1, killGraceMs: 500, signal: new AbortController().signal, log: testLogger() })
      .then(() => undefined, (e: unknown) => e);
    assert.ok(err instanceof PostUploadHookError);
    assert.equal(err.timedOut, true);
    assert.match(err.message, /did not finish within 1 s \(image-upload-timeout\) and was killed: waiting$/);
    assert.ok(Date.now() - started < 5000, `took ${Date.now() - started} ms`);
    const child = Number((await readFile(pidFile, 'utf8')).trim());
    await waitFor(() => { try { process.kill(child, 0); return false; } catch { return true; } }, { timeoutMs: 3000, what: `background child ${child} gone` });
  });

  it('runs a hook named without a path from the PATH of its environment, as Nodepool 11 does', async () => {
    const bin = path.join(dir, 'bin');
    await mkdir(bin);
    const out = path.join(dir, 'named-args');
    await writeFile(path.join(bin, 'check-image'), `#!/bin/sh\nprintf '%s\\n' "$0" "$@" > ${out}\n`);
    await chmod(path.join(bin, 'check-image'), 0o755);
    await runPostUploadHook({ ...call, script: 'check-image' }, {
      timeoutS: 10, signal: new AbortController().signal, log: testLogger(), env: { PATH: `${bin}:${process.env.PATH ?? ''}` },
    });
    assert.deepEqual((await readFile(out, 'utf8')).trim().split('\n'), [path.join(bin, 'check-image'), 'cloud-a', 'f3e1-77', '/opt/images/deb-0000000001.qcow2']);
  });

  it('fails a script that cannot be started', async () => {
    const s = path.join(dir, 'not-executable.sh');
    await writeFile(s, '#!/bin/sh\nexit 0\n');
    await assert.rejects(runPostUploadHook({ ...call, script: s }, { timeoutS: 10, signal: new AbortController().signal, log: testLogger() }),
      (e: unknown) => e instanceof PostUploadHookError && /^post-upload-hook \S+ could not be started \(spawn \S+ EACCES\)/.test(e.message));
  });
});
