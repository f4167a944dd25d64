/**
 * The admission control of the daemons' HTTP ports (lib/http/admission.ts) on real sockets:
 * with every slot taken by slow requests, a health probe is still answered at once, the
 * connections held stay within the bound (the one waiting longest is closed, logged once),
 * and a client that never sends its request loses its slot.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { AdmissionListener } from '../../../lib/http/admission.js';
import { waitFor } from '../../../lib/lifecycle.js';
import { createRootLogger } from '../../../lib/log.js';
import { Writable } from 'node:stream';

/** One GET on a new connection: status, or the error code that ended it. */
function fetchOnce(port: number, path: string): Promise<{ status: number | null; error: string | null; ms: number }> {
  const t0 = Date.now();
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path, agent: false, timeout: 10_000 }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? null, error: null, ms: Date.now() - t0 }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ status: null, error: err.code ?? err.message, ms: Date.now() - t0 }));
  });
}

describe('admission control of an HTTP port', () => {
  const lines: string[] = [];
  let server: http.Server;
  let listener: AdmissionListener;
  const held: Array<() => void> = [];

  before(async () => {
    const log = createRootLogger({ level: 'debug', format: 'json', stream: new Writable({ write(chunk: Buffer, _e, cb) { lines.push(chunk.toString()); cb(); } }) });
    server = http.createServer((req, res) => {
      if (req.url === '/health/live') {
        res.end('ok\n');
        return;
      }
      // A slow answer, released by the test.
      held.push(() => res.end('slow\n'));
    });
    listener = await AdmissionListener.listen(server, {
      host: '127.0.0.1', port: 0, log, what: 'test port', maxActive: 2, maxConnections: 6, requestTimeoutMs: 500, priorityPaths: ['/health/live'],
    });
  });

  after(async () => {
    for (const release of held.splice(0)) release();
    await listener?.close();
  });

  it('answers a probe past slow requests, closes the longest waiting past the bound, and frees a silent slot', async () => {
    let settled = 0;
    const ended: unknown[] = [];
    const slow = Array.from({ length: 8 }, () => fetchOnce(listener.port, '/metrics').then((r) => { settled += 1; ended.push(r); return r; }));
    await waitFor(() => held.length === 2, { timeoutMs: 5000, what: 'two slow requests in their slots', intervalMs: 10 });
    const probe = await fetchOnce(listener.port, '/health/live');
    assert.equal(probe.status, 200, 'the probe is answered while both slots are taken');
    // 2 in slots + 6 waiting, then the probe: 9 > 6 held, so the three that waited longest were closed unanswered.
    assert.ok(settled <= 3, `the others still wait: ${JSON.stringify(ended)}`);
    await new Promise((r) => setTimeout(r, 700)); // past requestTimeoutMs: requests already sent keep their slots
    // Answer the slow ones as they reach a slot, until every one has ended.
    await waitFor(() => {
      for (const release of held.splice(0)) release();
      return settled === 8;
    }, { timeoutMs: 10_000, what: 'every slow request to end', intervalMs: 20 });
    const results = await Promise.all(slow);
    const refused = results.filter((r) => r.error !== null).length;
    assert.equal(refused, 3, JSON.stringify(results));
    assert.equal(results.filter((r) => r.status === 200).length, 5);
    assert.equal(lines.filter((l) => l.includes('test port at its connection bound')).length, 1, 'logged once');
    // A client that connects and sends nothing loses its slot after requestTimeoutMs.
    const silent = net.connect(listener.port, '127.0.0.1');
    const closed = new Promise<number>((resolve) => {
      const t0 = Date.now();
      silent.on('close', () => resolve(Date.now() - t0));
      silent.on('error', () => undefined);
    });
    const ms = await closed;
    assert.ok(ms < 3000, `the silent connection was closed after ${ms} ms`);
  });
});
