/**
 * What a daemon does with an error nothing handled (bin/daemon.ts exitOnFatalError, installed
 * by nodepool-server and nodepool-builder first thing): it logs it, writes it to stderr, and
 * exits 70, never 0, even when a finished shutdown had already set exit code 0, so a unit
 * with `Restart=on-failure` restarts it. Run as real processes (the handler is process-wide).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { FATAL_EXIT_CODE } from '../../../bin/daemon.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** Runs `body` after installing the handler in a fresh node; resolves with its exit code and output. */
function runDaemonLike(body: string): Promise<{ code: number | null; stderr: string }> {
  const script = [
    "import { exitOnFatalError } from './bin/daemon.ts';",
    "import { createRootLogger } from './lib/log.ts';",
    "const log = createRootLogger({ format: 'json', defaultMeta: { process: 'test-daemon' } });",
    "exitOnFatalError(log, 'test-daemon');",
    // A handle that keeps the process alive, as a daemon's sockets do.
    'setInterval(() => undefined, 1000);',
    body,
  ].join('\n');
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

describe('a daemon dying of an unhandled error', () => {
  it('logs an unhandled rejection and exits 70 even after a clean shutdown set exit code 0', async () => {
    const r = await runDaemonLike("process.exitCode = 0; setTimeout(() => { void Promise.reject(new Error('no answer from ZooKeeper in 6000 ms')); }, 50);");
    assert.equal(r.code, FATAL_EXIT_CODE, r.stderr);
    assert.match(r.stderr, /test-daemon: unhandled rejection: Error: no answer from ZooKeeper in 6000 ms/);
    const logged = r.stderr.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.ok(logged.some((l) => l.level === 'error' && l.message === 'unhandled rejection: exiting' && l.error === 'no answer from ZooKeeper in 6000 ms'), r.stderr);
  });

  it('logs an uncaught exception and exits 70', async () => {
    const r = await runDaemonLike("setTimeout(() => { throw new TypeError('cannot read properties of undefined'); }, 50);");
    assert.equal(r.code, FATAL_EXIT_CODE, r.stderr);
    assert.match(r.stderr, /test-daemon: uncaught exception: TypeError: cannot read properties of undefined/);
  });

  it('reports a rejection with a non-Error reason by its text', async () => {
    const r = await runDaemonLike("setTimeout(() => { void Promise.reject('plain text'); }, 50);");
    assert.equal(r.code, FATAL_EXIT_CODE, r.stderr);
    assert.match(r.stderr, /unhandled rejection: Error: plain text/);
  });
});
