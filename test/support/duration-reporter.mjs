/**
 * A node:test reporter the test runner (test/run.ts) adds beside the usual one: one JSON line
 * per top-level test or suite that ends (its file, name, duration, outcome), so the runner can
 * print the slowest files last, where a CI log's tail shows them. Plain JavaScript: the test
 * runner loads reporters before `--import tsx` can compile TypeScript for it.
 */

/** @param {AsyncIterable<{type: string, data?: {name?: string, nesting?: number, file?: string, details?: {duration_ms?: number}}}>} source */
export default async function* durationReporter(source) {
  for await (const ev of source) {
    if (ev.type !== 'test:pass' && ev.type !== 'test:fail') continue;
    const d = ev.data;
    if (!d || d.nesting !== 0 || !d.file) continue;
    yield `${JSON.stringify({ file: d.file, name: d.name, ms: Math.round(d.details?.duration_ms ?? 0), ok: ev.type === 'test:pass' })}\n`;
  }
}
