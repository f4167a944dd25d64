/**
 * One log file per build, `<build-log-dir>/<id>.log`, holding DIB's whole output with every
 * secret the process knows (the secure file's env-vars, the config's substituted secrets)
 * replaced, line by line, before it reaches the file: the builder serves its logs over HTTP
 * (build-log-http.ts). The newest `retention` logs per diskimage are kept (Nodepool
 * `_getBuildLog`).
 */
import { createWriteStream, type WriteStream } from 'node:fs';
import { mkdir, open, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { Transform, type TransformCallback } from 'node:stream';
import { finished } from 'node:stream/promises';
import { StringDecoder } from 'node:string_decoder';
import { IMAGE_ID_RE } from '../../lib/images/image-file.js';
import { processSecrets, type SecretRegistry } from '../../lib/redact.js';
import { LOG_TOKEN_SUFFIX, logTokenPath, writeLogToken } from './log-token.js';

/** A line longer than this is scrubbed and written in parts. */
const MAX_PENDING_CHARS = 64 * 1024;

/** Passes text on a whole line at a time (so no secret is split between two scrubs), each secret replaced. */
export class ScrubbedLines extends Transform {
  private pending = '';
  private readonly decoder = new StringDecoder('utf8');

  constructor(private readonly secrets: SecretRegistry = processSecrets) {
    super();
  }

  override _transform(chunk: Buffer | string, _encoding: BufferEncoding, done: TransformCallback): void {
    const text = this.pending + (typeof chunk === 'string' ? chunk : this.decoder.write(chunk));
    const cut = text.lastIndexOf('\n') + 1;
    const whole = text.length - cut > MAX_PENDING_CHARS ? text.length : cut;
    this.pending = text.slice(whole);
    done(null, whole > 0 ? this.secrets.scrub(text.slice(0, whole)) : undefined);
  }

  override _flush(done: TransformCallback): void {
    const rest = this.pending + this.decoder.end();
    done(null, rest ? this.secrets.scrub(rest) : undefined);
  }
}

export class BuildLog {
  private readonly input = new ScrubbedLines();

  private constructor(readonly path: string, private readonly stream: WriteStream) {
    this.input.pipe(stream);
  }

  /**
   * Opens (appends to) the log of build `id`, after pruning old logs of its diskimage. With
   * `logToken` (the build job's `log-token`), its port answers the log to that token only;
   * without one, to no one (log-token.ts).
   */
  static async open(dir: string, id: string, diskimage: string, retention: number, logToken?: string): Promise<BuildLog> {
    await mkdir(dir, { recursive: true });
    await pruneLogs(dir, diskimage, Math.max(0, retention - 1));
    // Before the log exists, so it is never answered to a token of an earlier attempt at the id.
    await writeLogToken(dir, id, logToken);
    const file = path.join(dir, `${id}.log`);
    const stream = createWriteStream(file, { flags: 'a' });
    await new Promise<void>((resolve, reject) => stream.once('open', () => resolve()).once('error', reject));
    return new BuildLog(file, stream);
  }

  /** The writable end that child stdout/stderr are piped into (scrubbed on the way to the file). */
  get writable(): NodeJS.WritableStream {
    return this.input;
  }

  line(text: string): void {
    this.input.write(`${new Date().toISOString()} | nodepool-builder | ${text}\n`);
  }

  /** Writes what is pending and closes the file. */
  async close(): Promise<void> {
    if (this.stream.closed) return;
    this.input.end();
    await finished(this.stream);
  }

  /** The last `maxBytes` of the log, for failure messages. */
  async tail(maxBytes = 2000): Promise<string> {
    const fh = await open(this.path, 'r');
    try {
      const { size } = await fh.stat();
      const len = Math.min(size, maxBytes);
      const buf = Buffer.alloc(len);
      await fh.read(buf, 0, len, size - len);
      return buf.toString('utf8');
    } finally {
      await fh.close();
    }
  }
}

/** Keeps the newest `keep` logs of a diskimage (ids sort by sequence) with their log tokens, removes the rest. */
async function pruneLogs(dir: string, diskimage: string, keep: number): Promise<void> {
  const ids = [...new Set((await readdir(dir)).flatMap((n) => {
    if (n.endsWith('.log')) return [n.slice(0, -'.log'.length)];
    if (n.endsWith(LOG_TOKEN_SUFFIX)) return [n.slice(0, -LOG_TOKEN_SUFFIX.length)];
    return [];
  }))]
    .filter((id) => IMAGE_ID_RE.exec(id)?.[1] === diskimage)
    .sort();
  for (const id of ids.slice(0, Math.max(0, ids.length - keep))) {
    await rm(path.join(dir, `${id}.log`), { force: true });
    await rm(logTokenPath(dir, id), { force: true });
  }
}
