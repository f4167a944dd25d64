/**
 * Shell completion of `nodepool` (the script comes from `nodepool completion`, yargs' bash or
 * zsh template). yargs completes commands and options; this module completes the arguments
 * that name things: diskimages, providers and labels from nodepool.yaml, build and node ids
 * from the store. It never fails and never writes: without a readable config or an existing
 * store it offers nothing (the shell then falls back to file names), and it gives the store a
 * short time to answer. The config loader and the store are loaded only when a name is asked for.
 */
import { existsSync } from 'node:fs';
import type { Config } from '../../lib/config/schema.js';
import type { Store } from '../../lib/store/store.js';

/** What a word on the command line names; a `file` is left to the shell (no candidates, so it completes file names). */
export type CompletionKind = 'diskimage' | 'provider' | 'label' | 'build' | 'node' | 'file';

/** Which arguments of which commands name things (a command missing here gets yargs' completions only). */
export interface CompletionSpec {
  /** Per command, the kind of each positional; the last one repeats for a variadic positional. */
  positionals: Readonly<Record<string, readonly CompletionKind[]>>;
  /** Options whose value names something (long names, no dashes). */
  options: Readonly<Record<string, CompletionKind>>;
  /** Every option that takes a value (long names and aliases, no dashes), so its value is not taken for a positional. */
  valueOptions: ReadonlySet<string>;
}

/** The spec of `nodepool`'s commands (checked against `nodepool <command> --help` by the tests). */
export const NODEPOOL_COMPLETION: CompletionSpec = {
  positionals: {
    'image-build': ['diskimage'],
    'image-pause': ['diskimage'],
    'image-unpause': ['diskimage'],
    'image-pin': ['diskimage', 'build'],
    'image-unpin': ['diskimage'],
    'image-revoke': ['build'],
    'image-unrevoke': ['build'],
    'image-promote': ['build'],
    'image-delete': ['build'],
    'dib-image-delete': ['build'],
    info: ['provider'],
    erase: ['provider'],
    'alien-image-list': ['provider'],
    delete: ['node'],
    hold: ['node'],
    release: ['node'],
    request: ['label'],
    'export-image-data': ['file'],
    'import-image-data': ['file'],
  },
  options: { provider: 'provider', image: 'diskimage', 'build-id': 'build', config: 'file', c: 'file' },
  valueOptions: new Set(['config', 'c', 'secure', 's', 'provider', 'image', 'build-id', 'upload-id', 'reason', 'timeout', 'expire', 'priority', 'nodes', 'user', 'role', 'expires', 'authenticator']),
};

/** What the word under the cursor should be: a name of `kind`, written after `prefix` (`--provider=`). */
export interface CompletionTarget {
  kind: CompletionKind;
  /** The part of the word typed so far, after `prefix`. */
  partial: string;
  /** Written before each candidate (the `--option=` of a `--option=value` word), else ''. */
  prefix: string;
}

/**
 * What the last of `words` (the arguments after `nodepool`, the word being completed last)
 * names, or undefined when it is a command, an option or anything else yargs completes.
 * bash splits `--provider=x` into `--provider`, `=`, `x`; both spellings are understood.
 */
export function completionTarget(words: readonly string[], spec: CompletionSpec = NODEPOOL_COMPLETION): CompletionTarget | undefined {
  const joined = joinEquals(words);
  const current = joined[joined.length - 1] ?? '';
  const before = joined.slice(0, -1);
  const eq = /^--([^=]+)=(.*)$/.exec(current);
  if (eq) {
    const kind = spec.options[eq[1] as string];
    // bash completes only the part after its word break (`=`); zsh completes the whole word.
    const split = words[words.length - 1] !== current;
    return kind ? { kind, partial: eq[2] as string, prefix: split ? '' : `--${eq[1] as string}=` } : undefined;
  }
  const previous = before[before.length - 1];
  if (previous !== undefined && /^-/.test(previous) && !previous.includes('=')) {
    const name = previous.replace(/^-+/, '');
    if (spec.valueOptions.has(name)) {
      const kind = spec.options[name];
      return kind ? { kind, partial: current, prefix: '' } : undefined;
    }
  }
  if (current.startsWith('-')) return undefined;
  // The words that are not options or option values: the command, then its positionals.
  const plain: string[] = [];
  for (let i = 0; i < before.length; i++) {
    const w = before[i] as string;
    if (w === '--') break;
    if (w.startsWith('-')) {
      if (!w.includes('=') && spec.valueOptions.has(w.replace(/^-+/, ''))) i += 1;
      continue;
    }
    plain.push(w);
  }
  const [command, ...positionals] = plain;
  const kinds = command === undefined ? undefined : spec.positionals[command];
  if (!kinds || kinds.length === 0) return undefined;
  const kind = kinds[Math.min(positionals.length, kinds.length - 1)] as CompletionKind;
  if (positionals.length >= kinds.length && !isVariadic(command as string)) return undefined;
  return { kind, partial: current, prefix: '' };
}

/** Commands whose last positional takes any number of words. */
function isVariadic(command: string): boolean {
  return command === 'request';
}

/** bash's `--opt`, `=`, `value` (COMP_WORDBREAKS) back into `--opt=value`. */
function joinEquals(words: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < words.length; i++) {
    const w = words[i] as string;
    const last = out[out.length - 1];
    if (w === '=' && last?.startsWith('--') && !last.includes('=')) {
      out[out.length - 1] = `${last}=${words[i + 1] ?? ''}`;
      i += 1;
    } else {
      out.push(w);
    }
  }
  return out;
}

/** Options of {@link completionValues}. */
export interface CompletionValuesOptions {
  configFile: string;
  kind: CompletionKind;
  /** How long the store may take to answer (default 1000 ms); after that, nothing is offered. */
  storeTimeoutMs?: number;
}

/**
 * The names of `kind`, sorted: from the config (diskimage, provider, label) or the store
 * (build, node). Empty when the config cannot be read or the store does not exist or answer.
 */
export async function completionValues(opts: CompletionValuesOptions): Promise<string[]> {
  if (opts.kind === 'file') return [];
  let config: Config;
  try {
    const { loadConfig } = await import('../../lib/config/load.js');
    config = loadConfig(opts.configFile);
  } catch {
    return [];
  }
  const names = (() => {
    switch (opts.kind) {
      case 'diskimage': return config.diskimages.map((d) => d.name);
      case 'provider': return config.providers.map((p) => p.name);
      case 'label': return config.labels.map((l) => l.name);
      case 'build': return fromStore(config, opts.storeTimeoutMs ?? 1000, async (s) => (await s.listBuilds()).map((b) => b.id));
      case 'node': return fromStore(config, opts.storeTimeoutMs ?? 1000, async (s) => (await s.listNodes()).map((n) => n.id));
    }
  })();
  return [...new Set(await names)].sort();
}

/** Reads from the store when one exists (a SQLite file is never created here), within `timeoutMs`. */
async function fromStore(config: Config, timeoutMs: number, read: (store: Store) => Promise<string[]>): Promise<string[]> {
  const { openStore, storePath } = await import('../../lib/store/open-store.js');
  if (config.zookeeperServers.length === 0 && !existsSync(storePath(config))) return [];
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<string[]>((resolve) => { timer = setTimeout(() => resolve([]), timeoutMs); });
  const reading = (async () => {
    const store = await openStore(config);
    try {
      return await read(store);
    } finally {
      await store.close();
    }
  })().catch(() => []);
  try {
    return await Promise.race([reading, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** The config file named by `-c FILE`, `--config FILE` or `--config=FILE` in `words` (the last one wins), else `fallback`. */
export function configFromWords(words: readonly string[], fallback: string): string {
  let file = fallback;
  const joined = joinEquals(words).slice(0, -1);
  for (let i = 0; i < joined.length; i++) {
    const w = joined[i] as string;
    if ((w === '-c' || w === '--config') && joined[i + 1] !== undefined) file = joined[i + 1] as string;
    else if (w.startsWith('--config=')) file = w.slice('--config='.length);
  }
  return file;
}

/**
 * The candidates for the last of `words` (the shell's words after the program name), or
 * undefined when yargs' own completion (commands, options) applies. `defaultConfig` is used
 * unless the words name a config file.
 */
export async function completeWords(words: readonly string[], defaultConfig: string, spec: CompletionSpec = NODEPOOL_COMPLETION): Promise<string[] | undefined> {
  const target = completionTarget(words, spec);
  if (!target) return undefined;
  const values = await completionValues({ configFile: configFromWords(words, defaultConfig), kind: target.kind });
  return values.filter((v) => v.startsWith(target.partial)).map((v) => `${target.prefix}${v}`);
}
