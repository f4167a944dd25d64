/**
 * The secure file (`-s/--secure`, Nodepool's `loadSecureConfig`, nodepool/config.py 471-485):
 * `zookeeper-servers` (replacing the main file's list), `zookeeper-tls`, and `diskimages[]
 * {name, env-vars}`, whose env-vars are dict-updated into that (non-abstract) diskimage's after
 * inheritance. Other keys are ignored with a warning, as Nodepool reads only these.
 */
import { list, object, optional, record, required, scalarString, string, type Problems } from './schema-kit.js';
import { zookeeperServers, zookeeperTls } from './schema.js';

/** The keys Nodepool reads from a secure file. */
const SECURE_KEYS = ['zookeeper-servers', 'zookeeper-tls', 'diskimages'];

const secureSchema = object({
  'zookeeper-servers': optional(zookeeperServers),
  'zookeeper-tls': optional(zookeeperTls),
  diskimages: optional(list(object({
    name: required(string()),
    'env-vars': optional(record(scalarString()), {}),
  }), { uniqueBy: (d) => d.name, what: 'diskimage' }), []),
}, { allowUnknown: true });

/** A checked secure document: the raw values to put in place of the main file's, and the env-vars. */
export interface SecureParts {
  /** Raw (checked) values that replace the main document's keys before it is parsed. */
  replace: Record<string, unknown>;
  diskimages: Array<{ name: string; envVars: Record<string, string> }>;
}

/** Checks a parsed secure document; undefined when it has problems (recorded in `p`). */
export function secureParts(doc: unknown, p: Problems): SecureParts | undefined {
  const parsed = secureSchema.parse(doc, '', p);
  if (parsed === undefined) return undefined;
  const src = doc as Record<string, unknown>;
  for (const key of Object.keys(src)) {
    if (!SECURE_KEYS.includes(key)) p.warn(key, `ignored: a secure file holds only ${SECURE_KEYS.join(', ')} (as in Nodepool)`);
  }
  const replace: Record<string, unknown> = {};
  for (const key of ['zookeeper-servers', 'zookeeper-tls']) if (src[key] !== undefined) replace[key] = src[key];
  return { replace, diskimages: parsed.diskimages };
}

/**
 * Problems of the secure diskimages against the main file's: each name must be a diskimage
 * that is built (not abstract). `built` are the main config's diskimage names; `abstract`
 * the names of its abstract entries; `mainFile` is named in the message.
 */
export function checkSecureDiskimages(parts: SecureParts, built: ReadonlySet<string>, abstract: ReadonlySet<string>, mainFile: string, p: Problems): void {
  parts.diskimages.forEach((d, i) => {
    if (built.has(d.name)) return;
    const why = abstract.has(d.name)
      ? `is abstract in ${mainFile} (a parent only, never built): set its env-vars on the diskimages that inherit from it`
      : `is not defined in the diskimages of ${mainFile}`;
    p.add(`diskimages[${i}].name`, `diskimage ${JSON.stringify(d.name)} ${why}`);
  });
}
