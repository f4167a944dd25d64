/**
 * Test support: an HTTP proxy on 127.0.0.1 in front of Glance that cuts image-data downloads
 * (`GET /v2/images/<id>/file`): for the next `times` of them it forwards the answer's headers
 * and `afterBytes` of its body, then destroys the connection. Every other call passes through.
 * A client pointed at {@link DownloadCutProxy.url} (GlanceClient's `endpoint`) sees Glance's
 * own answers, cut where the test says.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** A download the proxy has seen. */
export interface SeenDownload {
  imageId: string;
  /** Body bytes forwarded to the client. */
  bytes: number;
  outcome: 'forwarded' | 'cut';
}

export class DownloadCutProxy {
  /** Downloads still to cut, each after `afterBytes` of the body. */
  cut = { times: 0, afterBytes: 0 };
  readonly downloads: SeenDownload[] = [];
  private readonly sockets = new Set<Socket>();

  private constructor(private readonly server: http.Server, private readonly target: URL) {}

  /** Starts a proxy to `glanceUrl` (`http://127.0.0.1:<port>`, no path). */
  static async start(glanceUrl: string): Promise<DownloadCutProxy> {
    const server = http.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const p = new DownloadCutProxy(server, new URL(glanceUrl));
    server.on('request', (req, res) => p.forward(req, res));
    server.on('connection', (sock) => { p.sockets.add(sock); sock.on('close', () => p.sockets.delete(sock)); });
    return p;
  }

  /** The proxy's base URL, to use as Glance's. */
  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private forward(req: http.IncomingMessage, res: http.ServerResponse): void {
    const download = req.method === 'GET' ? /^\/v2\/images\/([^/]+)\/file$/.exec(req.url ?? '') : null;
    const up = http.request({
      host: this.target.hostname, port: Number(this.target.port), method: req.method, path: req.url, headers: { ...req.headers, host: this.target.host }, agent: false,
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
    up.on('response', (ur) => {
      res.writeHead(ur.statusCode ?? 502, ur.headers);
      if (!download || this.cut.times <= 0 || ur.statusCode !== 200) return void ur.pipe(res);
      this.cut.times--;
      const seen: SeenDownload = { imageId: download[1] as string, bytes: 0, outcome: 'forwarded' };
      this.downloads.push(seen);
      const limit = this.cut.afterBytes;
      ur.on('data', (c: Buffer) => {
        if (seen.outcome === 'cut') return;
        const part = c.subarray(0, Math.max(0, limit - seen.bytes));
        seen.bytes += part.length;
        if (part.length) res.write(part);
        if (seen.bytes < limit) return;
        seen.outcome = 'cut';
        ur.destroy();
        res.socket?.destroy();
      });
      ur.on('end', () => { if (seen.outcome !== 'cut') res.end(); });
    });
  }
}
