/**
 * The one config loader for every process: read YAML, validate against the schema and each
 * provider's driver schema, check cross-references, apply defaults, freeze.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import yaml from 'js-yaml';
import { ConfigError } from '../errors.js';
import { driverConfigOf, imageTargets, providerPools } from '../drivers/config-registry.js';
import { deepFreeze, Problems } from './schema-kit.js';
import { nodepoolSchema, type Config } from './schema.js';

/** Parses config text (pure). Thrown: {@link ConfigError} listing every problem with its key path. */
export function parseConfig(text: string, file: string): Config {
  let doc: unknown;
  try {
    doc = yaml.load(text, { filename: file });
  } catch (err) {
    const e = err as { reason?: string; mark?: { line: number; column: number } };
    const where = e.mark ? `line ${e.mark.line + 1}, column ${e.mark.column + 1}` : '';
    throw new ConfigError(file, [{ path: where, message: `invalid YAML: ${e.reason ?? (err as Error).message}` }], { cause: err });
  }
  if (doc === undefined || doc === null) {
    // A truncated or half-written file reads as an empty document; taken as "no providers, no
    // diskimages" a live reload would delete every image, so it is never a valid config.
    throw new ConfigError(file, [{ path: '', message: 'the document is empty (a truncated or half-written file?); a config needs at least one key' }]);
  }
  const problems = new Problems();
  const parsed = nodepoolSchema.parse(doc, '', problems);
  if (parsed) checkReferences(parsed, problems);
  if (!parsed || problems.list.length) throw new ConfigError(file, problems.list);
  const base = path.dirname(path.resolve(file));
  const abs = (p: string): string => path.resolve(base, p);
  const imagesDir = abs(parsed.imagesDir);
  return deepFreeze({
    ...parsed,
    file,
    stateDir: abs(parsed.stateDir),
    imagesDir,
    buildLogDir: abs(parsed.buildLogDir),
    elementsDir: parsed.elementsDir === undefined ? undefined : abs(parsed.elementsDir),
    buildTmpDir: parsed.buildTmpDir === undefined ? path.join(imagesDir, '.tmp') : abs(parsed.buildTmpDir),
    cloudsFile: parsed.cloudsFile === undefined ? undefined : abs(parsed.cloudsFile),
  });
}

/** Reads and parses a config file. Thrown: {@link ConfigError}, also when the file cannot be read. */
export function loadConfig(file: string): Config {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(file, [{ path: '', message: `cannot read: ${(err as Error).message}` }], { cause: err });
  }
  return parseConfig(text, file);
}

type Parsed = NonNullable<ReturnType<typeof nodepoolSchema.parse>>;

/** Cross-references: provider diskimages and pool labels must exist; drivers check the rest. */
function checkReferences(c: Parsed, p: Problems): void {
  const diskimages = new Set(c.diskimages.map((d) => d.name));
  const labels = new Set(c.labels.map((l) => l.name));
  c.providers.forEach((prov, i) => {
    imageTargets(prov).forEach((t, j) => {
      if (!diskimages.has(t.diskimage)) p.add(`providers[${i}].diskimages[${j}].name`, `diskimage ${JSON.stringify(t.diskimage)} is not defined in diskimages`);
    });
    providerPools(prov).forEach((pool, k) => pool.labels.forEach((l) => {
      if (!labels.has(l)) p.add(`providers[${i}].pools[${k}]`, `label ${JSON.stringify(l)} (pool ${pool.name}) is not defined in labels`);
    }));
    driverConfigOf(prov).checkReferences?.(prov, { labels, diskimages }, `providers[${i}]`, p);
  });
}
