/**
 * A plain statsd client over UDP (node:dgram): counters, timers and gauges in the statsd line
 * protocol (`name:value|c`, `|ms`, `|g`), one datagram each, fire and forget. Nodepool's
 * daemons report the same way when `STATSD_HOST` is set (bin/ reads the environment).
 */
import dgram from 'node:dgram';
import { isIPv6 } from 'node:net';
import type { Logger } from '../log.js';

/** Where to send, and an optional prefix put before every name (`<prefix>.<name>`). */
export interface StatsdOptions {
  host: string;
  /** Default 8125. */
  port?: number;
  prefix?: string;
  log?: Logger;
}

/**
 * Makes a name segment safe for the line protocol: `:`, `|`, `@`, `/`, whitespace and control
 * characters become `_` (dots stay: they are the hierarchy, as in Nodepool's keys).
 */
export function statsdSegment(s: string): string {
  return s.replace(/[:|@/\s\p{Cc}]/gu, '_');
}

export class StatsdClient {
  private readonly socket: dgram.Socket;
  private readonly port: number;
  private closed = false;
  private warned = false;

  constructor(private readonly opts: StatsdOptions) {
    this.port = opts.port ?? 8125;
    this.socket = dgram.createSocket(isIPv6(opts.host) ? 'udp6' : 'udp4');
    this.socket.on('error', (err) => this.failed(err));
    // Metrics must never keep a stopping daemon alive.
    this.socket.unref();
  }

  /** Adds `n` (default 1) to a counter. */
  incr(name: string, n = 1): void {
    this.send(name, `${n}|c`);
  }

  /** Records a duration in milliseconds. */
  timing(name: string, ms: number): void {
    this.send(name, `${Math.max(0, Math.round(ms))}|ms`);
  }

  /** Sets a gauge (negative values are sent as 0: a leading `-` would mean "decrement"). */
  gauge(name: string, value: number): void {
    this.send(name, `${Math.max(0, value)}|g`);
  }

  /** Closes the socket; later calls do nothing. Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.socket.close();
  }

  private send(name: string, value: string): void {
    if (this.closed) return;
    const full = this.opts.prefix ? `${this.opts.prefix}.${name}` : name;
    this.socket.send(`${full}:${value}`, this.port, this.opts.host, (err) => { if (err) this.failed(err); });
  }

  /** A lost datagram is no error for statsd; say so once, not per metric. */
  private failed(err: Error): void {
    if (this.warned) return;
    this.warned = true;
    this.opts.log?.warn('statsd: could not send metrics (further errors are not logged)', { host: this.opts.host, port: this.port, error: err.message });
  }
}
