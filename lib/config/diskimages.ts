/**
 * `diskimages:` as Nodepool 11 reads it: each entry is checked on its own (key paths of the
 * file), then every non-abstract image is built from its chain of `parent`s exactly as
 * Nodepool's `DiskImage.setFromConfig` does (nodepool/config.py 203-218, 319-372), and only
 * then are the schema's defaults applied:
 * - the chain is applied root ancestor first, then each ancestor down to the direct parent,
 *   then the image's own entry;
 * - `elements` are appended, `env-vars` dict-updated (child keys win);
 * - `delete-after-upload` is set whenever present, even `false`;
 * - Nodepool's other keys override only when truthy (so `pause: false` under a paused parent,
 *   `rebuild-age: 0` or `release: 0` change nothing); this program's own keys (`builder`,
 *   `command`, `qemu-img-options`, `rollout`, `snapshot`) override when present (a `rollout:`
 *   or `snapshot:` as a whole);
 * - `metadata` is not inherited (each application replaces it, so a child without it has {});
 * - `abstract` entries are parents only: never in the result, never built; a non-abstract
 *   parent is built as well as its children.
 */
import { IMAGE_FORMATS } from '../images/image-file.js';
import { diskimageName } from './names.js';
import { rolloutSchema } from '../rollout/rollout-schema.js';
import { snapshotSchema } from './snapshot-config.js';
import {
  bool, checked, list, object, oneOf, optional, record, required, scalarString, seconds, string, withoutDefaults,
  type Schema,
} from './schema-kit.js';

/**
 * How a diskimage is built: diskimage-builder, a command of the operator's
 * (docs/writing-a-builder.md), or setup on a running instance snapshotted (docs/snapshot-builds.md).
 */
export const BUILDER_KINDS = ['dib', 'command', 'snapshot'] as const;

const formatList = () => list(oneOf(IMAGE_FORMATS), { uniqueBy: (f) => f, what: 'format' });

/**
 * The keys of a diskimage with their defaults (which apply after inheritance). Strings that
 * override only when truthy may be empty, which, as in Nodepool, changes nothing.
 */
const diskimageFields = {
  name: required(diskimageName()),
  /** The entry this one inherits from (kept in the result for display). */
  parent: optional(string()),
  elements: optional(list(string()), []),
  release: optional(scalarString()),
  'env-vars': optional(record(scalarString()), {}),
  formats: optional(formatList()),
  /** With `delete-after-upload`: formats kept on the builder after every provider has the upload. */
  'keep-formats': optional(formatList(), []),
  /** Free builder disk once every provider using a format has a ready upload of the build. */
  'delete-after-upload': optional(bool(), false),
  'rebuild-age': optional(seconds({ min: 1 }), 86400),
  'build-timeout': optional(seconds({ min: 1 }), 28800),
  pause: optional(bool(), false),
  'dib-cmd': optional(string({ allowEmpty: true }), 'disk-image-create'),
  'qemu-img-options': optional(string()),
  /** `node.username` of nodes booted from this image. */
  username: optional(string({ allowEmpty: true }), 'zuul'),
  /** `node.python_path` (Zuul's ansible_python_interpreter); `auto`: Ansible discovers it. */
  'python-path': optional(string({ allowEmpty: true }), 'auto'),
  /** `node.shell_type` (Zuul's ansible_shell_type) when set. */
  'shell-type': optional(string({ allowEmpty: true })),
  /** Default image properties of each upload (a provider image's `meta` overrides them). Not inherited. */
  metadata: optional(record(scalarString()), {}),
  builder: optional(oneOf(BUILDER_KINDS), 'dib'),
  /** argv of a `builder: command` build (no shell); argv[0] is looked up in PATH. */
  command: optional(list(string(), { minItems: 1, what: 'argument' })),
  /** Canary rollout of each new upload (issue 24); a provider diskimage's own `rollout:` overrides it. */
  rollout: optional(rolloutSchema),
  /** Where and how a `builder: snapshot` build runs (snapshot-config.ts). */
  snapshot: optional(snapshotSchema),
};

/** One entry as written: every key checked, no defaults, plus `abstract`. */
const entrySchema = object({ ...withoutDefaults(diskimageFields), abstract: optional(bool(), false) });

/** A built (merged, defaulted) diskimage; the rules between keys are checked on it. */
const diskimageSchema = checked(object(diskimageFields), (d, path, p) => {
  if (d.builder === 'command' && d.command === undefined) p.add(`${path}.command`, 'expected the argv to run (builder: command), got nothing');
  if (d.builder === 'dib' && d.command !== undefined) p.add(`${path}.command`, 'only used with builder: command (this diskimage is built by DIB)');
  if (d.builder !== 'dib' && d.elements.length) p.add(`${path}.elements`, `only used with builder: dib (this diskimage is built by ${d.builder === 'command' ? 'its command' : 'a snapshot'})`);
  if (d.builder === 'snapshot' && d.command !== undefined) p.add(`${path}.command`, 'only used with builder: command (this diskimage is built by a snapshot)');
  if (d.builder === 'snapshot' && d.snapshot === undefined) p.add(`${path}.snapshot`, 'expected where and how to build (builder: snapshot), got nothing');
  if (d.builder !== 'snapshot' && d.snapshot !== undefined) p.add(`${path}.snapshot`, `only used with builder: snapshot (this diskimage is built by ${d.builder === 'dib' ? 'DIB' : 'its command'})`);
});

type Parsed<S> = S extends Schema<infer T> ? T : never;
/** One diskimage of the config, after inheritance and defaults. */
export type DiskimageConfig = Parsed<typeof diskimageSchema>;

/** Nodepool's keys that a later entry in the chain sets only when its value is truthy. */
const TRUTHY_KEYS = ['build-timeout', 'dib-cmd', 'formats', 'keep-formats', 'pause', 'python-path', 'shell-type', 'rebuild-age', 'release', 'username'];
/** Keys set whenever present: Nodepool's `delete-after-upload` (`is not None`), and this program's own. */
const PRESENT_KEYS = ['delete-after-upload', 'builder', 'command', 'qemu-img-options', 'rollout', 'snapshot'];

/** Python's truthiness, which Nodepool's `if diskimage.get(key)` applies. */
function truthy(v: unknown): boolean {
  if (Array.isArray(v)) return v.length > 0;
  if (v !== null && typeof v === 'object') return Object.keys(v).length > 0;
  return Boolean(v);
}

type Raw = Record<string, unknown>;

/** Applies one entry of the chain onto the image being built (Nodepool's setFromConfig). */
function applyEntry(into: Raw, entry: Raw): void {
  if (Array.isArray(entry.elements)) into.elements = [...(into.elements as unknown[]), ...entry.elements];
  if (entry['env-vars'] && typeof entry['env-vars'] === 'object') into['env-vars'] = { ...(into['env-vars'] as Raw), ...(entry['env-vars'] as Raw) };
  for (const k of TRUTHY_KEYS) if (truthy(entry[k])) into[k] = entry[k];
  for (const k of PRESENT_KEYS) if (entry[k] !== undefined) into[k] = entry[k];
  if (entry.metadata === undefined) delete into.metadata;
  else into.metadata = entry.metadata;
}

/**
 * The chain of entry indexes from the root ancestor down to `i`, or undefined after recording
 * an unknown parent or a cycle at the offending `parent` key.
 */
function chainOf(i: number, entries: readonly Raw[], byName: ReadonlyMap<string, number>, path: string, report: (path: string, message: string) => void): number[] | undefined {
  const chain = [i];
  let at = i;
  for (;;) {
    const parent = entries[at]?.parent;
    if (typeof parent !== 'string') return chain.reverse();
    const next = byName.get(parent);
    if (next === undefined) {
      report(`${path}[${at}].parent`, `unknown diskimage ${JSON.stringify(parent)}: expected the name of another entry of diskimages`);
      return undefined;
    }
    if (chain.includes(next)) {
      // Reported once, at the cycle's first entry in the file, whichever image led to it.
      const cycle = chain.slice(chain.indexOf(next));
      const first = cycle.indexOf(Math.min(...cycle));
      const names = [...cycle.slice(first), ...cycle.slice(0, first + 1)].map((j) => entries[j]?.name).join(' → ');
      report(`${path}[${cycle[first]}].parent`, `parent cycle: ${names}`);
      return undefined;
    }
    chain.push(next);
    at = next;
  }
}

/** The `diskimages` list: entries checked, duplicates refused, then inheritance and defaults. */
export function diskimageList(): Schema<DiskimageConfig[]> {
  const entries = list(entrySchema, { uniqueBy: (d) => d.name as string, what: 'diskimage' });
  return {
    expected: entries.expected,
    parse(v, path, p) {
      if (entries.parse(v, path, p) === undefined) return undefined;
      const raw = v as Raw[];
      const byName = new Map(raw.map((d, i) => [d.name as string, i]));
      const out: DiskimageConfig[] = [];
      let ok = true;
      // A broken parent is reported once, not again for each of its descendants.
      const reported = new Set<string>();
      const report = (at: string, message: string): void => {
        if (!reported.has(at)) p.add(at, message);
        reported.add(at);
      };
      raw.forEach((own, i) => {
        const chain = chainOf(i, raw, byName, path, report);
        if (!chain) { ok = false; return; }
        if (own.abstract === true) return;
        const merged: Raw = { elements: [], 'env-vars': {} };
        for (const j of chain) applyEntry(merged, raw[j] as Raw);
        merged.name = own.name;
        if (own.parent !== undefined) merged.parent = own.parent;
        const d = diskimageSchema.parse(merged, `${path}[${i}]`, p);
        if (d === undefined) ok = false;
        else out.push(d);
      });
      return ok ? out : undefined;
    },
  };
}
