import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { HostScanError, keyscan } from '../../../lib/ssh/keyscan.js';

const ED = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIALxfbX9TwoknOH3jri1F6wjGMKQSpsD6S1WXU/kTBfV';

/**
 * An ssh-keyscan stand-in (one process, as ssh-keyscan is): records its argv, waits the seconds
 * in ./delay (a slow key exchange), then prints a key when it exits, as ssh-keyscan's stdout,
 * buffered in a pipe, does.
 */
const FAKE = `#!${process.execPath}
const fs = require('node:fs');
const path = require('node:path');
const dir = path.dirname(process.argv[1]);
fs.appendFileSync(path.join(dir, 'argv'), process.argv.slice(2).join(' ') + '\\n');
setTimeout(() => process.stdout.write('[127.0.0.1]:2222 ${ED}\\n'), Number(fs.readFileSync(path.join(dir, 'delay'), 'utf8')) * 1000);
`;

describe('keyscan', () => {
  let dir: string;
  let command: string;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'nodepool-keyscan-'));
    command = path.join(dir, 'ssh-keyscan');
    await writeFile(command, FAKE);
    await chmod(command, 0o755);
  });
  after(() => rm(dir, { recursive: true, force: true }));

  const scan = async (delayS: number, opts: { timeoutMs: number; connectTimeoutMs?: number }): Promise<{ keys?: string[]; error?: unknown; argv: string[] }> => {
    await writeFile(path.join(dir, 'delay'), String(delayS));
    await rm(path.join(dir, 'argv'), { force: true });
    let keys: string[] | undefined;
    let error: unknown;
    try {
      keys = await keyscan('127.0.0.1', 2222, { ...opts, command, retryMs: 50 });
    } catch (err) {
      error = err;
    }
    // A stand-in killed before it ran its first line (node starts slowly at load) wrote none.
    const argv = await readFile(path.join(dir, 'argv'), 'utf8').then((t) => t.trim().split('\n'), () => []);
    return { keys, error, argv };
  };

  it('bounds each connection\'s silence by connectTimeoutMs (its -T) and lets a slow exchange finish within the deadline', async () => {
    // 1.5 s of exchange against a 1 s connection bound: a scan killed at the connection bound
    // would lose its buffered keys on every attempt (the livelock a loaded machine showed).
    const { keys, error, argv } = await scan(1.5, { timeoutMs: 60_000, connectTimeoutMs: 1000 });
    assert.equal(error, undefined);
    assert.deepEqual(keys, [ED]);
    assert.deepEqual(argv, ['-t rsa,ecdsa,ed25519 -p 2222 -T 1 127.0.0.1'], 'one attempt, -T from the connection bound');
  });

  it('without a connection bound, -T is what is left of the deadline', async () => {
    const { keys, argv } = await scan(0, { timeoutMs: 60_000 });
    assert.deepEqual(keys, [ED]);
    assert.deepEqual(argv, ['-t rsa,ecdsa,ed25519 -p 2222 -T 60 127.0.0.1']);
  });

  it('kills a scan still running at the deadline and says that no key came', async () => {
    const started = Date.now();
    const { keys, error } = await scan(30, { timeoutMs: 1000, connectTimeoutMs: 500 });
    assert.equal(keys, undefined);
    assert.ok(error instanceof HostScanError, String(error));
    assert.ok(Date.now() - started < 25_000, `gave up after ${Date.now() - started} ms`);
  });
});
