/**
 * Test support for the launcher fleet's kill tests (test/integration/fleet/): who registers each
 * pool, who should (rendezvous over the live fleet members), and whether the fleet has settled
 * there, read from the store as any observer would.
 */
import { rendezvousOwners } from '../../lib/fleet/rendezvous.js';
import { waitFor } from '../../lib/lifecycle.js';
import type { Store } from '../../lib/store/store.js';
import { FLEET_SESSION_OWNER } from '../../server/fleet/fleet-ownership.js';

export class FleetWatch {
  /** What the watcher saw that must never be: a pool registered twice, and what the test's own check adds. */
  readonly seen = new Set<string>();
  private watching: Promise<void> | undefined;
  private stopped = false;

  /** `pools`: the pool keys (`<provider>/<pool>`) the fleet shares; `servers`: how many members it has when all run. */
  constructor(private readonly store: Store, private readonly pools: readonly string[], private readonly servers: number) {}

  /** Reads the store every 200 ms until {@link stop}: each pool registered twice, and each line `also` returns, goes into {@link seen}. */
  watch(also: () => Promise<string[]> = () => Promise.resolve([])): void {
    this.watching ??= (async () => {
      while (!this.stopped) {
        const regs = await this.registrations().catch(() => new Map<string, string[]>());
        for (const [pool, hosts] of regs) if (hosts.length > 1) this.seen.add(`pool ${pool}: ${hosts.join(', ')}`);
        for (const line of await also().catch(() => [])) this.seen.add(line);
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.watching;
  }

  /** Pool key → hostnames of the servers whose pool workers register it (live registrations). */
  async registrations(): Promise<Map<string, string[]>> {
    const byPool = new Map<string, string[]>();
    const sessions = new Map((await this.store.listSessions()).map((s) => [s.id, s.hostname]));
    for (const l of await this.store.listLaunchers()) {
      const key = `${l.provider}/${l.pool}`;
      byPool.set(key, [...(byPool.get(key) ?? []), sessions.get(l.sessionId) ?? l.sessionId]);
    }
    return byPool;
  }

  /** Waits (bounded, 120 s) until each of `pools` is registered once, by another server than `from`; the ms it took since `since`. */
  async movedFrom(from: string, pools: readonly string[], since: number, what: string): Promise<number> {
    await waitFor(async () => {
      const regs = await this.registrations();
      return pools.every((p) => regs.get(p)?.length === 1 && regs.get(p)?.[0] !== from) ? true : undefined;
    }, { timeoutMs: 120_000, intervalMs: 100, what });
    return Date.now() - since;
  }

  /** The expected owner (hostname) of each pool: rendezvous over the fleet sessions. */
  async expectedOwners(): Promise<Map<string, string>> {
    const members = (await this.store.listSessions()).filter((s) => s.owner === FLEET_SESSION_OWNER);
    const byId = new Map(members.map((s) => [s.id, s.hostname]));
    return new Map([...rendezvousOwners(this.pools, [...byId.keys()])].map(([k, id]) => [k, byId.get(id) ?? id]));
  }

  /** Live fleet members (their store sessions). */
  async liveMembers(): Promise<number> {
    const members = (await this.store.listSessions()).filter((s) => s.owner === FLEET_SESSION_OWNER);
    return (await Promise.all(members.map((m) => this.store.isSessionLive(m.id)))).filter(Boolean).length;
  }

  /**
   * The owners, once every server is a live member (a restarted one has opened its session, so
   * no pool is about to move) and each pool is registered once, by its rendezvous owner; else undefined.
   */
  async settled(): Promise<Map<string, string> | undefined> {
    const [regs, expected, members] = await Promise.all([this.registrations(), this.expectedOwners(), this.liveMembers()]);
    if (members !== this.servers || expected.size !== this.pools.length) return undefined;
    for (const p of this.pools) if (regs.get(p)?.length !== 1 || regs.get(p)?.[0] !== expected.get(p)) return undefined;
    return expected;
  }
}
