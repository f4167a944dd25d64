import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rendezvousOwner, rendezvousOwners, rendezvousWeight } from '../../../lib/fleet/rendezvous.js';

const POOLS = Array.from({ length: 60 }, (_, i) => `cloud-${i % 6}/pool-${i}`);
const MEMBERS = ['launcher-a', 'launcher-b', 'launcher-c'];

describe('rendezvous ownership', () => {
  it('is the same for any order of the members, and deterministic', () => {
    const one = rendezvousOwners(POOLS, MEMBERS);
    const two = rendezvousOwners(POOLS, [...MEMBERS].reverse());
    assert.deepEqual([...one], [...two]);
    assert.equal(rendezvousWeight('launcher-a', 'p'), rendezvousWeight('launcher-a', 'p'));
    assert.notEqual(rendezvousWeight('launcher-a', 'p'), rendezvousWeight('launcher-a', 'q'));
  });

  it('spreads pools over the members (60 pools, 3 members: each holds some)', () => {
    const counts = new Map<string, number>();
    for (const owner of rendezvousOwners(POOLS, MEMBERS).values()) counts.set(owner, (counts.get(owner) ?? 0) + 1);
    assert.deepEqual([...counts.keys()].sort(), MEMBERS);
    for (const [member, n] of counts) assert.ok(n >= 10 && n <= 30, `${member} owns ${n} of 60`);
  });

  it('moves only the pools of a member that leaves, and only to the remaining members', () => {
    const before = rendezvousOwners(POOLS, MEMBERS);
    const after = rendezvousOwners(POOLS, ['launcher-a', 'launcher-c']);
    for (const pool of POOLS) {
      if (before.get(pool) !== 'launcher-b') assert.equal(after.get(pool), before.get(pool), `${pool} stays`);
      else assert.notEqual(after.get(pool), 'launcher-b');
    }
  });

  it('moves to a member that joins only the pools it wins', () => {
    const before = rendezvousOwners(POOLS, MEMBERS);
    const after = rendezvousOwners(POOLS, [...MEMBERS, 'launcher-d']);
    const moved = POOLS.filter((p) => after.get(p) !== before.get(p));
    assert.ok(moved.length > 0);
    for (const pool of moved) assert.equal(after.get(pool), 'launcher-d');
  });

  it('has no owner without members', () => {
    assert.equal(rendezvousOwner('cloud/pool', []), undefined);
    assert.equal(rendezvousOwners(POOLS, []).size, 0);
  });
});
