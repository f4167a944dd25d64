/**
 * Helpers of the web status tests: HTTP calls to a server on 127.0.0.1, reading one sample of
 * a Prometheus exposition, a UDP listener that collects statsd lines, and age-free tables.
 */
import dgram from 'node:dgram';
import type { AddressInfo } from 'node:net';

/** A response, read whole. */
export interface Got {
  status: number;
  headers: Headers;
  body: string;
}

/** Calls `http://127.0.0.1:<port><path>` (bounded: 10 s). */
export async function call(port: number, path: string, init: RequestInit = {}): Promise<Got> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { ...init, signal: AbortSignal.timeout(10_000) });
  return { status: res.status, headers: res.headers, body: await res.text() };
}

/** GET with an optional Accept header. */
export function get(port: number, path: string, accept?: string): Promise<Got> {
  return call(port, path, accept ? { headers: { Accept: accept } } : {});
}

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * The value of the sample `name{labels}` in a Prometheus text exposition (labels in the order
 * prom-client prints them, which is the order the metric declares them); undefined when absent.
 */
export function sample(exposition: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const l = Object.entries(labels).map(([k, v]) => `${k}="${v}"`).join(',');
  const re = new RegExp(`^${escapeRe(name)}${l ? escapeRe(`{${l}}`) : '(?:\\{\\})?'} (\\S+)$`, 'm');
  const m = re.exec(exposition);
  return m ? Number(m[1]) : undefined;
}

/** A statsd stand-in: every line received, in order. */
export class StatsdListener {
  readonly lines: string[] = [];

  private constructor(private readonly socket: dgram.Socket) {
    socket.on('message', (msg) => this.lines.push(...msg.toString('utf8').split('\n').filter(Boolean)));
  }

  static async start(): Promise<StatsdListener> {
    const socket = dgram.createSocket('udp4');
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    return new StatsdListener(socket);
  }

  get port(): number {
    return (this.socket.address() as AddressInfo).port;
  }

  /** Lines of the metric `name` (`name:value|type`). */
  of(name: string): string[] {
    return this.lines.filter((l) => l.startsWith(`${name}:`));
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.socket.close(() => resolve()));
  }
}

/** A table with every `DD:HH:MM:SS` age replaced, so two renderings a second apart compare equal. */
export function withoutAges(table: string): string {
  return table.replace(/\b\d{2,}:\d{2}:\d{2}:\d{2}\b/g, 'AGE');
}
