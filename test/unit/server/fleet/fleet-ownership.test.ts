/**
 * FleetOwnership on a real SQLite store with a moved clock: three members and twelve pools.
 * Each pool is run by exactly one member; a member whose session lapses loses its pools to the
 * others only once the session has lapsed; a member that joins takes its share back, each pool
 * stopped by its old owner before the new one starts it; an unconfirmed member stops everything;
 * pools a fixed server registers are left to it. After every pass the test checks that no pool
 * runs on two members. Session ids are random, so which member owns what is asserted against
 * the rendezvous rule over them, and each case picks its members by what they own (a fixed
 * name could own nothing: 12 pools over 3 members leave one empty about 2 % of the time).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseConfig } from '../../../../lib/config/load.js';
import type { Config } from '../../../../lib/config/schema.js';
import { silentLogger } from '../../../../lib/log.js';
import { rendezvousOwners } from '../../../../lib/fleet/rendezvous.js';
import { SqliteStore } from '../../../../lib/store/sqlite/sqlite-store.js';
import { FLEET_SESSION_OWNER, FleetOwnership } from '../../../../server/fleet/fleet-ownership.js';

const TTL = 20_000;
const PROVIDERS = ['a', 'b', 'c'].map((p) => ({
  name: p, driver: 'static', pools: ['p1', 'p2', 'p3', 'p4'].map((pool, i) => ({ name: pool, nodes: [{ name: `${p}${i}.example`, labels: ['small'] }] })),
}));
const CONFIG_TEXT = JSON.stringify({ labels: [{ name: 'small' }], providers: PROVIDERS });
const ALL = PROVIDERS.flatMap((p) => p.pools.map((pool) => `${p.name}/${pool.name}`)).sort();

interface Member {
  name: string;
  session: string;
  confirmedAt: number;
  ownership: FleetOwnership;
  /** What the launcher would run: the owned pools as last applied. */
  running: Set<string>;
}

describe('fleet ownership over a SQLite store', () => {
  let dir: string;
  let store: SqliteStore;
  let now = 1_000_000;
  let config: Config;
  const members = new Map<string, Member>();

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'fleet-ownership-'));
    store = await SqliteStore.open(path.join(dir, 'nodepool.db'), { clock: () => now });
    config = parseConfig(CONFIG_TEXT, path.join(dir, 'nodepool.yaml'));
  });

  after(async () => {
    for (const m of members.values()) await m.ownership.loop.stop();
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  /**
   * A new member. `mustOwn`: its session is opened again (the unused one closed) until the
   * rendezvous rule over the members then gives it at least one pool (each try about 97 %).
   */
  async function join(name: string, mustOwn = false): Promise<Member> {
    const open = async (): Promise<string> => (await store.openSession({ owner: FLEET_SESSION_OWNER, hostname: `host-${name}`, pid: 1, ttlMs: TTL })).id;
    let session = await open();
    for (let tries = 1; mustOwn && ![...expectedOwners([session]).values()].includes(session); tries++) {
      assert.ok(tries < 50, `a session of ${name} that owns a pool within 50 tries`);
      await store.closeSession(session);
      session = await open();
    }
    const m: Member = {
      name, session, confirmedAt: now, running: new Set(),
      ownership: undefined as unknown as FleetOwnership,
    };
    m.ownership = new FleetOwnership({
      store, log: silentLogger(), config: () => config, sessionId: () => m.session, sessionTimeoutMs: () => TTL,
      confirmedAt: () => m.confirmedAt, clock: () => now,
      apply: () => {
        m.running = new Set(m.ownership.ownedPools());
        return Promise.resolve();
      },
    });
    members.set(name, m);
    return m;
  }

  /** One pass of each live member, in turn; after each, no pool runs twice. */
  async function passAll(): Promise<void> {
    for (const m of members.values()) {
      await m.ownership.pass();
      const seen = new Map<string, string>();
      for (const other of members.values()) {
        for (const pool of other.running) {
          assert.equal(seen.get(pool), undefined, `${pool} runs on ${seen.get(pool) ?? ''} and ${other.name}`);
          seen.set(pool, other.name);
        }
      }
    }
  }

  const renewAll = async (except: string[] = []): Promise<void> => {
    for (const m of members.values()) {
      if (except.includes(m.name)) continue;
      assert.equal(await store.renewSession(m.session), true);
      m.confirmedAt = now;
    }
  };

  /** The rendezvous owner (session id) of every pool over the members' sessions and `extra`. */
  const expectedOwners = (extra: string[] = []): Map<string, string> => rendezvousOwners(ALL, [...[...members.values()].map((m) => m.session), ...extra]);
  /** The member owning the most pools now (12 pools over 3 or fewer members: at least 4). */
  const richest = (): string => {
    const count = new Map<string, number>();
    for (const m of runners().values()) count.set(m, (count.get(m) ?? 0) + 1);
    return [...count].sort((a, b) => b[1] - a[1])[0]?.[0] as string;
  };

  const runners = (): Map<string, string> => new Map([...members.values()].flatMap((m) => [...m.running].map((p) => [p, m.name] as [string, string])));

  it('spreads the twelve pools over three members, each run once', async () => {
    for (const name of ['m1', 'm2', 'm3']) await join(name);
    await passAll();
    const owners = runners();
    assert.deepEqual([...owners.keys()].sort(), ALL);
    const byName = new Map([...members.values()].map((m) => [m.session, m.name]));
    assert.deepEqual(new Map([...expectedOwners()].map(([p, s]) => [p, byName.get(s)])), owners, 'each pool on its rendezvous owner');
  });

  it('a member whose session lapses loses its pools only after the lapse; the others take them', async () => {
    const before = runners();
    const victim = richest();
    const lost = [...before].filter(([, m]) => m === victim).map(([p]) => p);
    assert.ok(lost.length > 0);
    // The victim stops renewing (killed): while its session lives, its pools wait.
    now += TTL / 2;
    await renewAll([victim]);
    const dead = members.get(victim) as Member;
    members.delete(victim);
    await passAll();
    for (const pool of lost) assert.equal(runners().get(pool), undefined, `${pool} waits for ${victim}'s session`);
    now += TTL / 2 + 1;
    await renewAll();
    await passAll();
    const after = runners();
    assert.deepEqual([...after.keys()].sort(), ALL, 'every pool runs again');
    for (const pool of lost) assert.notEqual(after.get(pool), victim);
    for (const [pool, m] of before) if (m !== victim) assert.equal(after.get(pool), m, `${pool} stayed on ${m}`);
    await dead.ownership.loop.stop();
  });

  it('a member that joins takes its share back: stopped by the old owner first, then started', async () => {
    await join('m4', true);
    await passAll(); // m1, m3 stop and release what m4 now owns; m4 (last) takes it
    await passAll();
    const owners = runners();
    assert.deepEqual([...owners.keys()].sort(), ALL);
    assert.ok([...owners.values()].includes('m4'));
  });

  it('an unconfirmed member stops every pool; it is taken over only after its session lapses', async () => {
    const name = richest();
    const m1 = members.get(name) as Member;
    const held = [...m1.running];
    assert.ok(held.length > 0);
    now += TTL * 0.8;
    await renewAll([name]);
    await m1.ownership.pass();
    assert.deepEqual([...m1.running], [], 'stopped: its session may be gone');
    members.delete(name);
    now += TTL * 0.3;
    await renewAll();
    await passAll();
    assert.deepEqual([...runners().keys()].sort(), ALL);
  });

  it('leaves a pool that a fixed server registers; takes it back once that server is gone', async () => {
    const fixed = (await store.openSession({ owner: 'nodepool-server', hostname: 'fixed', pid: 2, ttlMs: TTL })).id;
    const pool = ALL[0] as string;
    const holder = runners().get(pool) as string;
    await store.registerLauncher({ id: 'fixed-PoolWorker.a-p1', sessionId: fixed, provider: 'a', pool: 'p1', supportedLabels: ['small'] });
    await passAll();
    assert.equal(runners().get(pool), undefined, `${holder} stopped ${pool}`);
    await store.closeSession(fixed);
    await passAll();
    assert.equal(runners().get(pool), holder);
  });
});
