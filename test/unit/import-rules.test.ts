/**
 * The layering rules of the import graph (issue 32 items 3 and 4), read from the sources of
 * lib, server, workers, cli and bin: lib/config reaches drivers only through the config
 * registry; lib/images needs neither drivers nor the store; `nodepool config-validate` and
 * `nodepool --help` load config code only (no driver runtime, no store backend); lib/drivers
 * keeps the contract, the core policies and each driver's folder apart; no import circle
 * anywhere. Static imports count `import type` and re-exports too.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { findCircles, importGraph, importsOfText, staticClosure, type ImportGraph } from '../support/import-graph.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const graph = importGraph(ROOT, ['lib', 'server', 'workers', 'cli', 'bin']);

const under = (dir: string) => (f: string): boolean => f.startsWith(`${dir}/`);
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

  it('lib/config imports from lib/drivers only the config registry', () => {
    const bad = importsInto(graph, under('lib/config'), (t) => under('lib/drivers')(t) && t !== REGISTRY);
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

  it('has no import circle anywhere in lib, server, workers, cli and bin', () => {
    assert.deepEqual(findCircles(graph).map((c) => c.join(' <-> ')), []);
  });

  describe('lib/drivers: the contract, the core policies and one folder per driver, apart', () => {
    const REGISTRIES = new Set([REGISTRY, 'lib/drivers/registry.ts']);
    /** The driver whose folder holds `f` (contract/ and core/ are not drivers). */
    const driverOf = (f: string): string | undefined => /^lib\/drivers\/(?!contract\/|core\/)([^/]+)\//.exec(f)?.[1];

    it('holds nothing at its top but the two registries', () => {
      const top = [...graph.keys()].filter((f) => /^lib\/drivers\/[^/]+\.ts$/.test(f));
      assert.deepEqual(top.filter((f) => !REGISTRIES.has(f)), []);
      assert.ok(graph.has('lib/drivers/contract/driver.ts') && graph.has('lib/drivers/core/launching-handler.ts'));
    });

    it('a driver folder imports no other driver folder and neither registry', () => {
      const bad = [...graph].flatMap(([f, i]) => {
        const own = driverOf(f);
        if (own === undefined) return [];
        return i.static.filter((t) => REGISTRIES.has(t) || (driverOf(t) ?? own) !== own).map((t) => `${f} -> ${t}`);
      });
      assert.deepEqual(bad, []);
    });

    it('outside its folder, only the registries import a driver', () => {
      const bad = [...graph].flatMap(([f, i]) => (REGISTRIES.has(f) ? [] : i.static
        .filter((t) => driverOf(t) !== undefined && driverOf(t) !== driverOf(f)).map((t) => `${f} -> ${t}`)));
      assert.deepEqual(bad, []);
    });

    it('the contract imports nothing else of lib/drivers', () => {
      assert.deepEqual(importsInto(graph, under('lib/drivers/contract'), (t) => under('lib/drivers')(t) && !under('lib/drivers/contract')(t)), []);
    });

    it('the core policies import no driver folder', () => {
      assert.deepEqual(importsInto(graph, under('lib/drivers/core'), (t) => driverOf(t) !== undefined), []);
    });
  });
});
