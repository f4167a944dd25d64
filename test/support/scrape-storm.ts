/**
 * A scrape storm as its own process (so the storm's CPU does not slow the test process that
 * times the health endpoint meanwhile): `node --import tsx test/support/scrape-storm.ts
 * <port> <path> <count>` opens `count` connections to 127.0.0.1:<port> at once, each asking
 * GET <path> (no keep-alive, each bounded by 60 s; with `STORM_AUTHORIZATION` in the environment,
 * sent as each request's `Authorization` header), and prints one JSON line: answers by status,
 * connection errors by code, and how long the whole storm took.
 */
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** What {@link scrapeStorm} reports. */
export interface StormResult {
  count: number;
  /** Answers by HTTP status. */
  statuses: Record<string, number>;
  /** Requests that got no answer, by error code (ECONNRESET when the server dropped them). */
  errors: Record<string, number>;
  /** From the first request sent to the last answer or error. */
  ms: number;
}

/** Sends `count` concurrent GETs (each with `headers`) and waits for every one to end. */
export async function scrapeStorm(port: number, urlPath: string, count: number, headers: Record<string, string> = {}): Promise<StormResult> {
  const statuses: Record<string, number> = {};
  const errors: Record<string, number> = {};
  const t0 = Date.now();
  await Promise.all(Array.from({ length: count }, () => new Promise<void>((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: urlPath, agent: false, timeout: 60_000, headers }, (res) => {
      res.resume();
      res.on('end', () => {
        statuses[res.statusCode ?? 0] = (statuses[res.statusCode ?? 0] ?? 0) + 1;
        resolve();
      });
      res.on('error', (err: NodeJS.ErrnoException) => {
        errors[err.code ?? err.message] = (errors[err.code ?? err.message] ?? 0) + 1;
        resolve();
      });
    });
    req.on('timeout', () => req.destroy(Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' })));
    req.on('error', (err: NodeJS.ErrnoException) => {
      errors[err.code ?? err.message] = (errors[err.code ?? err.message] ?? 0) + 1;
      resolve();
    });
  })));
  return { count, statuses, errors, ms: Date.now() - t0 };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [port, urlPath, count] = process.argv.slice(2);
  if (!port || !urlPath || !count) {
    process.stderr.write('usage: node --import tsx test/support/scrape-storm.ts <port> <path> <count>\n');
    process.exit(2);
  }
  const authorization = process.env.STORM_AUTHORIZATION;
  const result = await scrapeStorm(Number(port), urlPath, Number(count), authorization ? { Authorization: authorization } : {});
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
