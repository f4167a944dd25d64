/**
 * A node:test reporter the test runner (test/run.ts) adds beside the usual one: one JSON line
 * per top-level test or suite that ends (its file, name, duration, outcome), so the runner can
 * print the slowest files last, where a CI log's tail shows them; and one line per failing test
 * at any depth (`failed: true`, with the first lines of its error), which the runner prints
 * after everything else, so a red CI's tail names what failed. Plain JavaScript: the test
 * runner loads reporters before `--import tsx` can compile TypeScript for it.
 */

/** C0 control characters and DEL as `\uXXXX`, so they are shown, not sent to the terminal. */
function escapeControls(text) {
  return [...text].map((c) => {
    const code = c.charCodeAt(0);
    return code < 0x20 || code === 0x7f ? `\\u${code.toString(16).padStart(4, '0')}` : c;
  }).join('');
}

/** The first lines of a failure's cause (node:test wraps it), at most 600 characters, control characters escaped. */
function firstLines(error) {
  const cause = error && typeof error === 'object' && 'cause' in error && error.cause ? error.cause : error;
  const text = cause instanceof Error ? cause.message : String(cause ?? 'failed');
  // A server's escape codes in a quoted log line are shown, not sent to the terminal.
  return escapeControls(text.split('\n').filter((l) => l.trim()).slice(0, 4).join(' | ').slice(0, 600));
}

/** Failures that only echo another: a suite whose tests failed, a test cancelled because its parent ended. */
const QUIET_FAILURES = new Set(['subtestsFailed', 'cancelledByParent']);

/** @param {AsyncIterable<{type: string, data?: {name?: string, nesting?: number, file?: string, details?: {duration_ms?: number, error?: unknown}}}>} source */
export default async function* durationReporter(source) {
  for await (const ev of source) {
    if (ev.type !== 'test:pass' && ev.type !== 'test:fail') continue;
    const d = ev.data;
    if (!d || !d.file) continue;
    if (ev.type === 'test:fail' && !QUIET_FAILURES.has(d.details?.error?.failureType)) {
      yield `${JSON.stringify({ failed: true, file: d.file, name: d.name, nesting: d.nesting, error: firstLines(d.details?.error) })}\n`;
    }
    if (d.nesting !== 0) continue;
    yield `${JSON.stringify({ file: d.file, name: d.name, ms: Math.round(d.details?.duration_ms ?? 0), ok: ev.type === 'test:pass' })}\n`;
  }
}
