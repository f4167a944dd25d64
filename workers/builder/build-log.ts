/**
 * One log file per build, `<build-log-dir>/<id>.log`, holding DIB's whole output; the
 * newest `retention` logs per diskimage are kept (Nodepool `_getBuildLog`).
 */
import { createWriteStream, type WriteStream } from 'node:fs';
import { mkdir, open, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { IMAGE_ID_RE } from '../../lib/images/image-file.js';

export class BuildLog {
  private constructor(readonly path: string, private readonly stream: WriteStream) {}

  /** Opens (appends to) the log of build `id`, after pruning old logs of its diskimage. */
  static async open(dir: string, id: string, diskimage: string, retention: number): Promise<BuildLog> {
    await mkdir(dir, { recursive: true });
    await pruneLogs(dir, diskimage, Math.max(0, retention - 1));
    const file = path.join(dir, `${id}.log`);
    const stream = createWriteStream(file, { flags: 'a' });
    await new Promise<void>((resolve, reject) => stream.once('open', () => resolve()).once('error', reject));
    return new BuildLog(file, stream);
  }

  /** The writable end that child stdout/stderr are piped into. */
  get writable(): NodeJS.WritableStream {
    return this.stream;
  }

  line(text: string): void {
    this.stream.write(`${new Date().toISOString()} | nodepool-builder | ${text}\n`);
  }

  async close(): Promise<void> {
    if (this.stream.closed) return;
    await new Promise<void>((resolve) => this.stream.end(resolve));
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

/** Keeps the newest `keep` logs of a diskimage (ids sort by sequence), removes the rest. */
async function pruneLogs(dir: string, diskimage: string, keep: number): Promise<void> {
  const ids = (await readdir(dir))
    .filter((n) => n.endsWith('.log'))
    .map((n) => n.slice(0, -4))
    .filter((id) => IMAGE_ID_RE.exec(id)?.[1] === diskimage)
    .sort();
  for (const id of ids.slice(0, Math.max(0, ids.length - keep))) await rm(path.join(dir, `${id}.log`), { force: true });
}
