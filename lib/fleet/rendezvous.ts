/**
 * Rendezvous (highest random weight) hashing: which live launcher of a fleet owns a
 * provider-pool (issue 35 §1). Every launcher computes the same owner from the same member list
 * without asking the others, and when a member joins or leaves only the pools it wins or held
 * move (zuul-launcher shares its providers the same way). Pure.
 */
import { createHash } from 'node:crypto';

/** The weight of `member` for `key`: the first 64 bits of sha256(member NUL key). */
export function rendezvousWeight(member: string, key: string): bigint {
  return createHash('sha256').update(member).update('\0').update(key).digest().readBigUInt64BE(0);
}

/**
 * The owner of `key` among `members`: the member of highest weight (a tie, which sha256 makes
 * all but impossible, goes to the smaller name). Undefined when there is no member.
 */
export function rendezvousOwner(key: string, members: Iterable<string>): string | undefined {
  let owner: string | undefined;
  let best = -1n;
  for (const member of members) {
    const weight = rendezvousWeight(member, key);
    if (weight > best || (weight === best && owner !== undefined && member < owner)) {
      owner = member;
      best = weight;
    }
  }
  return owner;
}

/** The owner of each key (keys without one, when there are no members, are left out). */
export function rendezvousOwners(keys: Iterable<string>, members: readonly string[]): Map<string, string> {
  const owners = new Map<string, string>();
  for (const key of keys) {
    const owner = rendezvousOwner(key, members);
    if (owner !== undefined) owners.set(key, owner);
  }
  return owners;
}
