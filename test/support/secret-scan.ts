/**
 * The fault suite's secret check: the passwords of a clouds.yaml the daemons were given,
 * searched for in files they wrote (their logs, build logs). A secret found counts as leaked.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import yaml from 'js-yaml';

/** One line per file of `files` that holds a password of `cloudsYamlPath` (passwords under 4 characters are not searched). */
export async function secretsIn(cloudsYamlPath: string, files: readonly string[]): Promise<string[]> {
  type Clouds = { clouds?: Record<string, { auth?: { password?: unknown } }> };
  const parsed = yaml.load(await readFile(cloudsYamlPath, 'utf8')) as Clouds;
  const secrets = Object.values(parsed.clouds ?? {}).map((c) => String(c.auth?.password ?? '')).filter((p) => p.length >= 4);
  const found: string[] = [];
  for (const file of files) {
    const text = await readFile(file, 'utf8').catch(() => '');
    if (secrets.some((secret) => text.includes(secret))) found.push(`a clouds.yaml password in ${path.basename(file)}`);
  }
  return found;
}
