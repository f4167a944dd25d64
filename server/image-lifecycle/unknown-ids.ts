/**
 * Ids and images the store has never heard of (pure). Deleting them is what a second
 * installation on the same gearmand or cloud, or a server started on an empty or wrong store,
 * must never do to the other's work, so a deletion of an unknown thing waits for two things:
 * it has stayed unknown for `image-lifecycle.stray-grace` (tracked across passes by
 * {@link trackUnknown}), and the unknown things are not most of what there is
 * ({@link unknownGuard}: then the store, not the files, is the odd one out).
 */

/** More unknown ids than this, and more than half of all, make the store suspect. */
export const MANY_UNKNOWN = 3;

/**
 * Keeps `since` (key → first pass it was seen unknown) in step with this pass's `unknown`
 * keys: new ones start now, known-again or vanished ones are dropped.
 */
export function trackUnknown(since: Map<string, number>, unknown: Iterable<string>, now: number): void {
  const seen = new Set(unknown);
  for (const key of since.keys()) if (!seen.has(key)) since.delete(key);
  for (const key of seen) if (!since.has(key)) since.set(key, now);
}

/** Whether a key unknown since `since` has been so for the grace period. */
export function graceOver(since: number | undefined, now: number, graceS: number): boolean {
  return since !== undefined && now - since >= graceS * 1000;
}

/** What {@link unknownGuard} looks at. */
export interface UnknownCounts {
  /** What is unknown, e.g. `image ids` or `cloud images of provider p`. */
  what: string;
  /** Unknown things (no record at all). */
  unknown: number;
  /** All things of the kind seen (known and unknown). */
  total: number;
  /** Records the store has of the kind (0: the store looks new or reset). */
  records: number;
}

/**
 * Why deleting the unknown things must be refused, or null when it may go ahead: the store has
 * no records at all while things exist (a new, reset or wrong store), or more than
 * {@link MANY_UNKNOWN} and more than half of what exists is unknown (another installation's
 * files, or a store restored from an old backup).
 */
export function unknownGuard(c: UnknownCounts): string | null {
  if (c.unknown === 0) return null;
  if (c.records === 0) {
    return `the store has no records, but ${c.unknown} ${c.what} exist: a new, reset or wrong store (or another installation's)? Not deleting them`;
  }
  if (c.unknown > MANY_UNKNOWN && c.unknown * 2 > c.total) {
    return `${c.unknown} of ${c.total} ${c.what} are unknown to this store: another installation sharing them, or a wrong or restored store? Not deleting them`;
  }
  return null;
}

/** Why ids seen while the store was empty are not deleted. */
export function suspectReason(n: number, what: string): string {
  return `${n} ${what} were there before this store had any record of its own: a new, reset or wrong store, or another installation's? Not deleting them`;
}

/** The advice appended to a refusal in logs and status. */
export const UNKNOWN_ADVICE = 'if they are really this installation\'s to delete, set image-lifecycle.delete-unknown: true (or delete them by hand)';
