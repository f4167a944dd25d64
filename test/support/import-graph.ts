/**
 * The project's import graph, read from its TypeScript sources with the TypeScript parser:
 * every relative import of each file (`import`, `import type`, `export … from`, `import x =
 * require(…)` and `import('…')` types), resolved to the file it names, with dynamic `import()`
 * calls listed apart. test/unit/import-rules.test.ts holds the layering rules on it; the
 * closure and circle functions are exported for later rules.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** One file's imports: project-relative paths of the files it names. */
export interface FileImports {
  /** Loaded with the file (value and type imports, re-exports). */
  readonly static: readonly string[];
  /** Type-only among {@link static} (`import type`, `export type … from`, `import('…')` types): erased at run time. */
  readonly typeOnly: readonly string[];
  /** Loaded when the code runs it: `import('…')` calls. */
  readonly dynamic: readonly string[];
}

/** Project-relative path (forward slashes) → its imports. */
export type ImportGraph = ReadonlyMap<string, FileImports>;

function sourcesUnder(root: string, dir: string): string[] {
  const abs = path.join(root, dir);
  if (!existsSync(abs)) return [];
  return readdirSync(abs).flatMap((name) => {
    const rel = `${dir}/${name}`;
    if (statSync(path.join(root, rel)).isDirectory()) return name === 'node_modules' ? [] : sourcesUnder(root, rel);
    return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [rel] : [];
  });
}

/** The file a relative specifier names (`./x.js` → `x.ts`), or undefined for a package or a missing file. */
function resolve(root: string, from: string, spec: string): string | undefined {
  if (!spec.startsWith('.')) return undefined;
  const base = path.posix.normalize(path.posix.join(path.posix.dirname(from), spec));
  const candidates = [base.replace(/\.js$/, '.ts'), `${base}.ts`, `${base}/index.ts`, base];
  return candidates.find((c) => c.endsWith('.ts') && existsSync(path.join(root, c)));
}

/** The specifiers of one source text, by kind (pure). */
export function importsOfText(text: string, fileName = 'file.ts'): { static: string[]; typeOnly: string[]; dynamic: string[] } {
  const sf = ts.createSourceFile(fileName, text, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
  const out = { static: [] as string[], typeOnly: [] as string[], dynamic: [] as string[] };
  const literal = (e: ts.Node | undefined): string | undefined => (e && ts.isStringLiteralLike(e) ? e.text : undefined);
  const add = (spec: string | undefined, typeOnly: boolean): void => {
    if (spec === undefined) return;
    out.static.push(spec);
    if (typeOnly) out.typeOnly.push(spec);
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node)) {
      const c = node.importClause;
      const allTypes = c !== undefined && (c.isTypeOnly || (c.name === undefined && c.namedBindings !== undefined
        && ts.isNamedImports(c.namedBindings) && c.namedBindings.elements.length > 0 && c.namedBindings.elements.every((e) => e.isTypeOnly)));
      add(literal(node.moduleSpecifier), allTypes);
    } else if (ts.isExportDeclaration(node)) {
      const allTypes = node.isTypeOnly || (node.exportClause !== undefined && ts.isNamedExports(node.exportClause)
        && node.exportClause.elements.length > 0 && node.exportClause.elements.every((e) => e.isTypeOnly));
      add(literal(node.moduleSpecifier), allTypes);
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      add(literal(node.moduleReference.expression), node.isTypeOnly);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      add(literal(node.argument.literal), true);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const spec = literal(node.arguments[0]);
      if (spec !== undefined) out.dynamic.push(spec);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

/** Reads the `.ts` files under `dirs` of `root` and resolves their relative imports. */
export function importGraph(root: string, dirs: readonly string[]): ImportGraph {
  const graph = new Map<string, FileImports>();
  for (const file of dirs.flatMap((d) => sourcesUnder(root, d)).sort()) {
    const found = importsOfText(readFileSync(path.join(root, file), 'utf8'), file);
    const files = (specs: string[]): string[] => [...new Set(specs.map((s) => resolve(root, file, s)).filter((f): f is string => f !== undefined))];
    const all = files(found.static);
    // A file both type- and value-imported is loaded: only files named by type alone are type-only.
    const types = [...found.typeOnly];
    const values = new Set(files(found.static.filter((s) => {
      const i = types.indexOf(s);
      if (i === -1) return true;
      types.splice(i, 1);
      return false;
    })));
    graph.set(file, { static: all, typeOnly: all.filter((f) => !values.has(f)), dynamic: files(found.dynamic) });
  }
  return graph;
}

/** Which edges a walk follows: every static import, or only those loaded at run time (type-only ones left out). */
export type EdgeKind = 'static' | 'runtime';

function edges(graph: ImportGraph, file: string, kind: EdgeKind): readonly string[] {
  const f = graph.get(file);
  if (!f) return [];
  if (kind === 'static') return f.static;
  const types = new Set(f.typeOnly);
  return f.static.filter((x) => !types.has(x));
}

/**
 * The files loaded with `entries` by following imports of `kind` (dynamic `import()` never
 * followed), each with the chain that reached it (for messages). Pure.
 */
export function staticClosure(graph: ImportGraph, entries: readonly string[], kind: EdgeKind = 'static'): Map<string, readonly string[]> {
  const seen = new Map<string, readonly string[]>(entries.map((e) => [e, [e]]));
  const queue = [...entries];
  for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
    const via = seen.get(file) ?? [file];
    for (const next of edges(graph, file, kind)) {
      if (seen.has(next)) continue;
      seen.set(next, [...via, next]);
      queue.push(next);
    }
  }
  return seen;
}

/**
 * The import circles among the files `within` selects: each strongly connected set of two or
 * more files (or one importing itself), sorted, following imports of `kind` (Tarjan). Pure.
 */
export function findCircles(graph: ImportGraph, within: (file: string) => boolean = () => true, kind: EdgeKind = 'static'): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const circles: string[][] = [];
  let counter = 0;
  const next = (f: string): string[] => edges(graph, f, kind).filter((x) => within(x) && graph.has(x));
  const connect = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter);
    counter += 1;
    stack.push(v);
    onStack.add(v);
    for (const w of next(v)) {
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v) ?? 0, low.get(w) ?? 0));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v) ?? 0, index.get(w) ?? 0));
      }
    }
    if (low.get(v) !== index.get(v)) return;
    const set: string[] = [];
    for (let w = stack.pop(); w !== undefined; w = stack.pop()) {
      onStack.delete(w);
      set.push(w);
      if (w === v) break;
    }
    if (set.length > 1 || next(v).includes(v)) circles.push(set.sort());
  };
  for (const f of [...graph.keys()].filter(within).sort()) if (!index.has(f)) connect(f);
  return circles.sort((a, b) => (a[0] ?? '').localeCompare(b[0] ?? ''));
}
