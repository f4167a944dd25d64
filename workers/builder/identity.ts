/**
 * The builder's persistent id, kept in `<images-dir>/builder_id.txt` (as Nodepool 3 does), so
 * the server can tell which builder holds which files across restarts.
 */
import { randomUUID } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

const ID_RE = /^[0-9a-f-]{36}$/;

export async function builderIdentity(imagesDir: string): Promise<string> {
  const file = path.join(imagesDir, 'builder_id.txt');
  try {
    const id = (await readFile(file, 'utf8')).trim();
    if (ID_RE.test(id)) return id;
  } catch {
    // first start: create it below
  }
  const id = randomUUID();
  await writeFile(file, id + '\n');
  return id;
}
