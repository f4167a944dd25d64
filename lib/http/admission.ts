/**
 * Overload control for a daemon's HTTP port (status, health, metrics). A plain TCP listener
 * takes connections paused (nothing read, no HTTP parser made) and hands at most `maxActive`
 * at once to the HTTP server; the others wait and are handed over newest first as answers
 * finish. Under a storm of connections a newcomer, such as a health probe, is answered after
 * a handful of requests instead of after the whole storm (adaptive LIFO), and a waiting
 * connection costs the event loop next to nothing. The connections held at once are bounded:
 * past `maxConnections` the one that has waited longest is closed unanswered (it would be
 * served last, and its client has waited the longest), logged once, then at most once a
 * minute; node's own bound (refusing newcomers) is set at twice that, as a backstop. A
 * connection handed over must send its request within `requestTimeoutMs`; after its first
 * answer it reads on freely (keep-alive clients are not the storm).
 */
import type http from 'node:http';
import net, { type AddressInfo, type Socket } from 'node:net';
import type { Logger } from '../log.js';

/** Options of {@link AdmissionListener.listen}. */
export interface AdmissionOptions {
  host: string;
  /** 0 picks a free port (see {@link AdmissionListener.port}). */
  port: number;
  log: Logger;
  /** What the port is, for the log (`web status`, `builder metrics`). */
  what: string;
  /** Connections handed to the HTTP server at once (default {@link DEFAULT_MAX_ACTIVE}). */
  maxActive?: number;
  /** Connections held at once, waiting ones included (default {@link DEFAULT_MAX_CONNECTIONS}). */
  maxConnections?: number;
  /** How long a handed-over connection may take to send its request (default 10 s). */
  requestTimeoutMs?: number;
  /**
   * Paths answered from memory (health probes): a waiting connection whose request line asks
   * for one is handed over at once, past the storm and past `maxActive`.
   */
  priorityPaths?: readonly string[];
}

/** Default number of connections handed to the HTTP server at once. */
export const DEFAULT_MAX_ACTIVE = 32;
/** Default bound on the connections a port holds at once. */
export const DEFAULT_MAX_CONNECTIONS = 1024;

const REPORT_EVERY_MS = 60_000;

export class AdmissionListener {
  /** Oldest first; handed over from the end. */
  private readonly waiting: Socket[] = [];
  private readonly admitted = new Set<Socket>();
  /** Connections whose request has arrived (the request timeout no longer applies). */
  private readonly requested = new WeakSet<Socket>();
  private held = 0;
  private refused = 0;
  private lastReport = 0;
  private closing: Promise<void> | undefined;

  private constructor(private readonly front: net.Server, private readonly http: http.Server, private readonly opts: AdmissionOptions) {}

  /** Listens for `http` (which must not listen itself); resolves once bound. Thrown: the listen error. */
  static async listen(httpServer: http.Server, opts: AdmissionOptions): Promise<AdmissionListener> {
    const front = net.createServer({ pauseOnConnect: true });
    const self = new AdmissionListener(front, httpServer, opts);
    front.on('connection', (socket) => self.arrive(socket));
    httpServer.on('request', (req, res) => {
      self.requested.add(req.socket);
      // The request is in: end the request timeout (http destroys a socket on any timeout it has not armed itself).
      req.socket.setTimeout(0);
      res.once('close', () => self.release(req.socket));
    });
    const max = opts.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
    front.maxConnections = 2 * max;
    front.on('drop', () => self.refusedOne(`${2 * max} connections held; new ones are refused`));
    await new Promise<void>((resolve, reject) => {
      front.once('error', reject);
      // A burst of connections larger than Node's default backlog (511) overflows the kernel's
      // accept queue, and a health probe's SYN that is dropped there waits for TCP's 1 s retransmit:
      // the queue holds the whole bound (the kernel caps it at net.core.somaxconn).
      front.listen({ port: opts.port, host: opts.host, backlog: Math.max(2 * max, 4096) }, () => {
        front.off('error', reject);
        resolve();
      });
    });
    front.on('error', (err) => opts.log.error(`${opts.what} listener error`, { error: err.message }));
    return self;
  }

  /** The bound port. */
  get port(): number {
    return (this.front.address() as AddressInfo).port;
  }

  /** Stops listening and closes every connection, waiting or handed over. Idempotent. */
  close(): Promise<void> {
    this.closing ??= new Promise<void>((resolve) => {
      this.front.close(() => resolve());
      for (const s of this.waiting.splice(0)) s.destroy();
      this.http.closeAllConnections();
      for (const s of this.admitted) s.destroy();
    });
    return this.closing;
  }

  private arrive(socket: Socket): void {
    if (this.closing) {
      socket.destroy();
      return;
    }
    this.held += 1;
    socket.once('close', () => {
      this.held -= 1;
      const i = this.waiting.indexOf(socket);
      if (i >= 0) this.waiting.splice(i, 1);
      this.release(socket);
    });
    socket.on('error', () => undefined); // a reset while waiting; 'close' follows
    if (this.admitted.size < (this.opts.maxActive ?? DEFAULT_MAX_ACTIVE)) {
      this.admit(socket);
      return;
    }
    this.waiting.push(socket);
    if (this.opts.priorityPaths?.length) this.peek(socket);
    const max = this.opts.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
    if (this.held > max) {
      this.waiting.shift()?.destroy();
      this.refusedOne(`${max} connections held; the one waiting longest is closed unanswered`);
    }
  }

  /** Reads a waiting connection's first bytes: a probe of a priority path is handed over now. */
  private peek(socket: Socket): void {
    const onReadable = (): void => {
      const chunk = socket.read() as Buffer | null;
      if (chunk === null) return;
      socket.off('readable', onReadable);
      socket.unshift(chunk);
      const target = /^(?:GET|HEAD) (\S+)/.exec(chunk.toString('latin1', 0, Math.min(chunk.length, 256)))?.[1];
      const path = target?.split('?')[0]?.replace(/\/{2,}/g, '/').replace(/(.)\/$/, '$1');
      const i = this.waiting.indexOf(socket);
      if (path !== undefined && i >= 0 && this.opts.priorityPaths?.includes(path)) {
        this.waiting.splice(i, 1);
        this.admit(socket);
      }
    };
    socket.on('readable', onReadable);
  }

  private admit(socket: Socket): void {
    this.admitted.add(socket);
    this.http.emit('connection', socket);
    // A client that never sends its request must not hold its place (http's own timers run only
    // on a listening server). Set after the hand-over, which resets the socket's timeout; the
    // keep-alive timeout http sets after the first answer replaces it.
    socket.setTimeout(this.opts.requestTimeoutMs ?? 10_000, () => {
      if (this.admitted.has(socket) && !this.requested.has(socket)) socket.destroy();
    });
    socket.resume();
  }

  /** The connection's first answer is done (or it closed): hand over the newest waiting one. */
  private release(socket: Socket): void {
    if (!this.admitted.delete(socket)) return;
    let next = this.waiting.pop();
    while (next?.destroyed) next = this.waiting.pop();
    if (next) this.admit(next);
  }

  private refusedOne(how: string): void {
    this.refused += 1;
    const now = Date.now();
    if (now - this.lastReport < REPORT_EVERY_MS) return;
    this.opts.log.warn(`${this.opts.what} at its connection bound: ${how}`, {
      maxConnections: this.opts.maxConnections ?? DEFAULT_MAX_CONNECTIONS, refusedSinceLastReport: this.refused,
    });
    this.lastReport = now;
    this.refused = 0;
  }
}
