/**
 * A build's log token on the builder (issue 31 §9): the server makes one per build record and
 * sends it with the `image-build` job (`log-token`); the builder keeps it in
 * `<build-log-dir>/<build-id>.token` (mode 0600), written as the build's log is opened and pruned
 * with it, so a failed build's log (whose image files and sidecar are removed) and every log
 * after a builder restart is still answered to its token. The port answers a build's log only
 * to `Authorization: Bearer <that token>`, compared in constant time; a build without a token
 * file (built before log tokens, or for a server that sends none) is answered to no one.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { LOG_TOKEN_RE } from '../../lib/http/build-log-protocol.js';

/** The file name suffix of log tokens in build-log-dir. */
export const LOG_TOKEN_SUFFIX = '.token';

/** `<dir>/<id>.token`; `id` must be a validated build id. */
export function logTokenPath(dir: string, id: string): string {
  return path.join(dir, `${id}${LOG_TOKEN_SUFFIX}`);
}

/**
 * Keeps `token` as build `id`'s log token (atomically, mode 0600); without one, removes any
 * token an earlier attempt at the id left, so its log is answered to no one.
 */
export async function writeLogToken(dir: string, id: string, token: string | undefined): Promise<void> {
  const file = logTokenPath(dir, id);
  if (token === undefined) {
    await rm(file, { force: true });
    return;
  }
  const tmp = `${file}.tmp`;
  await writeFile(tmp, `${token}\n`, { mode: 0o600 });
  await rename(tmp, file);
}

/** Build `id`'s log token, or undefined when there is none (or it is not one). */
export async function readLogToken(dir: string, id: string): Promise<string | undefined> {
  let text: string;
  try {
    text = (await readFile(logTokenPath(dir, id), 'utf8')).trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  return LOG_TOKEN_RE.test(text) ? text : undefined;
}

/**
 * Whether `authorization` is `Bearer <expected>`. Both sides are hashed first, so the comparison
 * (crypto.timingSafeEqual) takes the same time whatever was sent and however long it is.
 */
export function bearerMatches(expected: string, authorization: string | undefined): boolean {
  const m = /^Bearer +(\S+) *$/i.exec(authorization ?? '');
  const given = createHash('sha256').update(m?.[1] ?? '').digest();
  const want = createHash('sha256').update(expected).digest();
  return timingSafeEqual(given, want) && m !== null;
}
