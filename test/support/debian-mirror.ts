/**
 * The Debian mirror this machine's apt uses, read from its sources at run time, turned into
 * the env-vars DIB 3.13 needs for bookworm (its default security suite path is wrong).
 */
import { existsSync, readFileSync } from 'node:fs';

/** `{ debian, security }` base URLs from apt's sources (deb822 or one-line format). */
export function aptMirrors(): { debian: string; security: string } {
  const texts = ['/etc/apt/sources.list.d/debian.sources', '/etc/apt/sources.list']
    .filter((f) => existsSync(f)).map((f) => readFileSync(f, 'utf8'));
  const urls = texts.flatMap((t) => [...t.matchAll(/(?:URIs:|^deb)\s+(?:\[[^\]]*\]\s+)?(https?:\/\/\S+)/gm)].map((m) => m[1] as string));
  const security = urls.find((u) => /security/.test(u));
  const debian = urls.find((u) => !/security/.test(u));
  if (!debian || !security) throw new Error('cannot find the Debian and Debian-security mirrors in apt sources');
  return { debian: debian.replace(/\/$/, ''), security: security.replace(/\/$/, '') };
}

/** env-vars for a bookworm `debian-minimal` build against the apt mirrors. */
export function bookwormDibEnv(): Record<string, string> {
  const { debian, security } = aptMirrors();
  return {
    DIB_DISTRIBUTION_MIRROR: debian,
    DIB_DEBIAN_SECURITY_MIRROR: security,
    DIB_DEBIAN_SECURITY_SUBPATH: '-security',
    DIB_APT_SOURCES_CONF: [
      `default:deb ${debian} bookworm main`,
      `updates:deb ${debian} bookworm-updates main`,
      `security:deb ${security} bookworm-security main`,
    ].join('\n'),
  };
}
