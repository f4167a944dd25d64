/**
 * TLS to gearmand. Debian's gearmand 1.1.20 accepts `--ssl` but was built without TLS (it reads
 * the ClientHello as a Gearman packet: INVALID_MAGIC), so the fixture terminates TLS with a
 * node:tls proxy in front of a cleartext gearmand. What is tested here is our side: node:tls
 * with CA pinning, certificate verification and client certificates.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { GearmanConnectionError } from '../../../lib/errors.js';
import { adminStatus } from '../../../lib/gearman/admin.js';
import { GearmanClient } from '../../../lib/gearman/client.js';
import type { GearmanServerAddress } from '../../../lib/gearman/types.js';
import { GearmanWorker } from '../../../lib/gearman/worker.js';
import { Releasers } from '../../../lib/lifecycle.js';
import { startGearmand, testLogger } from '../../support/gearmand.js';
import { runningProcesses } from '../../support/processes.js';

const log = testLogger();
const run = promisify(execFile);

/** A throwaway self-signed certificate for 127.0.0.1. */
async function selfSigned(dir: string, name: string): Promise<{ cert: string; key: string }> {
  const cert = path.join(dir, `${name}.crt`);
  const key = path.join(dir, `${name}.key`);
  await run('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', key, '-out', cert, '-days', '1', '-subj', `/CN=${name}`, '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost'], { timeout: 10_000 });
  return { cert, key };
}

void describe('gearman over TLS', () => {
  let dir: string;
  let server: { cert: string; key: string };
  let clientCert: { cert: string; key: string };
  const cleanup = new Releasers();

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'gearman-tls-'));
    server = await selfSigned(dir, 'gearmand');
    clientCert = await selfSigned(dir, 'builder');
  });
  afterEach(async () => {
    await cleanup.releaseAll();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });
  after(() => rm(dir, { recursive: true, force: true }));

  void it('runs a job and admin commands with a pinned CA', async () => {
    const g = await startGearmand({ tls: server });
    cleanup.add('gearmand', () => g.stop());
    const address: GearmanServerAddress = { host: '127.0.0.1', port: g.port, tls: { ca: await readFile(server.cert, 'utf8') } };
    assert.deepEqual(g.address, address);
    const worker = new GearmanWorker({ servers: [address], log, reconnect: { initialMs: 20, maxMs: 200 } });
    const client = new GearmanClient({ servers: [address], log });
    cleanup.add('worker', () => worker.stop());
    cleanup.add('client', () => client.stop());
    worker.register('secure-echo', async (job) => ({ type: 'complete', data: job.data }));
    await worker.start();
    await client.start();
    const res = await client.submit('secure-echo', 'over tls', { unique: 'tls-1' }).result;
    assert.equal(res.type === 'complete' && res.data.toString(), 'over tls');
    const st = await adminStatus(address);
    assert.deepEqual(st.find((s) => s.name === 'secure-echo'), { name: 'secure-echo', queued: 0, running: 0, workers: 1 });
  });

  void it('refuses a server certificate it does not trust', async () => {
    const g = await startGearmand({ tls: server });
    cleanup.add('gearmand', () => g.stop());
    const untrusted: GearmanServerAddress = { host: '127.0.0.1', port: g.port, tls: true };
    const client = new GearmanClient({ servers: [untrusted], log, reconnect: { initialMs: 20, maxMs: 100 } });
    cleanup.add('client', () => client.stop());
    await client.start();
    await assert.rejects(client.submit('x', '', { createdTimeoutMs: 500 }).result, GearmanConnectionError);
    assert.equal(client.connectedCount(), 0);
    await assert.rejects(adminStatus(untrusted), (e: unknown) => e instanceof GearmanConnectionError && /certificate/i.test(e.message));
  });

  void it('presents a client certificate when the server requires one', async () => {
    const g = await startGearmand({ tls: { ...server, clientCa: clientCert.cert } });
    cleanup.add('gearmand', () => g.stop());
    const ca = await readFile(server.cert, 'utf8');
    const withCert: GearmanServerAddress = {
      host: '127.0.0.1', port: g.port,
      tls: { ca, cert: await readFile(clientCert.cert, 'utf8'), key: await readFile(clientCert.key, 'utf8') },
    };
    assert.ok(Array.isArray(await adminStatus(withCert)));
    await assert.rejects(adminStatus({ host: '127.0.0.1', port: g.port, tls: { ca } }), GearmanConnectionError);
  });
});
