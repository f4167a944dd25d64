/**
 * Pure helpers on JWT claim sets: reading and writing a claim at a dotted path
 * (`nodepool.role`), and the strongest known role among a role claim's values.
 */
import { ROLES, type Role } from './auth-types.js';

/** The value at a dotted path of a claim set (`a.b` → `payload.a.b`), or undefined. */
export function claimAt(payload: unknown, path: string): unknown {
  let value: unknown = payload;
  for (const part of path.split('.')) {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
    if (!Object.hasOwn(value, part)) return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

/** A copy of `payload` with `value` set at a dotted path, creating objects on the way. */
export function withClaimAt(payload: Readonly<Record<string, unknown>>, path: string, value: unknown): Record<string, unknown> {
  // split gives at least one part: the whole path when it holds no dot.
  const [first, ...rest] = path.split('.');
  return withValueAt(payload, first ?? path, rest, value);
}

/** A copy of `obj` with `value` at `key` followed by the keys `rest`, creating objects on the way. */
function withValueAt(obj: Readonly<Record<string, unknown>>, key: string, rest: readonly string[], value: unknown): Record<string, unknown> {
  const [next, ...after] = rest;
  if (next === undefined) return { ...obj, [key]: value };
  const inner = obj[key];
  const child = inner !== null && typeof inner === 'object' && !Array.isArray(inner) ? (inner as Record<string, unknown>) : {};
  return { ...obj, [key]: withValueAt(child, next, after, value) };
}

/**
 * The strongest of {@link ROLES} a role claim names (a string or a list of strings; unknown
 * names and non-strings are ignored), or undefined when it names none.
 */
export function strongestRole(claim: unknown): Role | undefined {
  const names = Array.isArray(claim) ? claim : [claim];
  let best = -1;
  for (const name of names) {
    if (typeof name !== 'string') continue;
    best = Math.max(best, (ROLES as readonly string[]).indexOf(name));
  }
  return best < 0 ? undefined : ROLES[best];
}
