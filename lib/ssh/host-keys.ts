/**
 * SSH host keys as nodepool keeps them: `"<type> <base64>"` lines (the known_hosts key part,
 * without host names or comments). Pure helpers: normalise configured keys, read
 * `ssh-keyscan` output, and explain why configured keys are not among scanned ones.
 */

/**
 * `ssh-ed25519 AAAA... comment` → `ssh-ed25519 AAAA...`; undefined when it is not a public key.
 * The blob must be base64 of an SSH key whose embedded type name is the stated type.
 */
export function normalizeHostKey(text: string): string | undefined {
  const [type, blob] = text.trim().split(/\s+/);
  if (!type || !blob || !/^[a-z0-9@.+-]+$/i.test(type) || !/^[A-Za-z0-9+/]+={0,2}$/.test(blob)) return undefined;
  const raw = Buffer.from(blob, 'base64');
  if (raw.length < 4) return undefined;
  const len = raw.readUInt32BE(0);
  if (len !== type.length || raw.length < 4 + len || raw.toString('latin1', 4, 4 + len) !== type) return undefined;
  return `${type} ${blob}`;
}

/** The type part of a `"<type> <base64>"` key. */
export function hostKeyType(key: string): string {
  return key.split(' ', 1)[0] ?? '';
}

/**
 * Keys in `ssh-keyscan` output (`[host]:port <type> <base64>` lines; `#` lines are banners),
 * deduplicated and sorted so equal key sets compare equal.
 */
export function parseKeyscanOutput(output: string): string[] {
  const keys = new Set<string>();
  for (const line of output.split('\n')) {
    const trimmed = line.trim();
    if (!trimmed || trimmed.startsWith('#')) continue;
    const key = normalizeHostKey(trimmed.split(/\s+/).slice(1).join(' '));
    if (key) keys.add(key);
  }
  return [...keys].sort();
}

/**
 * Why the configured keys are not all among the scanned ones, or undefined when they are.
 * The message names expected and scanned key types (never whole keys, which are long).
 */
export function hostKeyMismatch(expected: readonly string[], scanned: readonly string[]): string | undefined {
  const have = new Set(scanned);
  const missing = expected.filter((k) => !have.has(k));
  if (missing.length === 0) return undefined;
  const types = (keys: readonly string[]): string => (keys.length ? keys.map(hostKeyType).join(', ') : 'none');
  const sameType = missing.filter((k) => scanned.some((s) => hostKeyType(s) === hostKeyType(k)));
  const detail = sameType.length ? ` (the host's ${types(sameType)} key differs)` : '';
  return `host key mismatch: expected ${types(missing)}, scanned ${types(scanned)}${detail}`;
}
