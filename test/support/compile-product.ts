/**
 * The test run's compiled copy of the product and its tests: test/run.ts transforms every .ts
 * file of COMPILED_DIRS to ESM JavaScript with esbuild, file by file (no bundling, so relative
 * imports keep their meaning, and `import.meta`'s location names the source file, see
 * sourceLocation), into `.run/test-js/<run>/` inside the project (so `node_modules` resolves
 * from it), runs the test files from it and removes it when the run ends. Each run
 * makes its own copy, so a test never runs code older than the sources; copies left by runs
 * that died are swept at the next start.
 */
import { copyFile, mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { transform, type TsconfigRaw } from 'esbuild';
import { COMPILED_DIRS, COMPLETE_MARKER } from './node-command.js';
import { pidAlive } from './pid-alive.js';

/** Where runs keep their copies, each in a folder named `<pid>-<ms>` of the run. */
export const COMPILED_BASE = path.join('.run', 'test-js');

async function filesUnder(root: string, dir: string): Promise<string[]> {
  const entries = await readdir(path.join(root, dir), { withFileTypes: true }).catch(() => []);
  const nested = await Promise.all(entries.map((e) => {
    const rel = path.join(dir, e.name);
    return e.isDirectory() ? filesUnder(root, rel) : Promise.resolve(e.isFile() ? [rel] : []);
  }));
  return nested.flat();
}

/** Removes the copies under `base` of runs whose process is gone (a run killed before its cleanup). */
export async function sweepDeadCopies(base: string): Promise<void> {
  const names = await readdir(base).catch(() => []);
  await Promise.all(names.map((name) => {
    const pid = Number(/^(\d+)-\d+$/.exec(name)?.[1]);
    return pid && !pidAlive(pid) ? rm(path.join(base, name), { recursive: true, force: true }) : Promise.resolve();
  }));
}

/**
 * `import.meta`'s location fields of a compiled file name its source, so a module finds the
 * files beside it (fixtures, scripts, the project root, package.json) and tells it runs from
 * source exactly as under tsx; its relative imports still load the compiled modules beside it.
 */
function sourceLocation(src: string): Record<string, string> {
  const abs = path.resolve(src);
  return {
    'import.meta.url': JSON.stringify(pathToFileURL(abs).href),
    'import.meta.filename': JSON.stringify(abs),
    'import.meta.dirname': JSON.stringify(path.dirname(abs)),
  };
}

/**
 * Writes the compiled copy of the sources under `root` into `outDir` (made afresh): each .ts
 * file as .js with an inline source map, every other file copied, then COMPLETE_MARKER.
 * Resolves with the count of files compiled.
 */
export async function compileProduct(root: string, outDir: string): Promise<number> {
  await rm(outDir, { recursive: true, force: true });
  // The project's compiler options, as tsx passes them (class fields, import elision).
  const tsconfig = JSON.parse(await readFile(path.join(root, 'tsconfig.json'), 'utf8')) as TsconfigRaw;
  const tsconfigRaw: TsconfigRaw = { compilerOptions: tsconfig.compilerOptions ?? {} };
  const files = (await Promise.all(COMPILED_DIRS.map((d) => filesUnder(root, d)))).flat();
  let compiled = 0;
  await Promise.all(files.map(async (rel) => {
    const src = path.join(root, rel);
    const isTs = rel.endsWith('.ts') && !rel.endsWith('.d.ts');
    const dest = path.join(outDir, isTs ? rel.replace(/\.ts$/, '.js') : rel);
    await mkdir(path.dirname(dest), { recursive: true });
    if (!isTs) return copyFile(src, dest);
    const { code } = await transform(await readFile(src, 'utf8'), {
      loader: 'ts', format: 'esm', target: `node${process.versions.node}`, sourcemap: 'inline', sourcefile: src, tsconfigRaw,
      define: sourceLocation(src),
    });
    await writeFile(dest, code);
    compiled++;
  }));
  await writeFile(path.join(outDir, COMPLETE_MARKER), `${compiled}\n`);
  return compiled;
}
