/**
 * Writes the build info that `--version` prints (lib/build-info.ts): the package version and,
 * in a git checkout, the revision (`-dirty` when tracked files differ from it). Run by
 * `npm pack` (prepack) after the TypeScript build: `node --import tsx scripts/write-build-info.ts dist/build-info.json`.
 */
import { execFileSync } from 'node:child_process';
import { realpathSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { packageVersion, type BuildInfo } from '../lib/build-info.js';

function git(args: string[]): string {
  return execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
}

/** The checkout's revision, or null outside a git checkout of this package (or without git). */
function revision(): string | null {
  let sha: string;
  try {
    // A source tree unpacked inside some other repository is not a checkout of this package.
    if (realpathSync(git(['rev-parse', '--show-toplevel'])) !== realpathSync('.')) return null;
    sha = git(['rev-parse', 'HEAD']);
  } catch {
    return null;
  }
  try {
    git(['diff', '--quiet', 'HEAD', '--']);
    return sha;
  } catch {
    return `${sha}-dirty`;
  }
}

const out = process.argv[2];
if (!out) {
  console.error('usage: write-build-info.ts <output file>');
  process.exit(2);
}
const info: BuildInfo = { version: packageVersion(path.resolve('.')), revision: revision(), built: new Date().toISOString() };
writeFileSync(out, `${JSON.stringify(info, null, 2)}\n`);
// stderr: npm pack --json prints its report on stdout.
console.error(`${out}: ${info.version} ${info.revision ?? '(not a git checkout)'}`);
