/**
 * Test support: fault injection between Nodepool and the loopback Nova. Two HTTP proxies on
 * 127.0.0.1: one in front of Keystone that rewrites the compute endpoint in the token's
 * catalog to the other, and one in front of Nova that passes every call through unless a
 * fault is armed for server creates (`POST /servers`) or deletes (`DELETE /servers/<id>`):
 * answer 500 without Nova seeing the call, answer 500 after Nova did it (its answer lost on
 * the way back), or let Nova do it and hold its answer until released. A clouds.yaml with the cloud `loopback` (the demo user) routes a provider through
 * them; Keystone, Nova, Neutron and Glance stay real. (glance-fault-proxy.ts does the same
 * for image uploads.)
 */
import http from 'node:http';
import { readFile, writeFile } from 'node:fs/promises';
import type { AddressInfo, Socket } from 'node:net';
import path from 'node:path';
import yaml from 'js-yaml';
import { loadCloud } from '../../lib/drivers/openstack/clouds-yaml.js';
import { KeystoneSession } from '../../lib/drivers/openstack/keystone.js';
import type { NovaCloud } from './openstack-full.js';

/** The calls a fault can hit. */
export type NovaCall = 'create' | 'delete';

/** An armed fault for the next `times` calls of `call`. */
export interface NovaFault {
  call: NovaCall;
  times: number;
  /**
   * `fail`: answer `status` without Nova seeing the call; `fail-after-nova`: Nova does it and
   * its answer is replaced by `status`; `hold`: Nova does it and its answer waits for
   * {@link NovaFaultProxy.release}.
   */
  kind: 'fail' | 'fail-after-nova' | 'hold';
  /** Default 500. */
  status?: number;
}

/** A create or delete the proxy has seen. */
export interface SeenNovaCall {
  call: NovaCall;
  /** The server id (deletes only). */
  serverId: string | null;
  /** When it arrived (epoch ms). */
  at: number;
  outcome: 'forwarded' | 'injected' | 'held';
}

const CREATE = /^\/v2\.1\/servers\/?$/;
const DELETE = /^\/v2\.1\/servers\/([^/?]+)$/;

export class NovaFaultProxy {
  readonly faults: NovaFault[] = [];
  readonly calls: SeenNovaCall[] = [];
  private readonly held = new Set<() => void>();
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly keystonePort: number,
    private readonly novaPort: number,
    private readonly keystoneProxy: http.Server,
    private readonly novaProxy: http.Server,
    /** A clouds.yaml whose cloud `loopback` goes through the proxies. */
    readonly cloudsYamlPath: string,
  ) {}

  /** Starts both proxies and writes `<dir>/clouds-nova-proxied.yaml`. */
  static async start(cloud: NovaCloud, dir: string): Promise<NovaFaultProxy> {
    const session = await KeystoneSession.authenticate(await loadCloud(cloud.cloud, { path: cloud.cloudsFile }));
    const novaPort = Number(new URL(session.endpoint('compute')).port);
    session.close();
    const keystonePort = Number(new URL(cloud.authUrl).port);
    const ks = http.createServer();
    const nv = http.createServer();
    await Promise.all([ks, nv].map((s) => new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))));
    const ksPort = (ks.address() as AddressInfo).port;
    const raw = yaml.load(await readFile(cloud.cloudsFile, 'utf8')) as { clouds: Record<string, { auth: Record<string, unknown> }> };
    const entry = raw.clouds[cloud.cloud];
    if (!entry) throw new Error(`${cloud.cloudsFile} has no cloud ${cloud.cloud}`);
    const cloudsYamlPath = path.join(dir, 'clouds-nova-proxied.yaml');
    await writeFile(cloudsYamlPath, yaml.dump({
      clouds: { [cloud.cloud]: { ...entry, auth: { ...entry.auth, auth_url: `http://127.0.0.1:${ksPort}/v3` } } },
    }), { mode: 0o600 });
    const p = new NovaFaultProxy(keystonePort, novaPort, ks, nv, cloudsYamlPath);
    const nvPort = (nv.address() as AddressInfo).port;
    ks.on('request', (req, res) => p.keystone(req, res, nvPort));
    nv.on('request', (req, res) => p.nova(req, res));
    for (const s of [ks, nv]) s.on('connection', (sock) => { p.sockets.add(sock); sock.on('close', () => p.sockets.delete(sock)); });
    return p;
  }

  /** Arms a fault (after those already armed for the same call). */
  arm(fault: NovaFault): void {
    this.faults.push({ ...fault });
  }

  /** How many calls of `call` were answered by an injected failure. */
  injected(call: NovaCall): number {
    return this.calls.filter((c) => c.call === call && c.outcome === 'injected').length;
  }

  /** Calls whose answer is held right now. */
  holding(): number {
    return this.held.size;
  }

  /** Disarms every fault and lets held answers go. */
  release(): void {
    this.faults.length = 0;
    for (const go of this.held) go();
    this.held.clear();
  }

  async stop(): Promise<void> {
    this.release();
    for (const s of this.sockets) s.destroy();
    await Promise.all([this.keystoneProxy, this.novaProxy].map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  }

  /** Forwards to Keystone; the token's catalog names this proxy instead of Nova. */
  private keystone(req: http.IncomingMessage, res: http.ServerResponse, nvPort: number): void {
    const nova = new RegExp(`127\\.0\\.0\\.1:${this.novaPort}(?!\\d)`, 'g');
    const headers = { ...req.headers };
    delete headers['accept-encoding']; // the body is rewritten: keep it plain
    const up = http.request({ host: '127.0.0.1', port: this.keystonePort, method: req.method, path: req.url, headers, agent: false }, (ur) => {
      const chunks: Buffer[] = [];
      ur.on('data', (c: Buffer) => chunks.push(c));
      ur.on('end', () => {
        const body = Buffer.from(Buffer.concat(chunks).toString('utf8').replace(nova, `127.0.0.1:${nvPort}`));
        const out = { ...ur.headers };
        delete out['transfer-encoding'];
        out['content-length'] = String(body.length);
        res.writeHead(ur.statusCode ?? 502, out);
        res.end(body);
      });
      ur.on('error', () => res.destroy());
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  }

  private nova(req: http.IncomingMessage, res: http.ServerResponse): void {
    const url = req.url ?? '';
    const del = req.method === 'DELETE' ? DELETE.exec(url) : null;
    const call: NovaCall | undefined = req.method === 'POST' && CREATE.test(url) ? 'create' : del ? 'delete' : undefined;
    const seen: SeenNovaCall | undefined = call ? { call, serverId: del ? decodeURIComponent(del[1] as string) : null, at: Date.now(), outcome: 'forwarded' } : undefined;
    if (seen) this.calls.push(seen);
    const i = call ? this.faults.findIndex((f) => f.call === call && f.times > 0) : -1;
    const fault = i >= 0 ? this.faults[i] : undefined;
    if (fault && seen) {
      if (--fault.times <= 0) this.faults.splice(i, 1);
      seen.outcome = fault.kind === 'hold' ? 'held' : 'injected';
    }
    const fail = (): void => {
      const status = fault?.status ?? 500;
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ computeFault: { code: status, message: 'Unexpected API Error (injected by the fault proxy)' } }));
    };
    if (fault?.kind === 'fail') {
      req.resume();
      req.on('end', fail);
      return;
    }
    const up = http.request({ host: '127.0.0.1', port: this.novaPort, method: req.method, path: url, headers: req.headers, agent: false });
    up.on('error', () => res.destroy());
    up.on('response', (ur) => {
      if (fault?.kind === 'fail-after-nova') {
        ur.resume();
        ur.on('end', fail);
        return;
      }
      const pass = (): void => {
        res.writeHead(ur.statusCode ?? 502, ur.headers);
        ur.pipe(res);
      };
      if (fault?.kind !== 'hold') return pass();
      // Nova has answered (the server exists); the client waits until released, or goes away.
      this.held.add(pass);
      res.on('close', () => {
        this.held.delete(pass);
        if (!res.writableFinished) ur.destroy();
      });
    });
    req.pipe(up);
  }
}
