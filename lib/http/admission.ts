/**
 * Overload control for a daemon's HTTP port (status, health, metrics). At most `maxActive`
 * new connections are read at once; the others wait unread (paused, so nothing of theirs is
 * parsed) and are admitted newest first as answers finish. Under a storm of connections a
 * newcomer, such as a health probe, is answered after a handful of requests instead of after
 * the whole storm (adaptive LIFO); the storm's own connections are served as capacity frees.
 * A connection that has had its first answer reads on freely (keep-alive clients are not the
 * storm). The total held at once is bounded by node's `maxConnections`; past it new
 * connections are closed at once, which is logged once, then at most once a minute.
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from '../log.js';

/** Options of {@link admitConnections}. */
export interface AdmissionOptions {
  /** New connections read at once (default {@link DEFAULT_MAX_ACTIVE}). */
  maxActive?: number;
  /** Connections held at once, waiting ones included (default {@link DEFAULT_MAX_CONNECTIONS}). */
  maxConnections?: number;
  log: Logger;
  /** What the port is, for the log (`web status`, `builder metrics`). */
  what: string;
}

/** Default number of new connections read at once. */
export const DEFAULT_MAX_ACTIVE = 32;
/** Default bound on the connections a port holds at once. */
export const DEFAULT_MAX_CONNECTIONS = 1024;

const REPORT_EVERY_MS = 60_000;

/** Installs the admission control and the connection bound on `server` (call before it listens). */
export function admitConnections(server: Server, opts: AdmissionOptions): void {
  const maxActive = opts.maxActive ?? DEFAULT_MAX_ACTIVE;
  const max = opts.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
  const waiting: Socket[] = [];
  const admitted = new Set<Socket>();
  const release = (socket: Socket): void => {
    if (!admitted.delete(socket)) return;
    // Newest first: whoever just arrived (a probe) is not stuck behind the storm that came before it.
    let next = waiting.pop();
    while (next && next.destroyed) next = waiting.pop();
    if (next) admit(next);
  };
  const admit = (socket: Socket): void => {
    admitted.add(socket);
    socket.resume();
  };
  server.on('connection', (socket: Socket) => {
    socket.once('close', () => {
      release(socket);
      const i = waiting.indexOf(socket);
      if (i >= 0) waiting.splice(i, 1);
    });
    if (admitted.size < maxActive) {
      admitted.add(socket);
      return;
    }
    socket.pause();
    waiting.push(socket);
  });
  server.on('request', (req, res) => {
    res.once('close', () => release(req.socket));
  });
  server.maxConnections = max;
  let refused = 0;
  let lastReport = 0;
  server.on('drop', () => {
    refused += 1;
    const now = Date.now();
    if (now - lastReport < REPORT_EVERY_MS) return;
    opts.log.warn(`${opts.what} refuses new connections: ${max} are open at once, its bound`, { maxConnections: max, refusedSinceLastReport: refused });
    lastReport = now;
    refused = 0;
  });
}
