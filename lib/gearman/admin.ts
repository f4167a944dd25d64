/**
 * gearmand's admin text protocol over a short-lived socket (TLS when the server says so):
 * `status`, `workers` and any other command.
 *
 * Replies measured on gearmand 1.1.20: list commands (`status`, `workers`, `show jobs`,
 * `show unique jobs`, `prioritystatus`) answer lines ending with a `.` line; everything else
 * answers one line (`OK …`, sometimes with `\r\n`), and errors are one `ERR <code> <text>` line.
 */
import { GearmanConnectionError, GearmanServerError } from '../errors.js';
import { openSocket } from './connection.js';
import type { GearmanServerAddress } from './types.js';
import { serverLabel } from './types.js';

/** One line of `status`. */
export interface FunctionStatus {
  name: string;
  /** Jobs gearmand holds for the function; gearmand counts running ones in this too. */
  queued: number;
  running: number;
  /** Workers that registered the function (CAN_DO). */
  workers: number;
}

/** One line of `workers`. */
export interface WorkerInfo {
  fd: number;
  ip: string;
  /** SET_CLIENT_ID of the connection, `-` when unset. */
  clientId: string;
  functions: string[];
}

/** Options of the admin calls. */
export interface AdminOptions {
  /** Give up after this long (default 5000 ms). */
  timeoutMs?: number;
}

const MULTI_LINE = /^(status|workers|show jobs|show unique jobs|prioritystatus)\b/i;

/**
 * Sends one admin command and returns the reply lines (without the terminating `.`).
 * @throws GearmanServerError on an `ERR` reply; GearmanConnectionError on connect failure or timeout.
 */
export function adminCommand(server: GearmanServerAddress, command: string, opts: AdminOptions = {}): Promise<string[]> {
  const cmd = command.trim();
  if (!cmd || /[\r\n]/.test(cmd)) return Promise.reject(new TypeError(`invalid gearman admin command ${JSON.stringify(command)}`));
  const multi = MULTI_LINE.test(cmd);
  const timeoutMs = opts.timeoutMs ?? 5000;
  const label = serverLabel(server);
  return new Promise<string[]>((resolve, reject) => {
    const { socket, ready } = openSocket(server);
    let buffered = '';
    const lines: string[] = [];
    let done = false;
    const finish = (err: Error | undefined): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      if (err) reject(err);
      else resolve(lines);
    };
    const timer = setTimeout(() => finish(new GearmanConnectionError(`gearman admin ${JSON.stringify(cmd)} on ${label}: no complete reply within ${timeoutMs} ms`)), timeoutMs);
    socket.setNoDelay(true);
    socket.once(ready, () => socket.write(`${cmd}\n`));
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      buffered += chunk;
      let nl: number;
      while (!done && (nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl).replace(/\r$/, '');
        buffered = buffered.slice(nl + 1);
        if (line.startsWith('ERR ') || line === 'ERR') {
          const [, code = 'ERR', ...rest] = line.split(' ');
          finish(new GearmanServerError(code, plusDecode(rest.join(' ')) || 'admin command failed'));
        } else if (multi && line === '.') {
          finish(undefined);
        } else {
          lines.push(line);
          if (!multi) finish(undefined);
        }
      }
    });
    socket.on('error', (err) => finish(new GearmanConnectionError(`gearman admin ${JSON.stringify(cmd)} on ${label} failed: ${err.message}`, { cause: err })));
    socket.on('close', () => finish(new GearmanConnectionError(`gearman admin ${JSON.stringify(cmd)} on ${label}: connection closed before the reply ended`)));
  });
}

/** `status`: per-function queue counts. */
export async function adminStatus(server: GearmanServerAddress, opts: AdminOptions = {}): Promise<FunctionStatus[]> {
  return parseStatus(await adminCommand(server, 'status', opts));
}

/** `workers`: every connection with its client id and registered functions (clients too, with none). */
export async function adminWorkers(server: GearmanServerAddress, opts: AdminOptions = {}): Promise<WorkerInfo[]> {
  return parseWorkers(await adminCommand(server, 'workers', opts));
}

/** Parses `status` lines: `<function>\t<queued>\t<running>\t<workers>`. */
export function parseStatus(lines: string[]): FunctionStatus[] {
  return lines.filter((l) => l.length > 0).map((line) => {
    const cols = line.split('\t');
    // the three counts are always the last columns, whatever the name contains
    const [workers, running, queued] = [cols.pop(), cols.pop(), cols.pop()].map((v) => Number.parseInt(v ?? '0', 10) || 0);
    return { name: cols.join('\t'), queued: queued ?? 0, running: running ?? 0, workers: workers ?? 0 };
  });
}

/**
 * Parses `workers` lines: `<fd> <ip> <client-id> : <fn> <fn>…`. The client id may contain
 * colons (`host:builder`) and even spaces; the first ` :` after it ends it.
 */
export function parseWorkers(lines: string[]): WorkerInfo[] {
  const out: WorkerInfo[] = [];
  for (const line of lines) {
    const m = /^(\d+) (\S+) (.*?) :(?: (.*))?$/.exec(line);
    if (!m) continue;
    out.push({
      fd: Number.parseInt(m[1] as string, 10),
      ip: m[2] as string,
      clientId: m[3] as string,
      functions: (m[4] ?? '').split(' ').filter((f) => f.length > 0),
    });
  }
  return out;
}

/** gearmand URL-encodes some ERR texts (`Unknown+server+command`). */
function plusDecode(text: string): string {
  const spaced = text.replace(/\+/g, ' ');
  try {
    return decodeURIComponent(spaced);
  } catch {
    return spaced;
  }
}
