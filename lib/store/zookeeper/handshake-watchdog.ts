/** Cuts a reconnecting ZooKeeper socket whose handshake never gets an answer. */
import type zookeeper from 'node-zookeeper-client';
import { cutSocket } from './zk-library.js';

/**
 * While reconnecting: node-zookeeper-client gives the handshake no deadline, so a server that
 * accepts the TCP connection but never answers (one starting up or shutting down) would hold
 * the client in CONNECTING for good. A socket that has not brought the session back within a
 * third of the session timeout (0.5–5 s) is cut (see cutSocket), and the client tries again.
 */
export class HandshakeWatchdog {
  private watchdog: NodeJS.Timeout | undefined;

  constructor(private readonly client: zookeeper.Client) {}

  start(): void {
    if (this.watchdog) return;
    const limit = Math.min(5000, Math.max(500, Math.floor(this.client.getSessionTimeout() / 3)));
    let since = Date.now();
    let socket: unknown;
    this.watchdog = setInterval(() => {
      const current = (this.client as unknown as { connectionManager?: { socket?: unknown } }).connectionManager?.socket;
      if (current !== socket) { socket = current; since = Date.now(); return; }
      if (Date.now() - since >= limit) {
        since = Date.now();
        cutSocket(this.client);
      }
    }, Math.max(100, Math.floor(limit / 5)));
    this.watchdog.unref();
  }

  stop(): void {
    clearInterval(this.watchdog);
    this.watchdog = undefined;
  }
}
