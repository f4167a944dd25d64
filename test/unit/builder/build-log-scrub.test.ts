/**
 * The build log's scrubbing (workers/builder/build-log.ts): DIB's output reaches the file a
 * whole line at a time with every known secret replaced, also when a secret or a UTF-8
 * character is split between two chunks, and the log file on disk never holds the secret.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { REDACTED, SecretRegistry, processSecrets } from '../../../lib/redact.js';
import { BuildLog, ScrubbedLines } from '../../../workers/builder/build-log.js';

const SECRET = 'dib-mirror-password-3f9a';

async function through(chunks: Array<string | Buffer>, secrets: SecretRegistry): Promise<string> {
  const t = new ScrubbedLines(secrets);
  const out: Buffer[] = [];
  t.on('data', (c: Buffer | string) => out.push(Buffer.from(c)));
  for (const c of chunks) t.write(c);
  t.end();
  await new Promise((resolve) => t.once('end', resolve));
  return Buffer.concat(out).toString('utf8');
}

void describe('build log scrubbing', () => {
  const secrets = new SecretRegistry();
  secrets.add(SECRET);

  void it('replaces a secret split between two chunks, and a last line without a newline', async () => {
    const text = await through([`export DIB_PASS=${SECRET.slice(0, 7)}`, `${SECRET.slice(7)}\nnext line\nlast `, `${SECRET}`], secrets);
    assert.equal(text, `export DIB_PASS=${REDACTED}\nnext line\nlast ${REDACTED}`);
  });

  void it('keeps a UTF-8 character split between chunks whole', async () => {
    const bytes = Buffer.from('größe ✓\n', 'utf8');
    assert.equal(await through([bytes.subarray(0, 3), bytes.subarray(3, 9), bytes.subarray(9)], secrets), 'größe ✓\n');
  });

  void it('passes a very long line on in parts', async () => {
    const long = 'x'.repeat(70 * 1024);
    assert.equal(await through([long, long, '\n'], secrets), `${long}${long}\n`);
  });

  void it('never writes a secret the process knows to the log file', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'nodepool-build-log-'));
    processSecrets.add(SECRET);
    try {
      const log = await BuildLog.open(dir, 'deb-0000000001', 'deb', 7);
      log.writable.write(`+ export DIB_PASS=${SECRET.slice(0, 4)}`);
      log.writable.write(`${SECRET.slice(4)}\n`);
      log.line(`using ${SECRET}`);
      await log.close();
      const text = await readFile(log.path, 'utf8');
      assert.ok(!text.includes(SECRET), text);
      assert.match(text, new RegExp(`DIB_PASS=${REDACTED}\\n.*using ${REDACTED}\\n$`));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
