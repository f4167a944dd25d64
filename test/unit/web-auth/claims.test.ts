import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { claimAt, withClaimAt } from '../../../lib/web-auth/claims.js';

describe('claims at dotted paths', () => {
  it('sets a top-level claim and keeps the others', () => {
    assert.deepEqual(withClaimAt({ iss: 'x', sub: 'a' }, 'sub', 'b'), { iss: 'x', sub: 'b' });
  });

  it('sets a nested claim, creating objects on the way and keeping siblings', () => {
    const payload = { realm_access: { roles: ['read'], other: 1 }, iss: 'x' };
    const out = withClaimAt(payload, 'realm_access.roles', ['admin']);
    assert.deepEqual(out, { realm_access: { roles: ['admin'], other: 1 }, iss: 'x' });
    assert.deepEqual(withClaimAt({}, 'a.b.c', 5), { a: { b: { c: 5 } } });
    assert.equal(claimAt(withClaimAt({}, 'a.b.c', 5), 'a.b.c'), 5);
  });

  it('replaces a non-object on the way and never changes the payload it was given', () => {
    const payload = { a: 'text', b: [1] };
    assert.deepEqual(withClaimAt(payload, 'a.x', 1), { a: { x: 1 }, b: [1] });
    assert.deepEqual(withClaimAt(payload, 'b.x', 1), { a: 'text', b: { x: 1 } });
    assert.deepEqual(payload, { a: 'text', b: [1] });
  });
});
