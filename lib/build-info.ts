/**
 * What `--version` prints: the package version and, for a package built from a git checkout,
 * the revision it was built from. `npm pack` (prepack) writes `dist/build-info.json` with
 * scripts/write-build-info.ts; nothing here runs git. Run from the sources (tsx), there is no
 * build info and the version comes from the nearest package.json.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The contents of `build-info.json`. */
export interface BuildInfo {
  /** The package version (package.json) at build time. */
  version: string;
  /** `git rev-parse HEAD` when built from a checkout, with `-dirty` when tracked files had changes; null otherwise. */
  revision: string | null;
  /** When it was built (ISO 8601). */
  built: string;
}

/** File name of the build info, next to the compiled `bin/`, `lib/`, ... directories. */
export const BUILD_INFO_FILE = 'build-info.json';

const here = path.dirname(fileURLToPath(import.meta.url));

/** The build info of this installation, or undefined when running from the sources. */
export function readBuildInfo(dir = path.join(here, '..')): BuildInfo | undefined {
  const file = path.join(dir, BUILD_INFO_FILE);
  if (!existsSync(file)) return undefined;
  return JSON.parse(readFileSync(file, 'utf8')) as BuildInfo;
}

/** The version in the nearest package.json above `from`. */
export function packageVersion(from = here): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const file = path.join(dir, 'package.json');
    if (existsSync(file)) return String((JSON.parse(readFileSync(file, 'utf8')) as { version?: unknown }).version ?? 'unknown');
    if (path.dirname(dir) === dir) return 'unknown';
  }
}

/**
 * One line for `--version`: `0.1.0 (git 0123456789ab)` for a package built from a checkout,
 * `0.1.0` for one built elsewhere (or compiled without build info), `0.1.0 (from source)` under tsx.
 */
export function versionText(info: BuildInfo | undefined = readBuildInfo()): string {
  if (!info) return import.meta.url.endsWith('.ts') ? `${packageVersion()} (from source)` : packageVersion();
  if (!info.revision) return info.version;
  const [sha, dirty] = info.revision.split('-');
  return `${info.version} (git ${(sha ?? '').slice(0, 12)}${dirty ? `-${dirty}` : ''})`;
}
