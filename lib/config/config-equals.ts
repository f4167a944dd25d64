/**
 * Value equality of loaded config parts, for reloads: a provider restarts, a daemon keeps its
 * gearmand connections or its store, only when these say a part changed. Pure.
 */

/** Canonical JSON (sorted keys), so equal configs give equal strings. */
export function fingerprint(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
    return Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  });
}

/** Value equality of two configs: a provider restarts on reload only when this is false. */
export function configEquals(a: unknown, b: unknown): boolean {
  return fingerprint(a) === fingerprint(b);
}
