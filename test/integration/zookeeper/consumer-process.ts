/**
 * Test support for the Zuul-style consumer (test/fixtures/zuul_consumer.py): runs it with
 * Debian's python3 and kazoo as a tracked process, and collects the JSON lines it prints.
 */
import path from 'node:path';
import { createInterface } from 'node:readline';
import { waitFor } from '../../../lib/lifecycle.js';
import { startProcess, type TrackedProcess } from '../../support/processes.js';

/** Debian's interpreter: the one on PATH may be a pyenv without kazoo. */
export const SYSTEM_PYTHON = '/usr/bin/python3';
export const ZUUL_CONSUMER = path.resolve('test/fixtures/zuul_consumer.py');

/** One line the consumer printed. */
export interface ConsumerEvent {
  event: string;
  [key: string]: unknown;
}

/** A running consumer. */
export interface ConsumerProcess {
  proc: TrackedProcess;
  /** Every event so far, in order. */
  events: ConsumerEvent[];
  /** What it wrote to stderr (tracebacks). */
  stderr(): string;
  /** Waits for the first event named `name` (bounded). */
  waitForEvent(name: string, timeoutMs?: number): Promise<ConsumerEvent>;
  /** Events named `name`. */
  all(name: string): ConsumerEvent[];
  /** Tells it the "job" is over (it then sets its nodes used and unlocks them). */
  release(): void;
}

/** Options of {@link startConsumer}. */
export interface ConsumerOptions {
  /** kazoo hosts string: `host:port[/chroot]`. */
  hosts: string;
  labels: string[];
  timeoutS?: number;
  sessionTimeoutS?: number;
  /** Run it some other way (e.g. inside a network namespace): gets the argv, returns the process. */
  spawn?: (argv: string[]) => TrackedProcess;
}

/** Starts the consumer; it makes its request at once. */
export function startConsumer(opts: ConsumerOptions): ConsumerProcess {
  const argv = [
    ZUUL_CONSUMER, '--hosts', opts.hosts, ...opts.labels.flatMap((l) => ['--label', l]),
    '--timeout', String(opts.timeoutS ?? 60), '--session-timeout', String(opts.sessionTimeoutS ?? 10),
  ];
  const proc = opts.spawn
    ? opts.spawn(argv)
    : startProcess('zuul-consumer', SYSTEM_PYTHON, argv, { stdio: ['pipe', 'pipe', 'pipe'] });
  const events: ConsumerEvent[] = [];
  let err = '';
  proc.child.stderr?.on('data', (d: Buffer) => { err += d.toString(); });
  if (proc.child.stdout) {
    createInterface({ input: proc.child.stdout }).on('line', (line) => {
      try {
        events.push(JSON.parse(line) as ConsumerEvent);
      } catch {
        events.push({ event: 'unparsable-line', line });
      }
    });
  }
  return {
    proc,
    events,
    stderr: () => err,
    all: (name) => events.filter((e) => e.event === name),
    async waitForEvent(name, timeoutMs = 60_000) {
      return waitFor(() => {
        const e = events.find((x) => x.event === name);
        if (!e && !proc.alive()) {
          throw new Error(`consumer exited without ${name}; events: ${events.map((x) => x.event).join(', ')}; stderr: ${err.slice(-2000)}`);
        }
        return e;
      }, { timeoutMs, what: `the consumer's ${name} event`, intervalMs: 25 });
    },
    release() {
      proc.child.stdin?.write('release\n');
    },
  };
}

/** Asks kazoo whether a lock is free: a non-blocking `Lock.acquire` on `lockPath` (released at once if taken). */
export async function kazooLockFree(hosts: string, lockPath: string): Promise<boolean> {
  const code = [
    'import sys', 'from kazoo.client import KazooClient', 'from kazoo.recipe.lock import Lock',
    'c = KazooClient(hosts=sys.argv[1]); c.start(timeout=15)',
    'l = Lock(c, sys.argv[2]); got = l.acquire(blocking=False)',
    'print("free" if got else "held")',
    'l.release() if got else None; c.stop(); c.close()',
  ].join('\n');
  const p = startProcess('kazoo-lock-probe', SYSTEM_PYTHON, ['-c', code, hosts, lockPath], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  p.child.stdout?.on('data', (d: Buffer) => { out += d.toString(); });
  p.child.stderr?.on('data', (d: Buffer) => { err += d.toString(); });
  const timer = setTimeout(() => void p.stop(1000), 30_000);
  const { code: exit } = await p.exited;
  clearTimeout(timer);
  if (exit !== 0) throw new Error(`kazoo lock probe failed (${exit}): ${err.slice(-2000)}`);
  return out.trim() === 'free';
}
