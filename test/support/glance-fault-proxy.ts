/**
 * Test support: fault injection between Nodepool and the loopback Glance. Two HTTP proxies on
 * 127.0.0.1: one in front of Keystone that rewrites the Glance endpoint in the token's catalog
 * to the other, and one in front of Glance that passes requests through unless a fault is set
 * for image-data uploads (`PUT /v2/images/<id>/file`): answer 500, close the connection after
 * some bytes, hold the body (stop reading it) until released, or alter one byte of it in
 * flight (same length: Glance stores and hashes the altered data). A clouds.yaml with the cloud
 * `loopback` (the demo user) routes a provider through them; Keystone and Glance stay real.
 */
import http from 'node:http';
import { writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { LoopbackCloud } from './openstack.js';

/** What the Glance proxy does to an image-data upload (the PUT of the file). */
export type UploadFault =
  | { kind: 'pass' }
  /** Answer `status` once the body is read (Glance's store failing), for the next `times` uploads. */
  | { kind: 'status'; status: number; times: number }
  /** Forward `afterBytes` of the body, then close both connections, for the next `times` uploads. */
  | { kind: 'close'; afterBytes: number; times: number }
  /** Forward `afterBytes`, then stop reading the body until {@link GlanceFaultProxy.release}. */
  | { kind: 'hold'; afterBytes: number }
  /** Forward the whole body with the byte at offset `atByte` inverted, for the next `times` uploads. */
  | { kind: 'flip'; atByte: number; times: number };

/** An upload the proxy has seen. */
export interface SeenUpload {
  imageId: string;
  /** The image's name from its create call (undefined when the create was not seen). */
  name: string | undefined;
  bytes: number;
  /** When the upload began (epoch ms). */
  at: number;
  outcome: 'forwarded' | 'held' | 'released' | 'status' | 'closed' | 'client-gone' | 'altered';
}

const DEMO_PW = 'loopback-demo';

export class GlanceFaultProxy {
  /** Applies to uploads whose image name `match` accepts (all when unset). */
  fault: UploadFault = { kind: 'pass' };
  match: (name: string | undefined) => boolean = () => true;
  readonly uploads: SeenUpload[] = [];
  private readonly names = new Map<string, string>();
  private readonly held = new Set<() => void>();
  private readonly sockets = new Set<import('node:net').Socket>();

  private constructor(
    private readonly cloud: LoopbackCloud,
    private readonly keystoneProxy: http.Server,
    private readonly glanceProxy: http.Server,
    /** A clouds.yaml whose cloud `loopback` goes through the proxies. */
    readonly cloudsYamlPath: string,
  ) {}

  /** Starts both proxies and writes `<dir>/clouds-proxied.yaml`. */
  static async start(cloud: LoopbackCloud, dir: string): Promise<GlanceFaultProxy> {
    const ks = http.createServer();
    const gl = http.createServer();
    await Promise.all([ks, gl].map((s) => new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))));
    const ksPort = (ks.address() as AddressInfo).port;
    const cloudsYamlPath = path.join(dir, 'clouds-proxied.yaml');
    await writeFile(cloudsYamlPath, `clouds:
  loopback:
    auth: {auth_url: "http://127.0.0.1:${ksPort}/v3", username: demo, password: ${DEMO_PW}, project_name: demo, user_domain_name: Default, project_domain_name: Default}
    region_name: RegionOne
    identity_api_version: 3
`, { mode: 0o600 });
    const p = new GlanceFaultProxy(cloud, ks, gl, cloudsYamlPath);
    const glPort = (gl.address() as AddressInfo).port;
    ks.on('request', (req, res) => p.keystone(req, res, glPort));
    gl.on('request', (req, res) => p.glance(req, res));
    for (const s of [ks, gl]) s.on('connection', (sock) => { p.sockets.add(sock); sock.on('close', () => p.sockets.delete(sock)); });
    return p;
  }

  /** Uploads held right now. */
  holding(): number {
    return this.uploads.filter((u) => u.outcome === 'held').length;
  }

  /** Lets held uploads go on, and passes every later one. */
  release(): void {
    this.fault = { kind: 'pass' };
    for (const go of this.held) go();
    this.held.clear();
  }

  async stop(): Promise<void> {
    this.release();
    for (const s of this.sockets) s.destroy();
    await Promise.all([this.keystoneProxy, this.glanceProxy].map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  }

  /** Forwards to Keystone; the token's catalog names this proxy instead of Glance. */
  private keystone(req: http.IncomingMessage, res: http.ServerResponse, glPort: number): void {
    const glance = new RegExp(`127\\.0\\.0\\.1:${this.cloud.glancePort}(?!\\d)`, 'g');
    const up = http.request({ host: '127.0.0.1', port: this.cloud.keystonePort, method: req.method, path: req.url, headers: req.headers, agent: false }, (ur) => {
      const chunks: Buffer[] = [];
      ur.on('data', (c: Buffer) => chunks.push(c));
      ur.on('end', () => {
        const body = Buffer.from(Buffer.concat(chunks).toString('utf8').replace(glance, `127.0.0.1:${glPort}`));
        const headers = { ...ur.headers };
        delete headers['transfer-encoding'];
        headers['content-length'] = String(body.length);
        res.writeHead(ur.statusCode ?? 502, headers);
        res.end(body);
      });
      ur.on('error', () => res.destroy());
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  }

  private glance(req: http.IncomingMessage, res: http.ServerResponse): void {
    const upload = req.method === 'PUT' ? /^\/v2\/images\/([^/]+)\/file$/.exec(req.url ?? '') : null;
    const create = req.method === 'POST' && req.url === '/v2/images';
    const up = http.request({ host: '127.0.0.1', port: this.cloud.glancePort, method: req.method, path: req.url, headers: req.headers, agent: false });
    up.on('error', () => res.destroy());
    up.on('response', (ur) => {
      res.writeHead(ur.statusCode ?? 502, ur.headers);
      if (!create) return void ur.pipe(res);
      const chunks: Buffer[] = [];
      ur.on('data', (c: Buffer) => { chunks.push(c); res.write(c); });
      ur.on('end', () => {
        res.end();
        try {
          const img = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id?: string; name?: string };
          if (img.id) this.names.set(img.id, img.name ?? '');
        } catch {
          // not an image: nothing to remember
        }
      });
    });
    if (!upload) return void req.pipe(up);
    const seen: SeenUpload = { imageId: upload[1] as string, name: this.names.get(upload[1] as string), bytes: 0, at: Date.now(), outcome: 'forwarded' };
    this.uploads.push(seen);
    const fault = this.match(seen.name) ? this.fault : { kind: 'pass' as const };
    if (fault.kind === 'status') {
      if (--fault.times <= 0) this.fault = { kind: 'pass' };
      seen.outcome = 'status';
      up.removeAllListeners('error').on('error', () => undefined).destroy();
      // Read the whole body first, as Glance does when its store fails after receiving the data.
      req.on('data', (c: Buffer) => { seen.bytes += c.length; });
      req.on('end', () => {
        res.writeHead(fault.status, { 'content-type': 'text/plain' });
        res.end(`${fault.status} Internal Server Error (injected by the fault proxy)\n`);
      });
      return;
    }
    const limit = fault.kind === 'close' || fault.kind === 'hold' ? fault.afterBytes : Infinity;
    if ((fault.kind === 'close' || fault.kind === 'flip') && --fault.times <= 0) this.fault = { kind: 'pass' };
    if (fault.kind === 'flip') {
      req.on('aborted', () => { seen.outcome = 'client-gone'; up.destroy(); });
      req.on('data', (c: Buffer) => {
        const at = fault.atByte - seen.bytes;
        seen.bytes += c.length;
        if (at < 0 || at >= c.length) return void up.write(c);
        const altered = Buffer.from(c);
        altered[at] = (altered[at] as number) ^ 0xff;
        seen.outcome = 'altered';
        up.write(altered);
      });
      req.on('end', () => up.end());
      return;
    }
    let holding = false;
    req.on('aborted', () => { seen.outcome = 'client-gone'; up.destroy(); });
    req.on('data', (c: Buffer) => {
      const room = limit - seen.bytes;
      if (holding || room <= 0) return;
      const part = c.length > room ? c.subarray(0, room) : c;
      seen.bytes += part.length;
      up.write(part);
      if (seen.bytes < limit) return;
      if (fault.kind === 'close') {
        seen.outcome = 'closed';
        up.destroy();
        req.socket.destroy();
        return;
      }
      holding = true;
      seen.outcome = 'held';
      req.pause();
      const rest = c.subarray(part.length);
      const go = (): void => {
        if (seen.outcome === 'client-gone') return;
        holding = false;
        // Held, then let go: still an upload the fault hit (its client may already have given
        // up on it, its abort not yet seen here).
        seen.outcome = 'released';
        if (rest.length) { seen.bytes += rest.length; up.write(rest); }
        req.removeAllListeners('data');
        req.on('data', (d: Buffer) => { seen.bytes += d.length; up.write(d); });
        req.resume();
      };
      this.held.add(go);
    });
    req.on('end', () => { if (!holding) up.end(); });
  }
}
