/**
 * The layering rules of the import graph (issue 32 item 3), read from the sources of lib,
 * server, workers, cli and bin: lib/config reaches drivers only through the config registry;
 * lib/images needs neither drivers nor the store; `nodepool config-validate` and `nodepool
 * --help` load config code only (no driver runtime, no store backend); no import circle among
 * lib/config, lib/images and cli. Static imports count `import type` and re-exports too.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { findCircles, importGraph, importsOfText, staticClosure, type ImportGraph } from '../support/import-graph.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const graph = importGraph(ROOT, ['lib', 'server', 'workers', 'cli', 'bin']);

const under = (dir: string) => (f: string): boolean => f.startsWith(`${dir}/`);
const DRIVER_CONFIG_MODULE = /^lib\/drivers\/[^/]+\/config\.ts$/;
const REGISTRY = 'lib/drivers/config-registry.ts';
/** Modules that hold driver runtime: providers, handlers, cloud clients, host access, the runtime registry. */
const DRIVER_RUNTIME_NAME = /\/(index|provider|handler|registry|driver|driver-hosts|host-access|image-service|access|nova|glance|glance-image-service|keystone|neutron|http-client|vm-host|image-store|qemu-img)\.ts$/;
/** Store backends: what opens and talks to SQLite or ZooKeeper. */
const isStoreBackend = (f: string): boolean => /^lib\/store\/(sqlite|zookeeper)\//.test(f) || f === 'lib/store/open-store.ts';

/** The config side of lib/drivers: the config registry and what it loads within lib/drivers. */
const configSide = new Set([...staticClosure(graph, [REGISTRY]).keys()].filter(under('lib/drivers')));

/** The imports of `from` files into files `to` selects, as `a -> b` lines. */
function importsInto(g: ImportGraph, from: (f: string) => boolean, to: (f: string) => boolean): string[] {
  return [...g].filter(([f]) => from(f)).flatMap(([f, i]) => i.static.filter(to).map((t) => `${f} -> ${t}`));
}

/** The files of `entry`'s static closure that are driver runtime or store backend, each with the chain that loads it. */
function runtimeLoadedBy(entry: string): string[] {
  assert.ok(graph.has(entry), `${entry} is read`);
  return [...staticClosure(graph, [entry])]
    .filter(([f]) => (under('lib/drivers')(f) && !configSide.has(f)) || isStoreBackend(f))
    .map(([, via]) => via.join(' > '));
}

describe('import rules', () => {
  it('reads static, type-only and dynamic imports apart', () => {
    const found = importsOfText([
      "import { a } from './a.js';",
      "import type { B } from './b.js';",
      "import { type C } from './c.js';",
      "export { d } from './d.js';",
      "export type { E } from './e.js';",
      "import yaml from 'js-yaml';",
      "type F = typeof import('./f.js');",
      "const g = await import('./g.js');",
    ].join('\n'));
    assert.deepEqual(found.static, ['./a.js', './b.js', './c.js', './d.js', './e.js', 'js-yaml', './f.js']);
    assert.deepEqual(found.typeOnly, ['./b.js', './c.js', './e.js', './f.js']);
    assert.deepEqual(found.dynamic, ['./g.js']);
  });

  it('finds circles, a file importing itself included, and nothing in a tree', () => {
    const g: ImportGraph = new Map(Object.entries({
      a: { static: ['b'], typeOnly: [], dynamic: [] },
      b: { static: ['c'], typeOnly: [], dynamic: [] },
      c: { static: ['a', 'd'], typeOnly: [], dynamic: [] },
      d: { static: ['d'], typeOnly: [], dynamic: [] },
      e: { static: ['a'], typeOnly: [], dynamic: ['e'] },
      t: { static: ['u'], typeOnly: ['u'], dynamic: [] },
      u: { static: ['t'], typeOnly: [], dynamic: [] },
    }));
    assert.deepEqual(findCircles(g), [['a', 'b', 'c'], ['d'], ['t', 'u']]);
    assert.deepEqual(findCircles(g, (f) => f !== 'b'), [['d'], ['t', 'u']]);
    assert.deepEqual(findCircles(g, () => true, 'runtime'), [['a', 'b', 'c'], ['d']]);
    assert.deepEqual([...staticClosure(g, ['e']).keys()].sort(), ['a', 'b', 'c', 'd', 'e']);
  });

  it('reads the whole tree', () => {
    assert.ok(graph.size > 300, `${graph.size} files`);
    assert.ok(graph.has(REGISTRY) && graph.has('bin/nodepool.ts') && graph.has('cli/commands/config-validate.ts'));
  });

  it('lib/config imports from lib/drivers only the config registry and driver config modules', () => {
    const bad = importsInto(graph, under('lib/config'), (t) => under('lib/drivers')(t) && t !== REGISTRY && !DRIVER_CONFIG_MODULE.test(t));
    assert.deepEqual(bad, []);
  });

  it('the config registry loads no driver runtime', () => {
    assert.ok(configSide.has('lib/drivers/openstack/config.ts'));
    assert.deepEqual([...configSide].filter((f) => DRIVER_RUNTIME_NAME.test(f)), []);
    assert.deepEqual([...staticClosure(graph, [REGISTRY]).keys()].filter(isStoreBackend), []);
  });

  it('lib/images imports nothing from lib/drivers or lib/store', () => {
    assert.deepEqual(importsInto(graph, under('lib/images'), (t) => under('lib/drivers')(t) || under('lib/store')(t)), []);
  });

  it('nodepool config-validate loads no driver runtime and no store backend', () => {
    assert.deepEqual(runtimeLoadedBy('cli/commands/config-validate.ts'), []);
  });

  it('nodepool --help (and <command> --help) loads no driver runtime and no store backend', () => {
    // yargs answers --help before any command runs; commands are import()ed by their handlers.
    assert.deepEqual(runtimeLoadedBy('bin/nodepool.ts'), []);
  });

  it('has no import circle among lib/config, lib/images and cli', (t) => {
    const core = (f: string): boolean => under('lib/config')(f) || under('lib/images')(f) || under('cli')(f);
    assert.deepEqual(findCircles(graph, core), []);
    // Not yet a rule for the whole tree: the circles left are named for whoever breaks them.
    for (const circle of findCircles(graph)) t.diagnostic(`circle: ${circle.join(' <-> ')}`);
  });
});
