/**
 * A real headless Chromium (Debian's `chromium`) driven over the DevTools protocol on a pipe
 * (`--remote-debugging-pipe`: JSON messages ended by NUL on fds 3 and 4, no WebSocket client
 * needed): open a page, read its text, take a screenshot, close.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';

/** Where Debian's package puts it. */
export const CHROMIUM = '/usr/bin/chromium';

interface Pending {
  resolve: (v: Record<string, unknown>) => void;
  reject: (e: Error) => void;
}

export class HeadlessChromium {
  private seq = 0;
  private readonly pending = new Map<number, Pending>();
  private buffer = '';
  private readonly exited: Promise<void>;

  private constructor(private readonly child: ChildProcess, private readonly profile: string) {
    const out = child.stdio[4] as Readable;
    out.setEncoding('utf8');
    out.on('data', (chunk: string) => this.read(chunk));
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    void this.exited.then(() => {
      for (const p of this.pending.values()) p.reject(new Error('chromium exited'));
      this.pending.clear();
    });
  }

  /** Starts the browser with an empty profile in a temp dir. */
  static async start(): Promise<HeadlessChromium> {
    const profile = await mkdtemp(path.join(os.tmpdir(), 'nodepool-chromium-'));
    const child = spawn(CHROMIUM, [
      '--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--no-default-browser-check',
      '--disable-extensions', '--remote-debugging-pipe', `--user-data-dir=${profile}`, '--window-size=1280,1000', 'about:blank',
    ], { stdio: ['ignore', 'ignore', 'ignore', 'pipe', 'pipe'], detached: true });
    return new HeadlessChromium(child, profile);
  }

  /** Sends one DevTools command (to a page when `sessionId` is given); rejects on a protocol error or after 30 s. */
  send(method: string, params: Record<string, unknown> = {}, sessionId?: string): Promise<Record<string, unknown>> {
    const id = ++this.seq;
    const msg = JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) });
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`chromium did not answer ${method} within 30 s`));
      }, 30_000);
      this.pending.set(id, {
        resolve: (v) => { clearTimeout(timer); resolve(v); },
        reject: (e) => { clearTimeout(timer); reject(e); },
      });
      (this.child.stdio[3] as Writable).write(`${msg}\0`);
    });
  }

  /** Opens `url` in a new tab; returns the tab's session id. */
  async open(url: string): Promise<string> {
    const { targetId } = await this.send('Target.createTarget', { url }) as { targetId: string };
    const { sessionId } = await this.send('Target.attachToTarget', { targetId, flatten: true }) as { sessionId: string };
    return sessionId;
  }

  /** The value of a JavaScript expression in the tab. */
  async evaluate<T>(sessionId: string, expression: string): Promise<T> {
    const r = await this.send('Runtime.evaluate', { expression, returnByValue: true }, sessionId) as { result: { value: T } };
    return r.result.value;
  }

  /** A PNG of the whole page. */
  async screenshot(sessionId: string): Promise<Buffer> {
    const { data } = await this.send('Page.captureScreenshot', { format: 'png', captureBeyondViewport: true }, sessionId) as { data: string };
    return Buffer.from(data, 'base64');
  }

  /** Closes the browser (its whole process group if it does not go) and removes the profile. */
  async close(): Promise<void> {
    await this.send('Browser.close').catch(() => undefined);
    const timer = setTimeout(() => {
      try {
        process.kill(-(this.child.pid as number), 'SIGKILL');
      } catch { /* gone */ }
    }, 5000);
    await this.exited;
    clearTimeout(timer);
    await rm(this.profile, { recursive: true, force: true });
  }

  private read(chunk: string): void {
    this.buffer += chunk;
    let end: number;
    while ((end = this.buffer.indexOf('\0')) >= 0) {
      const raw = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 1);
      const msg = JSON.parse(raw) as { id?: number; result?: Record<string, unknown>; error?: { message: string } };
      if (msg.id === undefined) continue; // an event
      const p = this.pending.get(msg.id);
      this.pending.delete(msg.id);
      if (msg.error) p?.reject(new Error(msg.error.message));
      else p?.resolve(msg.result ?? {});
    }
  }
}
