/**
 * The import rules of the rollout (issue 32 §2): lib/store imports nothing from lib/rollout (the
 * conditional-write snapshot is the store's own), so the two form no circle; the rollout's pure
 * decisions (the policies, the phase, the boot choice among uploads, the schema) load no store
 * module but its record types and nothing from lib/drivers.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { findCircles, importGraph, staticClosure } from '../../support/import-graph.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const graph = importGraph(ROOT, ['lib']);
const under = (dir: string) => (f: string): boolean => f.startsWith(`${dir}/`);

/** The rollout's pure decision modules. */
const DECISIONS = ['lib/rollout/policies.ts', 'lib/rollout/upload-phase.ts', 'lib/rollout/boot-upload.ts', 'lib/rollout/rollout-schema.ts'];

describe('rollout import rules', () => {
  it('lib/store imports nothing from lib/rollout, and the two form no circle', () => {
    const fromStore = [...graph].filter(([f]) => under('lib/store')(f)).flatMap(([f, i]) => i.static.filter(under('lib/rollout')).map((t) => `${f} -> ${t}`));
    assert.deepEqual(fromStore, []);
    assert.deepEqual(findCircles(graph, (f) => under('lib/store')(f) || under('lib/rollout')(f)), []);
  });

  it('the rollout decisions load no store module but its record types, and nothing from lib/drivers', () => {
    for (const d of DECISIONS) assert.ok(graph.has(d), `${d} is read`);
    const loaded = [...staticClosure(graph, DECISIONS)]
      .filter(([f]) => (under('lib/store')(f) && !/^lib\/store\/(models|[a-z-]*-records)\.ts$/.test(f)) || under('lib/drivers')(f))
      .map(([, via]) => via.join(' > '));
    assert.deepEqual(loaded, []);
  });
});
