/**
 * Nodepool's `%(NODEPOOL_FOO)` in nodepool.yaml and the secure file: before the YAML is
 * parsed, each `%(NAME)` whose NAME starts with `NODEPOOL_` and is set in the environment is
 * replaced by its value (nodepool/config.py `substitute_env_vars`, a plain text replace). Pure:
 * the environment is passed in (bin/ hands over process.env).
 *
 * Nodepool leaves `%(NODEPOOL_FOO)` as it is when the variable is not set, so a password
 * becomes that literal text and fails later, far from the cause. Here a placeholder left in a
 * value after substitution is a config error naming the variable and the key path (one in a
 * YAML comment is ignored, as the YAML parser drops comments).
 */
import { isSecretKey } from '../redact.js';
import type { Problems } from './schema-kit.js';

/** The environment variables a config may use (only `NODEPOOL_*` ones are read). */
export type ConfigEnv = Readonly<Record<string, string | undefined>>;

const PLACEHOLDER = /%\((NODEPOOL_\w+)\)/g;

/** What {@link substituteEnv} did. */
export interface Substituted {
  text: string;
  /** Values substituted for variables with a secret-like name (`NODEPOOL_*PASSWORD*`, `*TOKEN*`, …). */
  secretValues: string[];
}

/** Replaces `%(NODEPOOL_X)` by `env.NODEPOOL_X` where it is set; others are left for {@link unsetPlaceholders}. */
export function substituteEnv(text: string, env: ConfigEnv): Substituted {
  const secretValues = new Set<string>();
  const out = text.replace(PLACEHOLDER, (whole, name: string) => {
    const value = env[name];
    if (value === undefined) return whole;
    if (isSecretKey(name.slice('NODEPOOL_'.length))) secretValues.add(value);
    return value;
  });
  return { text: out, secretValues: [...secretValues] };
}

/**
 * Records a problem for every placeholder left in a parsed document's strings (keys or values).
 * A node YAML aliases in several places is walked once (so a "billion laughs" document costs
 * its size, not its expansion); a placeholder in it is reported at its first path.
 */
export function unsetPlaceholders(doc: unknown, path: string, p: Problems, seen = new WeakSet<object>()): void {
  const check = (s: string, at: string): void => {
    for (const m of s.matchAll(PLACEHOLDER)) {
      p.add(at, `%(${m[1]}) names an environment variable that is not set (Nodepool would leave the text as it is; set ${m[1]} for this process)`);
    }
  };
  if (typeof doc === 'string') {
    check(doc, path);
    return;
  }
  if (doc === null || typeof doc !== 'object' || seen.has(doc)) return;
  seen.add(doc);
  if (Array.isArray(doc)) doc.forEach((v, i) => unsetPlaceholders(v, `${path}[${i}]`, p, seen));
  else {
    for (const [k, v] of Object.entries(doc)) {
      const at = path ? `${path}.${k}` : k;
      check(k, at);
      unsetPlaceholders(v, at, p, seen);
    }
  }
}
