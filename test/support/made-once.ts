/**
 * Test support: make a cached file once per machine although several test processes want it at
 * the same time. The first takes a lock directory (holding its pid) and makes the file; the
 * others poll until it exists; a lock whose holder died is taken over.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pollUntil } from '../../lib/lifecycle.js';

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Resolves true once `file` exists, having run `make` under `lock` when no one had made it; true
 * from `make` means this call made it. False when another holder did not finish within
 * `timeoutMs`. What `make` throws is thrown (polling ends: a failure is not retried here).
 */
export async function madeOnce(file: string, lock: string, make: () => Promise<void>, timeoutMs: number): Promise<{ ready: boolean; made: boolean }> {
  let made = false;
  const ready = await pollUntil(async () => {
    if (existsSync(file)) return true;
    try {
      await mkdir(lock);
    } catch {
      const holder = Number(await readFile(path.join(lock, 'pid'), 'utf8').catch(() => '0'));
      if (holder && !pidAlive(holder)) await rm(lock, { recursive: true, force: true }); // its maker was killed
      return undefined;
    }
    try {
      await writeFile(path.join(lock, 'pid'), String(process.pid));
      if (!existsSync(file)) {
        await make();
        made = true;
      }
      return true;
    } finally {
      await rm(lock, { recursive: true, force: true });
    }
  }, { timeoutMs, intervalMs: 2000 });
  return { ready: ready === true, made };
}
