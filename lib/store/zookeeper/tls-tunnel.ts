/**
 * TLS to ZooKeeper without patching the client: node-zookeeper-client speaks plain TCP only,
 * so each configured server gets a listener on 127.0.0.1 (an ephemeral port) whose every
 * connection is piped through `tls.connect` (CA, client certificate and key) to the server's
 * secure port. The client is given the tunnels' addresses. Only this process can reach them.
 */
import net from 'node:net';
import tls from 'node:tls';

/** PEM contents (not paths) of the client side of mutual TLS. */
export interface TlsMaterial {
  ca: string;
  cert: string;
  key: string;
}

/** One local listener per server. */
export class TlsTunnel {
  private readonly sockets = new Set<net.Socket>();
  private closing: Promise<void> | undefined;

  private constructor(private readonly servers: net.Server[], readonly ports: number[]) {}

  /** Opens one tunnel per `targets` entry; `ports[i]` leads to `targets[i]`. */
  static async open(targets: ReadonlyArray<{ host: string; port: number }>, material: TlsMaterial): Promise<TlsTunnel> {
    const servers: net.Server[] = [];
    const ports: number[] = [];
    try {
      for (const target of targets) {
        const server = net.createServer((local) => tunnel.pipe(local, target, material));
        servers.push(server);
        await new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          server.listen(0, '127.0.0.1', () => resolve());
        });
        const addr = server.address();
        ports.push(typeof addr === 'object' && addr ? addr.port : 0);
      }
    } catch (err) {
      for (const s of servers) s.close();
      throw err;
    }
    const tunnel = new TlsTunnel(servers, ports);
    return tunnel;
  }

  /** `127.0.0.1:<port>,…` for the client. */
  get hosts(): string {
    return this.ports.map((p) => `127.0.0.1:${p}`).join(',');
  }

  /** Stops listening and cuts every tunnelled connection. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      for (const s of this.sockets) s.destroy();
      this.sockets.clear();
      await Promise.all(this.servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
    })();
    return this.closing;
  }

  private pipe(local: net.Socket, target: { host: string; port: number }, material: TlsMaterial): void {
    if (this.closing) { local.destroy(); return; }
    const remote = tls.connect({
      host: target.host,
      port: target.port,
      ca: material.ca,
      cert: material.cert,
      key: material.key,
      // SNI takes host names only; an address is checked against the certificate's IP SANs.
      ...(net.isIP(target.host) ? {} : { servername: target.host }),
    });
    this.sockets.add(local);
    this.sockets.add(remote);
    local.setNoDelay(true);
    remote.setNoDelay(true);
    const drop = (): void => {
      local.destroy();
      remote.destroy();
      this.sockets.delete(local);
      this.sockets.delete(remote);
    };
    // A failed handshake or a dropped link closes both sides: the client sees a connection
    // loss and reconnects (through the tunnel again), as with a plain connection.
    for (const s of [local, remote]) s.on('error', drop).on('close', drop);
    local.pipe(remote);
    remote.pipe(local);
  }
}
