/**
 * A queue of test files that the test runner's lanes (test/run.ts) take one at a time:
 * whichever lane is free takes the next file, at most `maxAtOnce` at once, each once what it
 * needs is ready. Running a file is injected (`run`), so the queue itself has unit tests.
 */

/** What a queue reports once its last file has ended. */
export interface FileQueueSummary {
  /** When its first file started (ms since the epoch; 0 if none ran). */
  firstMs: number;
  files: number;
  /** The most of its files that ran at once. */
  most: number;
}

/** How a {@link FileQueue} runs its files. */
export interface FileQueueOptions {
  /** Resolves when `file` can run, with the error that stops it (a cloud that failed to start), if any. */
  ready: (file: string) => Promise<Error | undefined>;
  /** Runs `file`; resolves with its exit code. */
  run: (file: string) => Promise<number>;
  /** Reports `file` as not run because of `err`; returns its exit code. */
  notRun: (file: string, err: Error) => number;
  /** At most this many files at once (default: as many as lanes drain it). */
  maxAtOnce?: number;
  /** Called once, when the last file has ended. */
  onEnd?: (summary: FileQueueSummary) => void;
}

export class FileQueue {
  private readonly left: string[];
  private running = 0;
  private most = 0;
  private ended = 0;
  private firstMs = 0;
  private slotFreed: Array<() => void> = [];

  constructor(private readonly files: readonly string[], private readonly opts: FileQueueOptions) {
    this.left = [...files];
  }

  /** Files not yet taken. */
  get waiting(): number {
    return this.left.length;
  }

  /** Takes files one at a time until none is left; resolves with the worst exit code of those this lane ran. */
  async drain(): Promise<number> {
    let code = 0;
    while (this.left.length) {
      if (this.running >= (this.opts.maxAtOnce ?? Infinity)) {
        await new Promise<void>((resolve) => this.slotFreed.push(resolve));
        continue;
      }
      const file = this.left.shift() as string;
      this.running++;
      this.most = Math.max(this.most, this.running);
      try {
        const failed = await this.opts.ready(file);
        this.firstMs ||= Date.now();
        code = Math.max(code, failed ? this.opts.notRun(file, failed) : await this.opts.run(file));
      } catch {
        code = Math.max(code, 1);
      } finally {
        this.running--;
        if (++this.ended === this.files.length) this.opts.onEnd?.({ firstMs: this.firstMs, files: this.files.length, most: this.most });
        for (const wake of this.slotFreed.splice(0)) wake();
      }
    }
    return code;
  }
}
