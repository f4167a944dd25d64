/**
 * How tests start the product's scripts (bin/*.ts, the test/fixtures scripts) as child
 * processes: from the run's compiled JS copy when test/run.ts made one (it names it in
 * NODEPOOL_TEST_JS, see test/support/compile-product.ts), else through tsx, so a test file run
 * some other way still works. A start through tsx costs about three times the CPU (its loader
 * transforms every module again in each process).
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The environment variable test/run.ts sets to the root of its compiled copy (the repo's layout, `.ts` → `.js`). */
export const COMPILED_DIR_ENV = 'NODEPOOL_TEST_JS';

/**
 * Written into the copy last (test/support/compile-product.ts). The runner names the copy before
 * it is written, so the tests need not wait for it: a script started before the marker exists
 * runs through tsx.
 */
export const COMPLETE_MARKER = '.complete';

/** The folders (repo-relative) the compiled copy holds: the product, its scripts and benchmarks, and the tests. */
export const COMPILED_DIRS: readonly string[] = ['bin', 'lib', 'server', 'workers', 'cli', 'scripts', 'bench', 'test'];

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * Node's arguments that run `script` (repo-relative, e.g. `bin/nodepool.ts`); the script's own
 * arguments follow. The compiled file when the run's compiled copy is complete and the script is
 * in it, else the source through tsx.
 */
export function nodeScript(script: string, env: NodeJS.ProcessEnv = process.env): string[] {
  const compiled = env[COMPILED_DIR_ENV];
  const rel = path.relative(ROOT, path.resolve(ROOT, script));
  if (compiled && rel.endsWith('.ts') && COMPILED_DIRS.some((d) => rel.startsWith(`${d}${path.sep}`))
    && existsSync(path.join(compiled, COMPLETE_MARKER))) {
    // Source maps keep stack traces on the .ts lines, as under tsx (the copy is gone after the run).
    return ['--enable-source-maps', path.join(compiled, rel.replace(/\.ts$/, '.js'))];
  }
  return ['--import', 'tsx', path.join(ROOT, rel)];
}
