import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { Releasers, waitFor } from '../../../lib/lifecycle.js';
import { runningProcesses } from '../../support/processes.js';
import { createCliEnv } from './cli-env.js';

/** A Glance that accepts connections and never answers (a stopped or wedged API process). */
async function frozenServer(): Promise<{ port: number; connections: () => number; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  let accepted = 0;
  const srv = net.createServer((s) => { accepted += 1; sockets.add(s); s.on('close', () => sockets.delete(s)); });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  return {
    port: (srv.address() as net.AddressInfo).port,
    connections: () => accepted,
    close: () => new Promise<void>((resolve) => { for (const s of sockets) s.destroy(); srv.close(() => resolve()); }),
  };
}

/**
 * A Keystone that issues a token whose catalog sends the image service to `imageUrl` — just
 * the one call the client makes, so the Glance behind it can be a frozen one.
 */
async function keystone(imageUrl: string): Promise<{ port: number; close(): Promise<void> }> {
  const srv = http.createServer((req, res) => {
    req.resume();
    if (req.method !== 'POST' || !req.url?.endsWith('/v3/auth/tokens')) { res.writeHead(404).end(); return; }
    const now = Date.now();
    const token = {
      issued_at: new Date(now).toISOString(), expires_at: new Date(now + 3_600_000).toISOString(), project: { id: 'p1' },
      catalog: [{ type: 'image', endpoints: [{ interface: 'public', region_id: 'RegionOne', region: 'RegionOne', url: imageUrl }] }],
    };
    res.writeHead(201, { 'Content-Type': 'application/json', 'X-Subject-Token': 'tok' }).end(JSON.stringify({ token }));
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  return { port: (srv.address() as net.AddressInfo).port, close: () => new Promise<void>((resolve) => { srv.closeAllConnections(); srv.close(() => resolve()); }) };
}

describe('nodepool alien-image-list against a cloud that stops answering', () => {
  const releasers = new Releasers();
  afterEach(async () => {
    await releasers.releaseAll();
    assert.deepEqual(runningProcesses().map((p) => p.name), []);
  });

  it('fails that provider after --timeout with a clear message instead of hanging', async () => {
    const glance = await frozenServer();
    releasers.add('frozen glance', () => glance.close());
    const ks = await keystone(`http://127.0.0.1:${glance.port}`);
    releasers.add('keystone', () => ks.close());
    const env = await createCliEnv((stateDir) => `
state-dir: ${stateDir}
clouds-file: ${JSON.stringify(path.join(path.dirname(stateDir), 'clouds.yaml'))}
gearman-servers: [{host: 127.0.0.1}]
diskimages: [{name: ubuntu-jammy}]
providers:
  - {name: frozen, cloud: frozen, diskimages: [{name: ubuntu-jammy}]}
`);
    releasers.add('cli env', () => env.close());
    await writeFile(path.join(env.dir, 'clouds.yaml'), [
      'clouds:',
      '  frozen:',
      `    auth: {auth_url: "http://127.0.0.1:${ks.port}/v3", username: demo, password: pw, project_name: demo, user_domain_name: Default, project_domain_name: Default}`,
      '    region_name: RegionOne',
      '',
    ].join('\n'));
    const started = Date.now();
    // Killed after 30 s: before the bound, each Glance request waited for the 60 s idle timeout.
    const r = await env.start(['alien-image-list', '--timeout', '2'], 30_000).result;
    const seconds = (Date.now() - started) / 1000;
    assert.equal(r.code, 1, `exit code (stderr: ${r.stderr})`);
    assert.equal(r.stderr, 'Listing images of provider frozen failed: no answer within 2 s (--timeout)\n');
    assert.ok(seconds < 15, `exited after ${seconds.toFixed(1)} s`);
    await waitFor(() => glance.connections() > 0, { timeoutMs: 1000, what: 'the listing to have reached the frozen Glance' });
  });
});
