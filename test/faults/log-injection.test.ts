/**
 * Log injection (issue 31 §5) against a real WebServer with the API routes, a real SQLite store
 * and the process's real root logger (lib/log.ts, pretty and JSON): a URL path with `%0a`, NUL
 * and ESC, sent without a token and with an operator's token, and a hold whose reason carries
 * a line break and a terminal escape, leave no raw control character in any log line, in the
 * stored audit entries or in the node's hold reason; the forged text is still there, escaped.
 */
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { after, describe, it } from 'node:test';
import { waitFor } from '../../lib/lifecycle.js';
import { createRootLogger } from '../../lib/log.js';
import { hasControlChars } from '../../lib/outside-text.js';
import { recordFault } from '../support/fault-report.js';
import { seed, startApiEnv } from '../integration/web/api/api-env.js';

/** Lines a logger wrote to `stream`. */
function collect(stream: PassThrough): () => string[] {
  const chunks: string[] = [];
  stream.on('data', (c: Buffer) => chunks.push(c.toString('utf8')));
  // A record ends with "\n"; whatever else splits it is a forged line.
  return () => chunks.join('').split('\n').filter((l) => l !== '');
}

const FORGED_PATH = '/api/%0aFORGED%1b[31m%00';
const FORGED_NODE_PATH = (id: string): string => `/api/node/${id}%0a2099-01-01T00:00:00Z%20info%20FORGED%1b[2J/hold`;
const FORGED_REASON = 'maintenance\n2099-01-01T00:00:00Z info [web] FORGED admin login\u001b[31m red\u0000';

describe('log injection through the web API', () => {
  for (const format of ['pretty', 'json'] as const) {
    const stream = new PassThrough();
    const lines = collect(stream);
    const log = createRootLogger({ level: 'debug', format, stream });
    let close: (() => Promise<void>) | undefined;
    after(async () => close?.());

    it(`writes no raw control character into the ${format} log, the audit entries or a hold reason`, async () => {
      const env = await startApiEnv({ log });
      close = () => env.close();
      const s = await seed(env.store);
      const op = await env.token('operator');
      const answers = [
        await env.call('GET', FORGED_PATH),
        await env.call('POST', FORGED_PATH, { body: {} }),
        await env.call('POST', FORGED_PATH, { token: op, body: {} }),
        await env.call('POST', FORGED_NODE_PATH(s.node.id), { body: {} }),
        await env.call('POST', FORGED_NODE_PATH(s.node.id), { token: op, body: { reason: 'x' } }),
      ];
      const held = await env.call('POST', `/api/node/${s.node.id}/hold`, { token: op, body: { reason: FORGED_REASON } });
      assert.equal(held.status, 200, JSON.stringify(held.json));
      // Each request's line is written when its answer is sent; wait for the hold's, the last.
      // The hold's line is written once its answer is on its way: wait for it, the last of the run.
      await waitFor(() => lines().some((l) => l.includes(`Node ${s.node.id} held`)), { timeoutMs: 30_000, what: 'the hold logged' });

      const node = await env.store.getNode(s.node.id);
      const audit = await env.store.listAudit({ limit: 100 });
      const logLines = lines();
      const raw = [
        ...logLines.filter(hasControlChars).map((l) => `log: ${JSON.stringify(l)}`),
        ...logLines.filter((l) => /^(2099|FORGED)/.test(l)).map((l) => `forged log line: ${JSON.stringify(l)}`),
        ...audit.filter((e) => [e.target, e.message, e.path, e.user].some((v) => typeof v === 'string' && hasControlChars(v))).map((e) => `audit: ${JSON.stringify(e)}`),
        ...(node?.holdReason && hasControlChars(node.holdReason) ? [`hold reason: ${JSON.stringify(node.holdReason)}`] : []),
        ...(typeof held.json.message === 'string' && hasControlChars(held.json.message) ? [`answer: ${JSON.stringify(held.json.message)}`] : []),
      ];
      recordFault({
        scenario: `log injection (web path, hold reason; ${format} log)`, runs: answers.length + 1, recovered: raw.length === 0 ? answers.length + 1 : 0, lost: 0, leaked: raw.length, recoverMs: null,
        notes: `${answers.length} requests with %0a/%1b/%00 in the path (statuses ${answers.map((a) => a.status).join(', ')}) and a hold whose reason holds \\n, ESC and NUL; `
          + `${logLines.length} log lines, ${audit.length} audit entries and the hold reason checked: ${raw.length} with a raw control character or a forged line`,
      });
      assert.deepEqual(raw, []);
      // The text is kept, escaped: the operator still reads what was sent.
      assert.equal(node?.holdReason, 'maintenance\\n2099-01-01T00:00:00Z info [web] FORGED admin login\\x1b[31m red\\x00');
      const holdEntry = audit.find((e) => e.action === 'hold' && e.result === 'ok');
      assert.ok(holdEntry, JSON.stringify(audit));
      assert.ok(logLines.some((l) => l.includes('FORGED') && l.includes('\\n')), 'the log keeps the forged text, escaped');
    });
  }
});
