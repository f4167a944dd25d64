import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { CommandFailedError } from '../../lib/errors.js';
import { pollUntil } from '../../lib/lifecycle.js';
import { runCommand } from '../../lib/run-command.js';

/** Whether a process with this pid still runs (a zombie nobody reaped yet does not). */
function alive(pid: number): boolean {
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return false;
  }
}

describe('runCommand', () => {
  it('resolves with the exit status, the output kept and every line, without a shell', async () => {
    const lines: string[] = [];
    const r = await runCommand(['sh', '-c', 'echo one; echo two >&2; echo "$0"; exit 3', '$HOME'], { onLine: (l) => lines.push(l) });
    assert.equal(r.exitCode, 3);
    assert.equal(r.stdout, 'one\n$HOME\n');
    assert.equal(r.stderr, 'two\n');
    assert.deepEqual(lines.sort(), ['$HOME', 'one', 'two']);
    assert.equal(r.aborted, false);
    assert.equal(r.timedOut, false);
  });

  it('keeps the last tailChars of stdout and stderr together', async () => {
    const r = await runCommand(['sh', '-c', 'printf abcdef; printf ghij >&2'], { tailChars: 5 });
    assert.equal(r.outputTail.length, 5);
    assert.match(r.outputTail, /[a-j]{5}/);
  });

  it('with check, rejects a non-zero exit naming the command and its last stderr lines', async () => {
    const err = await runCommand(['sh', '-c', 'echo broken image >&2; exit 2'], { check: true }).catch((e: unknown) => e);
    assert.ok(err instanceof CommandFailedError);
    assert.equal(err.exitCode, 2);
    assert.equal(err.message, 'sh -c failed (exit 2): broken image');
  });

  it('rejects a program that cannot start (a CommandFailedError with check)', async () => {
    await assert.rejects(runCommand(['/nonexistent/program']), /ENOENT/);
    await assert.rejects(runCommand(['/nonexistent/program'], { check: true }), (e: unknown) => e instanceof CommandFailedError && /^cannot run/.test(e.message));
  });

  it('kills a program that runs past timeoutMs', async () => {
    const started = Date.now();
    const r = await runCommand(['sleep', '30'], { timeoutMs: 100 });
    assert.equal(r.timedOut, true);
    assert.equal(r.signal, 'SIGKILL');
    assert.ok(Date.now() - started < 10_000);
    await assert.rejects(runCommand(['sleep', '30'], { timeoutMs: 100, check: true }), /sleep 30 did not finish within 100 ms/);
  });

  it('on abort kills the whole process group, SIGTERM first, and says aborted', async () => {
    const ac = new AbortController();
    let grandchild = 0;
    const r = await runCommand(['sh', '-c', 'sleep 30 & echo $!; wait'], {
      processGroup: true, killGraceMs: 2000, signal: ac.signal,
      onLine: (l) => { grandchild = Number(l); ac.abort(new Error('shutting down')); },
    });
    assert.equal(r.aborted, true);
    assert.equal(r.signal, 'SIGTERM');
    assert.ok(grandchild > 0);
    // Within 10 s, well before the sleep's own 30 s: it went with its group, not at its end. Not
    // at once: a killed process closes its pipes before the kernel marks it a zombie, so right
    // after the group's last pipe closed it can still read as running.
    const gone = await pollUntil(() => (alive(grandchild) ? undefined : true), { timeoutMs: 10_000, intervalMs: 20 });
    assert.equal(gone, true, 'the background sleep went with its group');
  });

  it('with check, an abort rejects with the signal\'s reason', async () => {
    await assert.rejects(runCommand(['sleep', '30'], { check: true, signal: AbortSignal.abort(new Error('stop now')) }), /stop now/);
    const ac = new AbortController();
    const run = runCommand(['sleep', '30'], { check: true, signal: ac.signal });
    ac.abort(new Error('later'));
    await assert.rejects(run, /later/);
  });
});
