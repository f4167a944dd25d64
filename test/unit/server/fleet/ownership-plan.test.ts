import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { planOwnership, poolOwner, type OwnershipView } from '../../../../server/fleet/ownership-plan.js';

const POOLS = 'abcdefghijkl'.split('').map((p) => `${p}/main`);
const MEMBERS = ['m1', 'm2', 'm3'];
const ownerOf = (pool: string, members = MEMBERS): string => poolOwner(pool, members, members[0] as string) ?? '';
const view = (over: Partial<OwnershipView>): OwnershipView => ({
  me: 'm1', members: MEMBERS, pools: POOLS, fixed: new Set(), leases: new Map(), running: new Set(), confirmed: true, ...over,
});

describe('fleet ownership plan', () => {
  it('takes the free leases of the pools it owns, and only those', () => {
    const plan = planOwnership(view({}));
    assert.deepEqual(plan.take, POOLS.filter((p) => ownerOf(p) === 'm1'));
    assert.deepEqual([plan.stop, plan.release, plan.start, plan.waiting], [[], [], [], []]);
  });

  it('over three members every pool is taken by exactly one', () => {
    const takers = POOLS.map((p) => MEMBERS.filter((me) => planOwnership(view({ me })).take.includes(p)));
    for (const t of takers) assert.equal(t.length, 1);
  });

  it('starts a pool it holds as owner; waits while another (a dead member) still holds one it owns', () => {
    const mine = POOLS.filter((p) => ownerOf(p) === 'm1');
    const [held, other] = mine as [string, string];
    assert.ok(other, 'the test needs two pools of m1');
    const plan = planOwnership(view({ members: ['m1', 'm2', 'm3'], leases: new Map([[held, 'm1'], [other, 'm9']]) }));
    assert.deepEqual(plan.start, [held]);
    assert.deepEqual(plan.waiting, [other]);
    assert.ok(!plan.take.includes(held) && !plan.take.includes(other));
  });

  it('a member that is no longer the owner (one joined) stops the pool, then releases the lease', () => {
    const moving = POOLS.find((p) => ownerOf(p, ['m1']) === 'm1' && ownerOf(p) !== 'm1') as string;
    assert.ok(moving);
    const plan = planOwnership(view({ leases: new Map([[moving, 'm1']]), running: new Set([moving]) }));
    assert.deepEqual(plan.stop, [moving]);
    assert.deepEqual(plan.release, [moving]);
    // The new owner waits for that release.
    const owner = ownerOf(moving);
    assert.deepEqual(planOwnership(view({ me: owner, leases: new Map([[moving, 'm1']]) })).waiting.includes(moving), true);
  });

  it('an unconfirmed session stops every pool and releases what it holds, taking nothing', () => {
    const plan = planOwnership(view({ confirmed: false, leases: new Map([['a/main', 'm1'], ['b/main', 'm2']]), running: new Set(['a/main']) }));
    assert.deepEqual(plan, { stop: ['a/main'], release: ['a/main'], take: [], start: [], waiting: [] });
  });

  it('leaves the pools a fixed server registers, and gives up one it ran that became fixed or left the config', () => {
    const all = new Set(POOLS);
    const leases = new Map(POOLS.map((p) => [p, 'm1']));
    const plan = planOwnership(view({ members: ['m1'], pools: POOLS.slice(1), fixed: new Set(['b/main']), leases, running: all }));
    assert.deepEqual(plan.stop, ['a/main', 'b/main']);
    assert.deepEqual(plan.release, ['a/main', 'b/main']);
    assert.deepEqual(plan.take, []);
    assert.deepEqual(plan.start, []);
  });

  it('counts itself a member even when its own registration is not read yet', () => {
    assert.deepEqual(planOwnership(view({ members: [] })).take, POOLS);
  });
});
