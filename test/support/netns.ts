/**
 * Test support: a private network of "hosts" made of Linux network namespaces, for tests that
 * run the system across several machines. One bridge in the root namespace (with the first
 * address, so the test process itself reaches every host), one veth pair per host, addresses
 * in an RFC 2544 benchmarking /24 (198.18.N.0/24, N a random one no interface here uses).
 * Names carry this process's pid and a counter, so concurrent runs never share one.
 *
 * Processes run inside with `ip netns exec <ns> cmd …`, which execs the command in place: the
 * tracked pid is the real process, and {@link NetnsHost.killAll} kills by pid whatever runs in
 * the host's namespace (only processes this test started can be there). `teardown()` kills
 * what is left, deletes the namespaces (their veth ends go with them) and the bridge; it also
 * runs at process exit and on SIGINT/SIGTERM if a test forgot it. Every command is bounded.
 *
 * Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) and iproute2.
 */
import { execFile, execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { waitFor } from '../../lib/lifecycle.js';
import { startProcess, type StartProcessOptions, type TrackedProcess } from './processes.js';

const IP = '/usr/sbin/ip';
const run = promisify(execFile);
/** Longest one `ip` command may take. */
const IP_TIMEOUT_MS = 10_000;

/** One namespace with its own address(es) on the test network. */
export interface NetnsHost {
  /** The test's name for it (`zk`, `server-a`, …). */
  readonly name: string;
  /** The namespace's name (`ip netns exec <netns>`). */
  readonly netns: string;
  /** Its first address. */
  readonly address: string;
  /** All its addresses on the test network (first one first). */
  readonly addresses: readonly string[];
  /** Starts a tracked process inside the namespace (see {@link startProcess}). */
  start(name: string, cmd: string, args: string[], opts?: StartProcessOptions): TrackedProcess;
  /** Runs a command inside to completion (bounded); rejects with its stderr when it exits non-zero. */
  exec(cmd: string, args: string[], opts?: { timeoutMs?: number; env?: NodeJS.ProcessEnv; cwd?: string }): Promise<{ stdout: string; stderr: string }>;
  /** pids of every process in the namespace. */
  pids(): Promise<number[]>;
  /** SIGKILL every process in the namespace (a host crash) and wait until none is left; returns the pids killed. */
  killAll(timeoutMs?: number): Promise<number[]>;
}

/** Options of {@link NetnsNetwork.addHost}. */
export interface AddHostOptions {
  /** How many addresses the host gets (default 1), e.g. one per static host an sshd stands in for. */
  addresses?: number;
}

let counter = 0;
const live = new Set<NetnsNetwork>();
let hooks = false;

/** The third octets of 198.18.N.0/24 some interface of the root namespace already uses. */
function usedSubnets(): Set<number> {
  const out = execFileSync(IP, ['-o', '-4', 'addr', 'show'], { encoding: 'utf8', timeout: IP_TIMEOUT_MS });
  return new Set([...out.matchAll(/inet 198\.18\.(\d+)\./g)].map((m) => Number(m[1])));
}

function installHooks(): void {
  if (hooks) return;
  hooks = true;
  process.once('exit', () => { for (const n of live) n.teardownSync(); });
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      for (const n of live) n.teardownSync();
      process.kill(process.pid, sig);
    });
  }
}

/** A bridge with hosts (namespaces) on it. Create with {@link NetnsNetwork.create}; always `teardown()`. */
export class NetnsNetwork {
  private readonly hosts = new Map<string, NetnsHost>();
  private nextAddress = 2;
  private tornDown: Promise<void> | undefined;
  private cleaned = false;

  private constructor(
    /** Unique per network: `<pid base 36><counter>`. */
    readonly id: string,
    readonly bridge: string,
    /** `198.18.N` */
    readonly subnet: string,
  ) {}

  /** The root namespace's address on the bridge (the test process reaches the hosts from it). */
  get rootAddress(): string {
    return `${this.subnet}.1`;
  }

  /** Makes the bridge and gives the root namespace `198.18.N.1/24` on it. */
  static async create(): Promise<NetnsNetwork> {
    installHooks();
    const used = usedSubnets();
    // A random free one, so two runs creating networks at the same moment rarely pick the same.
    const free = Array.from({ length: 256 }, (_, i) => i).filter((i) => !used.has(i));
    const third = free[Math.floor(Math.random() * free.length)];
    if (third === undefined) throw new Error('every 198.18.N.0/24 is in use on this machine');
    const id = `${process.pid.toString(36)}${(counter++).toString(36)}`;
    const net = new NetnsNetwork(id, `npbr${id}`, `198.18.${third}`);
    live.add(net);
    try {
      await ip('link', 'add', net.bridge, 'type', 'bridge');
      await ip('addr', 'add', `${net.rootAddress}/24`, 'dev', net.bridge);
      await ip('link', 'set', net.bridge, 'up');
    } catch (err) {
      await net.teardown();
      throw err;
    }
    return net;
  }

  /** Adds a namespace `np-<id>-<name>` on the bridge with the next free address(es). */
  async addHost(name: string, opts: AddHostOptions = {}): Promise<NetnsHost> {
    if (this.hosts.has(name)) throw new Error(`host ${name} exists already`);
    const count = opts.addresses ?? 1;
    if (this.nextAddress + count > 255) throw new Error(`no more addresses in ${this.subnet}.0/24`);
    const index = this.hosts.size;
    const netns = `np-${this.id}-${name}`;
    const outer = `np${this.id}h${index}`;
    const inner = `np${this.id}p${index}`;
    const addresses = Array.from({ length: count }, (_, i) => `${this.subnet}.${this.nextAddress + i}`);
    this.nextAddress += count;
    await ip('netns', 'add', netns);
    const host = makeHost(name, netns, addresses);
    this.hosts.set(name, host);
    await ip('link', 'add', outer, 'type', 'veth', 'peer', 'name', inner);
    await ip('link', 'set', inner, 'netns', netns);
    await ip('link', 'set', outer, 'master', this.bridge, 'up');
    for (const a of addresses) await ip('-n', netns, 'addr', 'add', `${a}/24`, 'dev', inner);
    await ip('-n', netns, 'link', 'set', inner, 'up');
    await ip('-n', netns, 'link', 'set', 'lo', 'up');
    return host;
  }

  host(name: string): NetnsHost {
    const h = this.hosts.get(name);
    if (!h) throw new Error(`no host ${name} on network ${this.id}`);
    return h;
  }

  /** pids of every process in any host of this network. */
  async pidsInside(): Promise<number[]> {
    return (await Promise.all([...this.hosts.values()].map((h) => h.pids()))).flat();
  }

  /** The namespaces, veth pairs and bridge of this network that exist now (for leak checks). */
  async leftovers(): Promise<string[]> {
    const [ns, links] = await Promise.all([ip('netns', 'list'), ip('-o', 'link', 'show')]);
    const names = [
      ...ns.split('\n').map((l) => l.split(' ')[0] ?? '').filter((n) => n.startsWith(`np-${this.id}-`)),
      ...[...links.matchAll(/^\d+: ([^:@\s]+)/gm)].map((m) => m[1] as string)
        .filter((n) => n === this.bridge || n.startsWith(`np${this.id}h`) || n.startsWith(`np${this.id}p`)),
    ];
    return names;
  }

  /**
   * Kills whatever still runs in the namespaces (SIGKILL, by pid), deletes them and the bridge.
   * Idempotent; goes on past errors and reports them together at the end.
   */
  teardown(): Promise<void> {
    this.tornDown ??= (async () => {
      const errors: string[] = [];
      for (const h of this.hosts.values()) {
        await h.killAll().catch((e: Error) => errors.push(`killing in ${h.netns}: ${e.message}`));
      }
      for (const h of this.hosts.values()) {
        await ip('netns', 'del', h.netns).catch((e: Error) => errors.push(e.message));
      }
      // The veth ends in the root namespace go with their peers; delete any left over all the same.
      for (let i = 0; i < this.hosts.size; i++) await ip('link', 'del', `np${this.id}h${i}`).catch(() => undefined);
      await ip('link', 'del', this.bridge).catch((e: Error) => errors.push(e.message));
      this.cleaned = true;
      live.delete(this);
      const left = await this.leftovers();
      if (left.length) errors.push(`still present: ${left.join(', ')}`);
      if (errors.length) throw new Error(`network ${this.id} teardown: ${errors.join('; ')}`);
    })();
    return this.tornDown;
  }

  /** The same, synchronously (process exit hook). */
  teardownSync(): void {
    if (this.cleaned) return;
    this.cleaned = true;
    const sync = (...args: string[]): string => {
      try {
        return execFileSync(IP, args, { encoding: 'utf8', timeout: IP_TIMEOUT_MS, stdio: ['ignore', 'pipe', 'ignore'] });
      } catch {
        return '';
      }
    };
    for (const h of this.hosts.values()) {
      for (const pid of sync('netns', 'pids', h.netns).split(/\s+/).filter(Boolean)) {
        try { process.kill(Number(pid), 'SIGKILL'); } catch { /* gone */ }
      }
    }
    for (const h of this.hosts.values()) sync('netns', 'del', h.netns);
    for (let i = 0; i < this.hosts.size; i++) sync('link', 'del', `np${this.id}h${i}`);
    sync('link', 'del', this.bridge);
    live.delete(this);
  }
}

async function ip(...args: string[]): Promise<string> {
  try {
    const { stdout } = await run(IP, args, { timeout: IP_TIMEOUT_MS, encoding: 'utf8' });
    return stdout;
  } catch (err) {
    const e = err as Error & { stderr?: string };
    throw new Error(`ip ${args.join(' ')}: ${(e.stderr ?? '').trim() || e.message}`, { cause: err });
  }
}

/** pids in a namespace (`ip netns pids`); empty when the namespace is gone. */
async function netnsPids(netns: string): Promise<number[]> {
  const out = await ip('netns', 'pids', netns).catch(() => '');
  return out.split(/\s+/).filter(Boolean).map(Number);
}

/** True while `pid` exists and is not a zombie. */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) Z /s.test(stat);
  } catch {
    return false;
  }
}

function makeHost(name: string, netns: string, addresses: string[]): NetnsHost {
  return {
    name,
    netns,
    address: addresses[0] as string,
    addresses,
    start(pname, cmd, args, opts = {}) {
      return startProcess(pname, IP, ['netns', 'exec', netns, cmd, ...args], opts);
    },
    async exec(cmd, args, opts = {}) {
      try {
        const r = await run(IP, ['netns', 'exec', netns, cmd, ...args], {
          timeout: opts.timeoutMs ?? 60_000, encoding: 'utf8', maxBuffer: 16 * 1024 * 1024,
          ...(opts.env ? { env: opts.env } : {}), ...(opts.cwd ? { cwd: opts.cwd } : {}),
        });
        return { stdout: r.stdout, stderr: r.stderr };
      } catch (err) {
        const e = err as Error & { stdout?: string; stderr?: string; code?: number | string };
        throw Object.assign(new Error(`in ${name}: ${cmd} ${args.join(' ')} failed (${e.code ?? e.message}): ${(e.stderr ?? '').trim()}`, { cause: err }),
          { stdout: e.stdout ?? '', stderr: e.stderr ?? '', exitCode: e.code });
      }
    },
    pids: () => netnsPids(netns),
    async killAll(timeoutMs = 10_000) {
      const killed = new Set<number>();
      // Kill until none is left: a process may fork while we kill its parent.
      await waitFor(async () => {
        const pids = (await netnsPids(netns)).filter(alive);
        for (const pid of pids) {
          try {
            process.kill(pid, 'SIGKILL');
            killed.add(pid);
          } catch { /* gone */ }
        }
        return pids.length === 0;
      }, { timeoutMs, what: `every process in ${netns} killed`, intervalMs: 50 });
      return [...killed];
    },
  };
}
