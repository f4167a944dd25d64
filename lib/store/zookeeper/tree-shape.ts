/**
 * Which parts of the tree the store's cache keeps, and how: under `images`, the build and
 * upload records, build requests and pauses (never the `lock` directories, whose contenders
 * come and go), and this project's intents where an older version kept them (until they are
 * moved); under `image-intents`, this project's pauses per provider, pins, revocations and
 * upload retry requests; the records under `nodes`, `requests` and `launchers` (not node locks).
 */
import { UUID_HEX_RE } from '../../images/image-file.js';
import { OWN_IMAGE_DIRS, OWN_IMAGE_RECORDS, SEQ_RE, type Layout } from './layout.js';
import type { Shape } from './tree-cache.js';

const IMAGE_CHILDREN = new Set(['builds', 'request-build', 'pause', ...OWN_IMAGE_RECORDS, ...OWN_IMAGE_DIRS]);
/** Directories of a diskimage with one record per child (a provider, a build id). */
const INTENT_DIRS = new Set(OWN_IMAGE_DIRS);
const OWN_CHILDREN = new Set([...OWN_IMAGE_RECORDS, ...OWN_IMAGE_DIRS]);
const isSeq = (name: string): boolean => SEQ_RE.test(name);
/** A build's segment: our 10-digit sequence, or a Nodepool 11 `uuid4().hex`. */
const isBuild = (name: string): boolean => SEQ_RE.test(name) || UUID_HEX_RE.test(name);

/** The cache's shape for one layout. */
export function treeShape(layout: Layout): (path: string) => Shape | undefined {
  const prefix = `${layout.root}/`;
  return (path) => {
    if (!path.startsWith(prefix)) return undefined;
    const s = path.slice(prefix.length).split('/');
    const [top] = s;
    if (top === 'nodes' || top === 'requests' || top === 'launchers') {
      if (s.length === 1) return { data: false, children: true };
      if (s.length === 2) return { data: true, children: false };
      return undefined;
    }
    if (top === 'image-intents') {
      // image-intents / <image> / pin | <dir> / <provider or build id>
      switch (s.length) {
        case 1: return { data: false, children: true };
        case 2: return { data: false, children: true, accept: (n) => OWN_CHILDREN.has(n) };
        case 3: return INTENT_DIRS.has(s[2] as string) ? { data: false, children: true } : { data: true, children: false };
        case 4: return INTENT_DIRS.has(s[2] as string) ? { data: true, children: false } : undefined;
        default: return undefined;
      }
    }
    if (top !== 'images') return undefined;
    // images / <image> / builds / <seq or uuid hex> / providers / <provider> / images / <upload>
    switch (s.length) {
      case 1: return { data: false, children: true };
      case 2: return { data: false, children: true, accept: (n) => IMAGE_CHILDREN.has(n) };
      case 3:
        if (s[2] === 'builds') return { data: false, children: true, accept: isBuild };
        if (INTENT_DIRS.has(s[2] as string)) return { data: false, children: true };
        return { data: true, children: false };
      case 4:
        if (INTENT_DIRS.has(s[2] as string)) return { data: true, children: false };
        return { data: true, children: true, accept: (n) => n === 'providers' };
      case 5: return { data: false, children: true };
      case 6: return { data: false, children: true, accept: (n) => n === 'images' };
      case 7: return { data: false, children: true, accept: isSeq };
      case 8: return { data: true, children: false };
      default: return undefined;
    }
  };
}
