/**
 * One Gearman connection to one gearmand (TCP or TLS), reconnecting in the background with
 * capped exponential backoff and jitter until closed. Emits decoded packets.
 */
import { EventEmitter } from 'node:events';
import net from 'node:net';
import tls from 'node:tls';
import { GearmanConnectionError, coerceError } from '../errors.js';
import { backoffDelay } from '../lifecycle.js';
import { silentLogger, type Logger } from '../log.js';
import { PacketDecoder, packetName, type Packet } from './protocol.js';
import { DEFAULT_RECONNECT, serverLabel, type GearmanServerAddress, type ReconnectOptions } from './types.js';

/** Options of {@link GearmanConnection}. */
export interface GearmanConnectionOptions {
  server: GearmanServerAddress;
  reconnect?: ReconnectOptions;
  log?: Logger;
  /** Give up on one connection attempt after this long (default 10 000 ms). */
  connectTimeoutMs?: number;
  /** TCP keep-alive initial delay (default 10 000 ms). */
  keepAliveMs?: number;
  /** Largest packet accepted from the server (default 64 MiB). */
  maxPacketBytes?: number;
}

/** Events of {@link GearmanConnection}. */
export interface GearmanConnectionEvents {
  /** The socket is up (TLS handshake done). `generation` counts successful connects from 1. */
  connected: [generation: number];
  /** A connected socket went away (never emitted for attempts that did not connect). */
  disconnected: [reason: Error];
  /** A packet from the server. */
  packet: [packet: Packet];
}

/** A connection that counts as stable: after this long, the backoff starts over. */
const STABLE_MS = 1000;
/** Packets queued in one tick are copied into one buffer up to this size (beyond: corked writes). */
const COALESCE_BYTES = 64 * 1024;

/**
 * Opens a TCP or TLS socket to `server`; `ready` is the event that means "usable"
 * (`connect` or `secureConnect`).
 */
export function openSocket(server: GearmanServerAddress): { socket: net.Socket; ready: 'connect' | 'secureConnect' } {
  if (!server.tls) return { socket: net.connect({ host: server.host, port: server.port }), ready: 'connect' };
  const t = server.tls === true ? {} : server.tls;
  const servername = t.servername ?? (net.isIP(server.host) ? undefined : server.host);
  const socket = tls.connect({
    host: server.host,
    port: server.port,
    ...(servername ? { servername } : {}),
    ...(t.ca ? { ca: t.ca } : {}),
    ...(t.cert ? { cert: t.cert } : {}),
    ...(t.key ? { key: t.key } : {}),
    rejectUnauthorized: t.rejectUnauthorized ?? true,
  });
  return { socket, ready: 'secureConnect' };
}

/**
 * A self-healing connection. Call {@link open} once; it connects and reconnects until
 * {@link close}. {@link send} writes only while connected and reports whether it did.
 */
export class GearmanConnection extends EventEmitter<GearmanConnectionEvents> {
  readonly server: GearmanServerAddress;
  /** `host:port`, for logs and errors. */
  readonly label: string;
  private readonly log: Logger;
  private readonly initialMs: number;
  private readonly maxMs: number;
  private readonly connectTimeoutMs: number;
  private readonly keepAliveMs: number;
  private readonly decoder: PacketDecoder;
  private socket: net.Socket | undefined;
  private isConnected = false;
  private connectedAt = 0;
  private attempt = 0;
  private gen = 0;
  private opened = false;
  private closed = false;
  private closing: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** Packets queued by send() in this tick, their size and the socket they were queued for. */
  private outgoing: Buffer[] = [];
  private outgoingBytes = 0;
  private outgoingSocket: net.Socket | undefined;
  private readonly flushOutgoing = (): void => this.flush();

  constructor(opts: GearmanConnectionOptions) {
    super();
    this.server = opts.server;
    this.label = serverLabel(opts.server);
    this.log = (opts.log ?? silentLogger()).child({ server: this.label });
    this.initialMs = opts.reconnect?.initialMs ?? DEFAULT_RECONNECT.initialMs;
    this.maxMs = Math.max(this.initialMs, opts.reconnect?.maxMs ?? DEFAULT_RECONNECT.maxMs);
    this.connectTimeoutMs = opts.connectTimeoutMs ?? 10_000;
    this.keepAliveMs = opts.keepAliveMs ?? 10_000;
    this.decoder = new PacketDecoder({ accept: 'RES', ...(opts.maxPacketBytes ? { maxPacketBytes: opts.maxPacketBytes } : {}) });
  }

  /** True while the socket is up. */
  get connected(): boolean {
    return this.isConnected;
  }

  /** Number of successful connects so far; a job remembers it to know its socket is gone. */
  get generation(): number {
    return this.gen;
  }

  /** Starts connecting (idempotent; no-op after close). */
  open(): void {
    if (this.opened || this.closed) return;
    this.opened = true;
    this.dial();
  }

  /**
   * Queues one encoded packet for the socket. Returns false (and queues nothing) when not
   * connected. Packets sent in the same tick (WORK_COMPLETE + GRAB_JOB_UNIQ, CAN_DO…) leave in
   * one write, at the end of the tick.
   */
  send(packet: Buffer): boolean {
    const sock = this.socket;
    if (!this.isConnected || !sock || sock.destroyed || !sock.writable) return false;
    if (this.outgoing.length === 0) {
      this.outgoingSocket = sock;
      process.nextTick(this.flushOutgoing);
    }
    this.outgoing.push(packet);
    this.outgoingBytes += packet.length;
    return true;
  }

  /** Writes the packets queued this tick: one small buffer, or the packets themselves when large. */
  private flush(): void {
    const packets = this.outgoing;
    const bytes = this.outgoingBytes;
    const sock = this.outgoingSocket;
    if (packets.length === 0) return;
    this.outgoing = [];
    this.outgoingBytes = 0;
    this.outgoingSocket = undefined;
    // a socket lost (or replaced) since the packets were queued drops them, as it would have
    // dropped bytes already written to it
    if (sock !== this.socket || !sock || sock.destroyed || !sock.writable) return;
    if (this.log.isDebugEnabled()) {
      for (const p of packets) this.log.debug('send packet', { packet: packetName(p.readUInt32BE(4)), bytes: p.length });
    }
    if (packets.length === 1) {
      sock.write(packets[0] as Buffer);
    } else if (bytes <= COALESCE_BYTES) {
      sock.write(Buffer.concat(packets, bytes));
    } else {
      sock.cork();
      for (const p of packets) sock.write(p);
      sock.uncork();
    }
  }

  /** Drops the current socket (if any) and reconnects with backoff, e.g. after a protocol confusion. */
  reset(reason: Error): void {
    this.socket?.destroy(reason);
  }

  /**
   * Stops reconnecting, flushes pending writes and closes the socket (destroyed after 1 s at
   * the latest). Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= new Promise<void>((resolve) => {
      this.closed = true;
      if (this.timer) clearTimeout(this.timer);
      this.timer = undefined;
      const sock = this.socket;
      if (!sock || sock.destroyed) return resolve();
      sock.once('close', () => resolve());
      if (!this.isConnected) {
        sock.destroy();
        return;
      }
      this.flush();
      sock.end();
      setTimeout(() => sock.destroy(), 1000).unref();
    });
    return this.closing;
  }

  private dial(): void {
    if (this.closed) return;
    this.timer = undefined;
    let sock: net.Socket;
    let ready: 'connect' | 'secureConnect';
    try {
      ({ socket: sock, ready } = openSocket(this.server));
    } catch (err) {
      // e.g. invalid TLS material: keep retrying with backoff (it shows in the log)
      this.log.warn('cannot open gearman socket', { error: coerceError(err).message });
      this.scheduleReconnect();
      return;
    }
    this.socket = sock;
    let lastError: Error | undefined;
    sock.setTimeout(this.connectTimeoutMs, () => sock.destroy(new GearmanConnectionError(`connect timeout after ${this.connectTimeoutMs} ms`)));
    sock.once(ready, () => this.onConnected(sock));
    sock.on('data', (chunk: Buffer) => this.onData(sock, chunk));
    sock.on('error', (err) => { lastError = err; });
    sock.once('close', () => this.onClose(sock, lastError));
  }

  private onConnected(sock: net.Socket): void {
    if (this.socket !== sock) return;
    sock.setTimeout(0);
    sock.setNoDelay(true);
    sock.setKeepAlive(true, this.keepAliveMs);
    this.decoder.reset();
    this.isConnected = true;
    this.connectedAt = Date.now();
    this.gen += 1;
    this.log.info('gearman connected', { generation: this.gen });
    this.safeEmit('connected', this.gen);
  }

  private onData(sock: net.Socket, chunk: Buffer): void {
    if (this.socket !== sock || !this.isConnected) return;
    let packets: Packet[];
    try {
      packets = this.decoder.push(chunk);
    } catch (err) {
      this.log.error('gearman protocol error; dropping connection', { error: coerceError(err).message });
      sock.destroy(coerceError(err));
      return;
    }
    const debug = packets.length > 0 && this.log.isDebugEnabled();
    for (const p of packets) {
      if (this.socket !== sock) return;
      if (debug) this.log.debug('received packet', { packet: p.name, args: p.args.length });
      try {
        this.emit('packet', p);
      } catch (err) {
        this.log.error('gearman connection listener threw', { event: 'packet', error: coerceError(err).stack });
      }
    }
  }

  private onClose(sock: net.Socket, lastError: Error | undefined): void {
    if (this.socket !== sock) return;
    this.socket = undefined;
    const wasConnected = this.isConnected;
    this.isConnected = false;
    if (wasConnected) {
      if (Date.now() - this.connectedAt >= STABLE_MS) this.attempt = 0;
      const reason = new GearmanConnectionError(
        this.closed ? `connection to ${this.label} closed` : `connection to ${this.label} lost${lastError ? `: ${lastError.message}` : ''}`,
        { cause: lastError },
      );
      if (this.closed) this.log.info('gearman connection closed');
      else this.log.warn('gearman connection lost', { error: lastError?.message });
      this.safeEmit('disconnected', reason);
    } else if (!this.closed) {
      this.log.debug('gearman connect failed', { error: lastError?.message, attempt: this.attempt });
    }
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.closed) return;
    const delay = backoffDelay(this.attempt, this.initialMs, this.maxMs);
    this.attempt += 1;
    this.timer = setTimeout(() => this.dial(), delay);
  }

  /** Listener errors must never break the socket handling. */
  private safeEmit<K extends keyof GearmanConnectionEvents>(event: K, ...args: GearmanConnectionEvents[K]): void {
    try {
      (this.emit as (e: K, ...a: GearmanConnectionEvents[K]) => boolean)(event, ...args);
    } catch (err) {
      this.log.error('gearman connection listener threw', { event, error: coerceError(err).stack });
    }
  }
}
